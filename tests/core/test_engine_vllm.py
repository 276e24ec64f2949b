"""vLLM's KV capacity, against values derived by hand from vLLM's own rule (vllm/v1/core/kv_cache_utils.py at
001cabc1: get_num_blocks, the uniform-page grouping, _report_kv_cache_config, get_max_concurrency_for_kv_cache_config)
for three models, one of them hybrid local/global."""

import pytest

from core.arch.config import AttentionConfig
from core.arch.presets import find_preset
from core.plan.engines.vllm import vllm_cache

GIB = 2**30


def arch(key, **workload):
    return find_preset(key).apply(AttentionConfig(dtype="bfloat16", **workload)).architecture()


def test_llama_3_8b_one_group_of_32_layers():
    # a block: 16 tokens x 8 KV heads x (128 + 128) x 2 bytes = 65,536 B a layer; 20 GiB // 65,536 // 32 layers
    c = vllm_cache(arch("llama-3-8b"), 1, "bfloat16", 20 * GIB, 32768)
    assert (c.block_size, c.page_bytes, c.group_size, c.groups) == (16, 65536, 32, 1)
    assert c.num_blocks == 10_240 and c.tokens == 163_840
    assert c.blocks_per_request == 2048 and c.max_concurrency == 5.0  # 32,768 / 16 blocks a request


def test_gpt_oss_120b_two_groups_sliding_and_full():
    # 18 sliding (W 128) and 18 full layers: two groups of 18 sharing 18 tensors; a block of one layer:
    # 16 x 8 x (64 + 64) x 2 = 32,768 B; 10 GiB // 32,768 // 18 = 18,204 blocks
    c = vllm_cache(arch("gpt-oss-120b"), 1, "bfloat16", 10 * GIB, 32768)
    assert (c.page_bytes, c.group_size, c.groups, c.num_blocks) == (32768, 18, 2, 18_204)
    assert c.tokens == 18_204 // 2 * 16 == 145_632
    # a request: 2,048 blocks of the full group and ceil((127 + 8,192) / 16) + 1 = 521 of the sliding one
    assert c.blocks_per_request == 2048 + 521 and c.max_concurrency == pytest.approx(18_204 / 2569)


def test_qwen3_235b_at_tp4_with_an_fp8_cache():
    # 4 KV heads over TP 4: one a GPU; 16 x 1 x 256 x 1 byte = 4,096 B a block; 20 GiB // 4,096 // 94 layers
    c = vllm_cache(arch("qwen3-235b-a22b-fp8"), 4, "fp8_e4m3", 20 * GIB, 32768)
    assert (c.page_bytes, c.num_blocks, c.tokens) == (4096, 55_775, 892_400)
    assert c.max_concurrency == pytest.approx(55_775 / 2048)


def test_gemma_3_s_five_local_to_one_global_layers():
    # 52 local and 10 global layers: groups of 10 (the fewer), 6 local groups and 1 global; 16 KV heads x 256 x 2
    c = vllm_cache(arch("gemma-3-27b"), 1, "bfloat16", 40 * GIB, 131072)
    assert (c.page_bytes, c.group_size, c.groups) == (16 * 16 * 256 * 2, 10, 7)
    assert c.num_blocks == 40 * GIB // (16 * 16 * 256 * 2) // 10 and c.tokens == c.num_blocks // 7 * 16
    assert c.blocks_per_request == 131072 // 16 + 6 * (-(-(1023 + 8192) // 16) + 1)


def test_an_mla_model_runs_flashmla_s_blocks_of_64_of_its_latent():
    c = vllm_cache(arch("deepseek-v3"), 8, "fp8_e4m3", 30 * GIB, 65536)
    assert c.block_size == 64 and c.page_bytes == 64 * 576  # FlashMLABackend's (blocks, block_size, head_size)
    assert c.num_blocks == 30 * GIB // (64 * 576) // 61


def serve_parser():
    """`vllm serve MODEL` with the arguments a plan's command may use, from SERVE_ARGS (vLLM's own names and choices)."""
    import argparse

    from core.plan.engines.vllm_plan import SERVE_ARGS

    parser = argparse.ArgumentParser(prog="vllm", exit_on_error=False)
    parser.add_argument("serve")
    parser.add_argument("model")
    for flag, (kind, choices) in SERVE_ARGS.items():
        parser.add_argument(flag, type=kind, choices=choices or None)
    return parser


@pytest.mark.parametrize(("key", "gpus", "tp", "kv", "context"), [
    ("gpt-oss-120b", 1, 1, "bfloat16", 131072), ("qwen3-235b-a22b-fp8", 4, 4, "fp8_e4m3", 32768),
    ("llama-3-70b", 16, 8, "fp8_e5m2", 8192),
])
def test_the_serving_command_parses_with_vllm_s_own_arguments(key, gpus, tp, kv, context):
    from core.plan.engines.vllm_plan import vllm_plan
    from core.plan.gpus import find_gpu
    from core.plan.report import plan_inputs

    preset = find_preset(key)
    cfg = preset.apply(AttentionConfig(dtype="bfloat16", kv_dtype=kv))
    p = plan_inputs(cfg, preset.params, find_gpu("h100-sxm"), gpus, tp, "fp8", kv, 1, context, 0.1)
    v = vllm_plan(p, preset.repo)
    args = serve_parser().parse_args(v.command[1:])
    assert (args.model, args.tensor_parallel_size, args.max_model_len) == (preset.repo, tp, context)
    assert args.pipeline_parallel_size == (gpus // tp if gpus > tp else None)
    assert args.kv_cache_dtype == {"bfloat16": None, "fp8_e4m3": "fp8", "fp8_e5m2": "fp8_e5m2"}[kv]
    assert args.gpu_memory_utilization == 0.9
    # the memory vLLM gives the cache: 90% of the card as its driver reports it, less the weights and the overhead
    assert v.cache.available_bytes == int(81_559 * 2**20 * 0.9) - p.params // gpus - 2 * 2**30


def test_vllm_keeps_no_llama_cpp_formats():
    from core.plan.engines.vllm_plan import kv_cache_dtype

    with pytest.raises(ValueError, match="vLLM keeps no q8_0 cache"):
        kv_cache_dtype("q8_0")
