"""MLA's counts against independent references: FlopCounterMode over our own modules (both forms, prefill
and decode, SDPA on the math path so it is counted), the DeepSeek-V2 paper's 2.25 groups, and the decode
intensities computed by hand; and MLA's bad inputs, each a sentence."""

from __future__ import annotations

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.arch.presets import find_preset
from core.counts import flop_counts, kv_cache_bytes, layer_flop_counts, param_counts
from core.kinds.mla.counts import decode_intensity, equivalent_gqa_heads
from core.kinds.mla.layer import MLALayer
from core.kinds.mla.spec import MLADims
from core.report import build_report

DIMS = [MLADims(24, 32, 8, 4, 6), MLADims(0, 16, 8, 8, 8), MLADims(40, 64, 16, 8, 12)]


def counted(layer: MLALayer, cfg: AttentionConfig, form: str) -> int:
    B, T, d = cfg.batch_size, cfg.seq_len, cfg.d_model
    with torch.no_grad(), sdpa_kernel([SDPBackend.MATH]), FlopCounterMode(display=False) as fc:
        if cfg.phase == "prefill":
            layer(torch.randn(B, T, d), form=form)
        elif form == "naive":
            c, pe = layer.latent(torch.randn(B, T, d))
            k, v = layer.decompress(c, pe)
            fc.get_total_flops()  # the cache's own making is not the step: count from here
            with FlopCounterMode(display=False) as step:
                layer.decode_naive(torch.randn(B, 1, d), k, v)
            return step.get_total_flops()
        else:
            c, pe = layer.latent(torch.randn(B, T, d))
            with FlopCounterMode(display=False) as step:
                layer.decode_absorbed(torch.randn(B, 1, d), c, pe)
            return step.get_total_flops()
    return fc.get_total_flops()


@pytest.mark.parametrize("dims", DIMS)
@pytest.mark.parametrize("phase", ["prefill", "decode"])
@pytest.mark.parametrize("form", ["naive", "absorbed"])
def test_flops_of_both_forms_equal_flop_counter_mode(dims, phase, form):
    # Non-causal: the math path scores every pair, as our non-causal count does.
    cfg = AttentionConfig(d_model=64, n_heads=4, widths=dims, seq_len=10, batch_size=2, phase=phase)
    layer = MLALayer(cfg)
    assert layer_flop_counts(cfg.d_model, cfg.layer_spec(), cfg, form).total == counted(layer, cfg, form)


def test_the_default_form_is_naive_for_prefill_and_absorbed_for_decode():
    cfg = AttentionConfig(d_model=64, n_heads=4, widths=DIMS[0], seq_len=10)
    spec = cfg.layer_spec()
    assert flop_counts(cfg) == layer_flop_counts(64, spec, cfg, "naive")
    dec = cfg.with_(phase="decode")
    assert flop_counts(dec) == layer_flop_counts(64, spec, dec, "absorbed")
    assert build_report(dec)["mla"]["flops_form"] == "absorbed"


def test_causal_prefill_halves_the_core_of_both_forms():
    cfg = AttentionConfig(d_model=64, n_heads=4, widths=DIMS[0], seq_len=64, causal=True)
    full = cfg.with_(causal=False)
    for form in ("naive", "absorbed"):
        causal_core = layer_flop_counts(64, cfg.layer_spec(), cfg, form).attention
        full_core = layer_flop_counts(64, full.layer_spec(), full, form).attention
        assert causal_core * 2 == full_core  # causal_pairs_x2(T) = T^2, FlashAttention's convention


def test_deepseek_v3_latent_is_2_25_gqa_groups_and_its_absorbed_decode_is_above_the_h200_ridge():
    cfg = find_preset("deepseek-v3").apply(AttentionConfig(dtype="bfloat16", seq_len=4096))
    spec = cfg.layer_spec()
    assert equivalent_gqa_heads(spec) == 2.25  # DeepSeek-V2 paper: (d_c + d_h^R) / (2 d_h) = 576 / 256
    # by hand: naive reads H (n + r + v) values a key and does 2 H (n + r + v) FLOPs: 1 FLOP a byte in bf16
    assert decode_intensity(spec, 4096, 1, "bfloat16", "naive") == 1.0
    # absorbed: 2 H (2 r_kv + r) FLOPs a key over (r_kv + r) x 2 bytes = 128 x 1088 / 576
    assert decode_intensity(spec, 4096, 1, "bfloat16", "absorbed") == pytest.approx(128 * 1088 / 576)
    assert decode_intensity(spec, 4096, 1, "bfloat16", "absorbed") > 206
    report = build_report(cfg)
    kv = report["kv_cache"]
    assert kv["bytes_per_token_per_layer_latent"] == 1152 and kv["bytes_per_token_per_layer_decompressed"] == 81920
    assert kv["bytes_total"] == 1152 * 61 * 4096
    assert kv["bytes_total_decompressed"] == 81920 * 61 * 4096
    # against MHA of its 128 heads of width 128: 2 x 128 x 128 x 2 bytes a layer
    assert kv_cache_bytes(cfg).bytes_total_mha == 2 * 128 * 128 * 2 * 61 * 4096
    assert report["params"]["total_mha"] == 4 * 7168 * 128 * 128


