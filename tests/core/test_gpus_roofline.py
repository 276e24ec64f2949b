"""The GPU catalogue holds dense figures with their sources; the roofline's bound is min(peak, intensity x
bandwidth) of the catalogue's numbers, its bytes are the weights, the cache and the activations."""

import pytest

from core.arch.config import AttentionConfig
from core.plan.gpus import catalogue, find_gpu, this_machine
from core.plan.roofline import layer_point, roofline

IDS = ["h100-sxm", "h200", "b200", "a100-80gb", "l40s", "rtx-4090", "rtx-5090", "mi300x"]


def test_every_gpu_the_issue_names_is_there_with_its_fields_and_a_source():
    assert [g.id for g in catalogue()] == IDS
    for g in catalogue():
        assert g.memory_bytes >= 24e9 and 0.8e12 <= g.bandwidth_bytes_s <= 8e12, g.id
        assert g.tflops["bf16"] > 100 and g.tflops["fp32"] < g.tflops["bf16"], g.id
        assert ("datasheet" in g.source.lower() or "whitepaper" in g.source.lower() or "data sheet" in g.source.lower())
        if "fp8" in g.tflops:  # fp8 tensor cores run twice the bf16 rate (dense against dense)
            assert g.tflops["fp8"] == pytest.approx(2 * g.tflops["bf16"], rel=0.02), g.id


def test_the_figures_are_dense_never_the_sparse_ones():
    assert find_gpu("h100-sxm").tflops["bf16"] == pytest.approx(989, abs=1)  # 1,979 is the 2:4-sparse figure
    assert find_gpu("h200").tflops["bf16"] == pytest.approx(989, abs=1)
    assert find_gpu("a100-80gb").tflops["bf16"] == 312 and "fp8" not in find_gpu("a100-80gb").tflops
    assert find_gpu("b200").tflops["bf16"] == 2250 and find_gpu("mi300x").tflops["bf16"] == 1307.4
    assert (find_gpu("h100-sxm").memory_bytes, find_gpu("h200").memory_bytes) == (80 * 10**9, 141 * 10**9)
    assert find_gpu("h200").ridge == pytest.approx(206, abs=1) and find_gpu("h100-sxm").ridge == pytest.approx(295, abs=1)


def test_a_gpu_without_fp8_runs_fp8_weights_at_its_bf16_peak():
    assert find_gpu("a100-80gb").peak_flops("fp8") == (312e12, "bf16")
    assert find_gpu("h100-sxm").peak_flops("fp8") == (1978.9e12, "fp8")


CFG = AttentionConfig(d_model=4096, n_heads=32, n_kv_heads=8, seq_len=8192, batch_size=4, causal=True)


def test_the_points_bytes_and_flops_are_counted_by_hand():
    gpu = find_gpu("h200")
    dec = layer_point(CFG, gpu, "decode")
    weights = (4096 * 4096 * 2 + 4096 * 1024 * 2) * 2  # q, o: d x d; k, v: d x K*h; bf16
    kv = 2 * 8 * 128 * 2 * 8192 * 4  # every cached token's K and V, 4 sequences
    act = 2 * 4 * 1 * 4096 * 2  # the new tokens' input and output
    assert (dec.weights, dec.kv, dec.activations, dec.bytes) == (weights, kv, act, weights + kv + act)
    proj = 2 * 4 * 4096 * (4096 + 2 * 1024) + 2 * 4 * 4096 * 4096
    assert dec.flops == proj + 4 * 4 * 32 * 128 * 8192  # the core: q.k and p.v over 8,192 keys
    assert dec.limit == "memory" and dec.bound_flops == dec.intensity * 4.8e12
    pre = layer_point(CFG, gpu, "prefill")
    assert pre.limit == "compute" and pre.bound_flops == 989.4e12
    assert pre.ideal_s == pytest.approx(pre.flops / 989.4e12) and dec.ideal_s == pytest.approx(dec.bytes / 4.8e12)


def test_every_bound_is_the_smaller_roof_of_the_catalogues_numbers():
    for gpu in catalogue():
        for point in roofline(CFG.with_(batch_size=1, seq_len=512), gpu, "fp8" if "fp8" in gpu.tflops else
                                     "bf16").values():
            peak = gpu.tflops["fp8" if "fp8" in gpu.tflops else "bf16"] * 1e12
            assert point.bound_flops == pytest.approx(min(peak, point.flops / point.bytes * gpu.bandwidth_bytes_s))


def test_a_measured_time_is_drawn_as_its_achieved_rate_at_the_points_intensity():
    me = this_machine("CPU", 24 * 2**30, 50e9, 10e9, "fp32", "a test")
    point = layer_point(CFG.with_(batch_size=1, seq_len=64), me, "prefill", weights_dtype="fp32")
    m = point.measured(0.002)
    assert m["achieved_flops"] == point.flops / 0.002 and m["fraction_of_bound"] == m["achieved_flops"] / point.bound_flops
    with pytest.raises(ValueError, match="above 0"):
        point.measured(0.0)
    with pytest.raises(ValueError, match="measured before"):
        this_machine("CPU", 0, 1.0, 1.0, "fp32", "")
