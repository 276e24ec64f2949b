"""Weights by part in their checkpoint formats: the bits a value costs with its scales, the checkpoints' published
sizes, the share a mixture of experts reads per token, and the plans they change."""

import math

import pytest

from core.arch.config import AttentionConfig
from core.arch.presets import find_preset
from core.plan.fit import CHECKPOINT, PlanInput, plan
from core.plan.gpus import find_gpu
from core.plan.report import plan_inputs, plan_json
from core.plan.weights import WEIGHT_FORMATS, WeightParts


def parts_of(key: str) -> WeightParts:
    return WeightParts.from_json(find_preset(key).weights)


def test_bits_a_value_with_its_scales():
    assert WEIGHT_FORMATS["mxfp4"].bits == 4 + 8 / 32 == 4.25  # 4-bit values, one 8-bit scale per 32
    assert WEIGHT_FORMATS["nvfp4"].bits == 4 + 8 / 16  # one fp8 scale per 16
    assert WEIGHT_FORMATS["fp8_block128"].bits == 8 + 32 / 16384  # one fp32 scale per 128 x 128 block
    assert WEIGHT_FORMATS["int4_g128"].bits == 4 + 20 / 128  # an fp16 scale and a 4-bit zero per group of 128
    assert WEIGHT_FORMATS["bf16"].bits == 16


@pytest.mark.parametrize(("key", "published_gib"), [("gpt-oss-20b", 12.8), ("gpt-oss-120b", 60.8)])
def test_gpt_oss_checkpoints_within_two_percent_of_their_published_sizes(key, published_gib):
    w = parts_of(key)
    experts = dict(w.params)["experts"]
    # the experts in MXFP4, every other part in bf16
    assert w.total_bytes() == math.ceil(experts * 4.25 / 8) + sum(
        math.ceil(n * 2) for p, n in w.params if p != "experts")
    assert w.total_bytes() / 2**30 == pytest.approx(published_gib, rel=0.02)
    assert w.checkpoint_bytes == round(published_gib * 2**30)
    # one precision for every weight under-counts (MXFP4 for all) or more than triples it (bf16 for all)
    assert w.in_format("mxfp4").total_bytes() < 0.97 * w.total_bytes() < w.in_format("bf16").total_bytes() / 3


def test_fp8_checkpoints_carry_their_block_scales_and_bf16_embeddings():
    w = parts_of("deepseek-v3")
    by_part, parts = w.bytes_by_part(), dict(w.params)
    assert by_part["experts"] == math.ceil(parts["experts"] * (1 + 4 / 16384))
    assert by_part["embeddings"] == parts["embeddings"] * 2
    q = parts_of("qwen3-235b-a22b-fp8")
    assert dict(q.formats)["dense_mlp"] == "bf16"  # its routers stay in bf16
    fp8 = sum(n for p, n in q.params if dict(q.formats)[p] == "fp8_block128")
    assert fp8 == 6_702_521_856 + 227_096_395_776  # the attention and the routed experts
    assert q.total_bytes() == math.ceil(6_702_521_856 * (1 + 4 / 16384)) + math.ceil(
        227_096_395_776 * (1 + 4 / 16384)) + 2 * (q.total - fp8)  # 236.4 GB


def test_a_mixture_of_experts_reads_its_active_experts_share():
    w = parts_of("gpt-oss-120b")
    others = w.total - dict(w.params)["experts"]
    active = others + dict(w.params)["experts"] // 32  # 4 of 128 experts
    read = w.active_bytes(active)
    by_part = w.bytes_by_part()
    assert read == w.total_bytes() - by_part["experts"] + math.ceil(by_part["experts"] / 32)
    assert w.active_bytes(None) == w.total_bytes()


def test_gpt_oss_120b_on_one_h100_as_its_checkpoint_loads():
    preset = find_preset("gpt-oss-120b")
    cfg = preset.apply(AttentionConfig(seq_len=131072, dtype="bfloat16"))
    weights = parts_of("gpt-oss-120b")
    p = plan_inputs(cfg, preset.params, find_gpu("h100-sxm"), 1, 1, CHECKPOINT, "bfloat16", 1, 131072, 0.1, "causal",
                    preset.active_params, weights=weights)
    j = plan_json(p, cfg)
    assert j["per_gpu"]["weights"] == weights.total_bytes() == 65_190_340_224  # 60.7 GiB, not bf16's 217.6 GiB
    # 18 global layers keep 131,072 tokens, 18 local ones 128: 8 KV heads x 64 x 2 x 2 bytes each
    assert j["per_gpu"]["kv_cache"] == 8 * 64 * 2 * 2 * (18 * 131072 + 18 * 128)
    assert j["fits"] and j["weights"]["mode"] == CHECKPOINT and j["weights"]["parts"]["experts"]["format"] == "mxfp4"
    uniform = plan(PlanInput(cfg.architecture(), preset.params, find_gpu("h100-sxm"), weights_dtype="bf16",
                             context=131072, weights=weights))
    assert not uniform.fits  # all-bf16 weights do not fit one H100 at all


def test_the_checkpoint_mode_needs_the_model_s_parts_and_its_own_count():
    cfg = find_preset("llama-3-8b").apply(AttentionConfig())
    with pytest.raises(ValueError, match="checkpoint formats are not known"):
        PlanInput(cfg.architecture(), 8_030_261_248, find_gpu("h100-sxm"), weights_dtype=CHECKPOINT)
    oss = find_preset("gpt-oss-20b")
    with pytest.raises(ValueError, match="parts hold 20,914,757,184 parameters"):
        PlanInput(oss.apply(cfg).architecture(), 21_000_000_000, find_gpu("h100-sxm"), weights_dtype=CHECKPOINT,
                  weights=parts_of("gpt-oss-20b"))
    with pytest.raises(ValueError, match="weight format"):
        WeightParts((("experts", 10),), (("experts", "fp3"),))
