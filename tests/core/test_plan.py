"""The memory plan against plans computed by hand, to the byte; max_context and max_batch are the largest
values that fit (one more does not); bad input says what to change."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.arch.layer import LayerSpec
from core.arch.model import Architecture
from core.kinds.mla.spec import MLADims
from core.plan.fit import PlanInput, decode_bounds, gpu_kv_bytes, plan, reserve_bytes, weight_bytes
from core.plan.gpus import catalogue, find_gpu

LLAMA3_8B = Architecture.uniform(4096, LayerSpec(32, 8, 128), 32)
LLAMA3_8B_PARAMS = 8_030_261_248
H100 = find_gpu("h100-sxm")


def test_a_dense_gqa_model_on_one_gpu():
    # Llama 3 8B, bf16 weights and KV, batch 1, 8,192 tokens, on one H100 SXM: 81,559 MiB as nvidia-smi reports it
    assert H100.memory_bytes == 81_559 * 2**20 == 85_520_809_984 and H100.datasheet_gb == 80
    p = plan(PlanInput(LLAMA3_8B, LLAMA3_8B_PARAMS, H100, batch=1, context=8192))
    assert p.weights == 16_060_522_496  # 8,030,261,248 x 2 bytes
    assert p.kv_cache == 1_073_741_824  # 2 (K, V) x 8 heads x 128 x 2 bytes x 32 layers = 131,072 B a token, x 8,192
    assert p.reserve == 8_552_080_999  # 10% of 85,520,809,984, rounded up
    assert p.free == 59_834_464_665 and p.fits
    assert p.max_context == 464_692  # (85,520,809,984 - 16,060,522,496 - 8,552,080,999) // 131,072
    assert p.max_batch == 56  # the same room // (131,072 x 8,192)
    assert (p.kv_heads_per_gpu, p.kv_replication, p.pp) == (8, 1, 1)


def test_the_same_model_at_tp_8_and_at_tp_16_replicates_its_kv_heads():
    at8 = plan(PlanInput(LLAMA3_8B, LLAMA3_8B_PARAMS, H100, n_gpus=8, tp=8, batch=8, context=131072))
    assert at8.weights == 2_007_565_312  # 16,060,522,496 / 8
    # one KV head a GPU: 2 x 1 x 128 x 2 x 32 = 16,384 B a token, x 131,072 tokens x 8 sequences
    assert at8.kv_cache == 17_179_869_184 and (at8.kv_heads_per_gpu, at8.kv_replication) == (1, 1)
    at16 = plan(PlanInput(LLAMA3_8B, LLAMA3_8B_PARAMS, H100, n_gpus=16, tp=16, batch=8, context=131072))
    assert at16.weights == 1_003_782_656  # half again
    assert at16.kv_cache == 17_179_869_184  # but the cache per GPU does not shrink: each KV head is on 2 GPUs
    assert (at16.kv_heads_per_gpu, at16.kv_replication) == (1, 2)
    # 16 GPUs as TP 8 x 2 pipeline stages halve the cache instead: 16 layers a stage
    pp2 = plan(PlanInput(LLAMA3_8B, LLAMA3_8B_PARAMS, H100, n_gpus=16, tp=8, batch=8, context=131072))
    assert (pp2.pp, pp2.layers_per_stage, pp2.kv_cache, pp2.weights) == (2, 16, 8_589_934_592, 1_003_782_656)


def test_an_mla_model_at_tp_8_keeps_the_whole_latent_on_every_gpu():
    mla = LayerSpec(128, 128, 192, widths=MLADims(1536, 512, 128, 64, 128))  # head_dim: nope + rope
    v3 = Architecture.uniform(7168, mla, 61)
    p = plan(PlanInput(v3, 671_000_000_000, find_gpu("h200"), n_gpus=8, tp=8, weights_dtype="fp8", kv_dtype="bf16",
                       batch=4, context=32768))
    assert p.weights == 83_875_000_000  # 671e9 x 1 byte / 8
    assert p.kv_cache == 9_210_691_584  # (512 + 64) x 2 bytes x 61 layers = 70,272 B a token, x 32,768 x 4: not / 8
    assert p.reserve == 15_075_482_010 and p.fits  # 10% of 143,771 MiB, rounded up
    assert (p.kv_heads_per_gpu, p.kv_replication) == (None, 8)


def test_local_layers_cache_at_most_their_window():
    local = LayerSpec(32, 8, 128, window=4096)
    arch = Architecture(4096, (local,) * 24 + (LayerSpec(32, 8, 128),) * 8)
    p = PlanInput(arch, LLAMA3_8B_PARAMS, H100, batch=1, context=32768)
    assert gpu_kv_bytes(p) == 4096 * (24 * 4096 + 8 * 32768)  # 4,096 B a token a layer
    every_local = PlanInput(Architecture.uniform(4096, local, 32), LLAMA3_8B_PARAMS, H100, context=32768)
    assert plan(every_local).max_context is None  # the cache stops growing: memory sets no limit


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(catalogue()), st.sampled_from([(32, 8, 128), (64, 8, 128), (16, 16, 64), (32, 1, 128),
                                                     (28, 4, 128)]),
       st.integers(1, 96), st.sampled_from([1, 2, 4, 8]), st.integers(1, 64), st.integers(1, 200_000),
       st.integers(10**8, 3 * 10**11), st.sampled_from(["bfloat16", "fp8_e4m3", "q4_0"]),
       st.sampled_from([None, 1024]))
def test_max_context_and_max_batch_are_the_largest_that_fit(gpu, heads, n_layers, tp, batch, context, params, kv,
                                                            window):
    H, K, h = heads
    if H % tp or (K % tp and tp % K):
        return
    arch = Architecture(H * h, tuple(LayerSpec(H, K, h, window=window if i % 2 else None) for i in range(n_layers)))
    p = PlanInput(arch, params, gpu, n_gpus=tp, tp=tp, batch=batch, context=context, kv_dtype=kv)
    r = plan(p)
    room = gpu.memory_bytes - weight_bytes(p) - reserve_bytes(p)
    assert r.fits == (gpu_kv_bytes(p) <= room)
    if r.max_context:
        assert gpu_kv_bytes(p, context=r.max_context) <= room < gpu_kv_bytes(p, context=r.max_context + 1)
    if r.max_context == 0:
        assert gpu_kv_bytes(p, context=1) > room
    assert gpu_kv_bytes(p, batch=r.max_batch) <= room or r.max_batch == 0
    assert gpu_kv_bytes(p, batch=r.max_batch + 1) > room


def test_decode_is_bounded_by_the_bytes_each_step_reads():
    p = PlanInput(LLAMA3_8B, LLAMA3_8B_PARAMS, find_gpu("h200"), batch=1, context=8192)
    d = decode_bounds(p)
    assert d.bytes_per_gpu == 16_060_522_496 + 1_073_741_824
    assert d.step_s_bandwidth == pytest.approx(17_134_264_320 / 4.8e12)
    assert d.bound == "bandwidth" and d.tokens_per_s(1) == pytest.approx(4.8e12 / 17_134_264_320)
    flops = 2 * LLAMA3_8B_PARAMS + 32 * 4 * 32 * 128 * 8192  # weights, and q.k and p.v over 8,192 keys a layer
    assert d.flops_per_gpu == flops and d.step_s_compute == pytest.approx(flops / 989.4e12)


@pytest.mark.parametrize("kw, words", [
    ({"tp": 3, "n_gpus": 3}, "does not divide 32 query heads"),
    ({"n_gpus": 0}, "number of GPUs"),
    ({"context": 0}, "the context"),
    ({"batch": -1}, "the batch"),
    ({"n_gpus": 12, "tp": 8}, "whole tensor-parallel groups"),
    ({"weights_dtype": "fp7"}, "weights dtype"),
    ({"kv_dtype": "int3"}, "KV dtype"),
    ({"n_gpus": 66, "tp": 2}, "pipeline stages"),
])
def test_bad_input_says_what_to_change(kw, words):
    with pytest.raises(ValueError, match=words):
        PlanInput(LLAMA3_8B, LLAMA3_8B_PARAMS, H100, **kw)
    with pytest.raises(ValueError, match="not in the catalogue"):
        find_gpu("h300")


def test_kv_heads_a_tp_degree_cannot_share_out_are_refused():
    arch = Architecture.uniform(3072, LayerSpec(24, 6, 128), 4)
    with pytest.raises(ValueError, match="neither divides nor is a multiple of 6"):
        PlanInput(arch, 10**9, H100, n_gpus=4, tp=4)