def test_an_mla_config_round_trips_and_reads_as_mla():
    cfg = find_preset("deepseek-v2-lite").apply(AttentionConfig())
    again = AttentionConfig.from_dict(cfg.to_dict())
    assert again == cfg and again.mode == "MLA" and again.mode_label == "MLA (latent 512 + rope 64)"
    assert again.kv_heads == 16 and again.head_dim == 192
    assert "q" in param_counts(cfg).to_dict() and "q_a" not in param_counts(cfg).to_dict()
    assert LayerSpec.from_dict(cfg.layer_spec().to_dict()) == cfg.layer_spec()
    # a standard preset after an MLA one is standard again
    assert find_preset("llama-3-8b").apply(cfg).widths is None


@pytest.mark.parametrize(("fields", "words"), [
    (dict(kv_lora_rank=0), "kv_lora_rank must be a whole number from 1"),
    (dict(qk_rope_head_dim=63), "must be even"),
    (dict(v_head_dim=-1), "v_head_dim must be"),
    (dict(q_lora_rank=2**40), "q_lora_rank must be"),
    (dict(qk_nope_head_dim=True), "qk_nope_head_dim must be"),
])
def test_bad_mla_widths_are_refused_with_a_sentence(fields, words):
    with pytest.raises(ValueError, match=words):
        MLADims(**fields)


def test_mla_refuses_the_standard_layer_extras_and_warns_of_ranks_that_compress_nothing():
    with pytest.raises(ValueError, match="turn off the sliding window"):
        AttentionConfig(d_model=64, n_heads=4, widths=DIMS[0], window=8, layer_pattern="local", causal=True)
    with pytest.raises(ValueError, match="turn off sinks"):
        AttentionConfig(d_model=64, n_heads=4, widths=DIMS[0], sinks=True)
    with pytest.raises(ValueError, match="unknown MLA field"):
        AttentionConfig.from_dict({"mla": {"rank": 3}})
    cfg = AttentionConfig(d_model=64, n_heads=4, widths=MLADims(128, 64, 8, 4, 6))
    notes = cfg.head_dim_warnings()
    assert any("q_lora_rank 128 is not below d_model 64" in n for n in notes)
    assert any("kv_lora_rank 64 is not below d_model 64" in n for n in notes)


def test_the_latent_vs_grouped_lesson_compares_mla_with_gqa_2_and_reads_measured_times():
    from core.study.lessons import find_lesson
    from core.study.sweep import SweepResult, plan_sweep, run_point

    lesson = find_lesson("latent")
    base = lesson.base_config(AttentionConfig(dtype="bfloat16"))
    fake = {"median_ms": 1.0, "p25_ms": 1.0, "p75_ms": 1.0, "tflops": 1.0, "core_median_ms": 1.0, "core_tflops": 1.0,
            "prefill_ms": 10.0, "decode_ms": 2.0, "device": "cpu"}

    def timing(cfg):
        if cfg.widths is None:
            return fake
        return {**fake, "prefill_ms": 8.0, "decode_ms": 1.5, "mla_forms": {"naive_prefill_ms": 8.0, "absorbed_prefill_ms": 9.0,
                                                          "naive_decode_ms": 3.0, "absorbed_decode_ms": 1.5}}

    result = SweepResult(lesson.knob, [run_point(p, timing) for p in plan_sweep(base, lesson.knob, lesson.values)])
    text = lesson.caption(result)
    gqa = find_preset("deepseek-v3").apply(AttentionConfig(dtype="bfloat16", seq_len=512)).with_(
        widths=None, n_kv_heads=2, explicit_head_dim=128)
    assert "MLA caches 1,152 B a token a layer" in text and "2.25 GQA heads' worth" in text
    assert "GQA-2 of width 128 caches 1,024 B" in text
    assert f"Parameters 187M vs {param_counts(gqa).total / 1e6:.0f}M" in text
    assert f"vs {flop_counts(gqa.with_(phase='decode')).total / 1e6:.0f}M at 512 tokens" in text
    assert ("measured prefill 8 ms vs 10 ms (-20%), decode 1.5 ms absorbed / 3 ms naive vs 2 ms (absorbed -25%) (cpu)"
            in text)  # fake timings keep no repeats: the change without an interval


def test_knobs_an_mla_layer_does_not_have_are_refused_and_the_seeds_lessons_run_standard_layers():
    from core.study.lessons import find_lesson
    from core.study.sweep import plan_sweep

    v3 = find_preset("deepseek-v3").apply(AttentionConfig())
    for knob in ("n_kv_heads", "head_dim", "window"):
        with pytest.raises(ValueError, match="does not apply to an MLA layer"):
            plan_sweep(v3, knob, [1, 2])
    for key in ("heads", "kv"):
        base = find_lesson(key).base_config(v3)
        assert base.widths is None and base.head_dim_tied


def test_mla_fields_a_file_cannot_hold_and_block_formats_that_do_not_fit_every_cache():
    dims = MLADims(24, 32, 8, 4, 6)
    for bad in (dict(n_kv_heads=3), dict(n_kv_heads="garbage"), dict(explicit_head_dim=999)):
        with pytest.raises(ValueError, match="MLA layer"):
            AttentionConfig(d_model=64, n_heads=4, widths=dims, **bad)
    assert AttentionConfig(d_model=64, n_heads=4, widths=dims, n_kv_heads=4, explicit_head_dim=12).explicit_head_dim is None
    # q8_0 blocks of 32: the latent (32) fits, the decompressed key (2 + 32) does not: refused, naming the width
    with pytest.raises(ValueError, match="MLA's qk_nope \\+ qk_rope 34 is not a multiple of 32"):
        AttentionConfig(d_model=64, n_heads=1, widths=MLADims(24, 32, 2, 32, 32), kv_dtype="q8_0")
    with pytest.raises(ValueError, match="lower n_heads or the head widths"):
        AttentionConfig(d_model=64, n_heads=65536, widths=MLADims(24, 32, 128, 64, 65536))


def test_a_standard_pin_with_mla_forms_is_refused(tmp_path):
    import json

    from core.study.workspace import load_workspace, save_workspace
    from tests.core.test_compare_workspace import FULL_TIMING, _pin

    std = AttentionConfig(d_model=64, n_heads=4)
    path = tmp_path / "w.json"
    save_workspace(path, [_pin("A", std, FULL_TIMING)])
    data = json.loads(path.read_text())
    data["pins"][0]["report"]["timing"]["mla_forms"] = {"naive_prefill_ms": 1.0, "absorbed_prefill_ms": 1.0,
                                                         "naive_decode_ms": 1.0, "absorbed_decode_ms": 1.0}
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="MLA forms \\(mla_forms\\) do not match its configuration \\(MHA\\)"):
        load_workspace(path)


def test_an_n_heads_sweep_of_an_mla_layer_keeps_one_key_and_value_per_head():
    from core.study.sweep import plan_sweep

    v3 = find_preset("deepseek-v3").apply(AttentionConfig())
    points = plan_sweep(v3, "n_heads", [32, 64, 128])
    assert all(p.config is not None and p.config.kv_heads == p.value and p.config.widths == v3.widths for p in points)
    assert [param_counts(p.config).o for p in points] == [h * 128 * 7168 for h in (32, 64, 128)]


def test_an_fp8_latent_is_576_bytes_as_the_dense_engines_keep_it():
    """vLLM's FlashMLA backend keeps a dense MLA layer's cache as head_size (kv_lora_rank + rope) values in the cache
    dtype: 576 B a token a layer in fp8, as SGLang's (kv_lora_rank + qk_rope_head_dim) x kv_size. The 656-byte
    "fp8_ds_mla" record (fp8 latent, scales, bf16 RoPE key) is FlashMLASparseImpl's: DeepSeek-V3.2's sparse layers."""
    from core.counts import layer_kv_bytes_per_token

    cfg = find_preset("deepseek-v3").apply(AttentionConfig(seq_len=1024, dtype="bfloat16", kv_dtype="fp8_e4m3"))
    assert layer_kv_bytes_per_token(cfg.layer_spec(), "fp8_e4m3") == 576
    assert kv_cache_bytes(cfg).bytes_total == 576 * 61 * 1024
