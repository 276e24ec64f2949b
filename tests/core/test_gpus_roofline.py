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
    assert (find_gpu("h100-sxm").datasheet_gb, find_gpu("h200").datasheet_gb) == (80, 141)
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


# What each card's driver reports, as the source each catalogue entry cites prints it (MiB; rocminfo's KB / 1024).
DRIVER_MIB = {"h100-sxm": 81_559, "h200": 143_771, "b200": 183_359, "a100-80gb": 81_920, "l40s": 46_068,
              "rtx-4090": 24_564, "rtx-5090": 32_607, "mi300x": 201_310_208 // 1024}


def test_each_card_has_the_memory_its_driver_reports_not_the_datasheet_s_decimal_gb():
    assert {g.id for g in catalogue()} == set(DRIVER_MIB)
    for g in catalogue():
        assert g.memory_bytes == DRIVER_MIB[g.id] * 2**20, g.id
        printed = f"{DRIVER_MIB[g.id]}MiB" if g.vendor != "AMD" else "201310208 KB"
        assert printed in g.memory_source and ("issue #" in g.memory_source or "PR #" in g.memory_source), g.id
        # the datasheet's GB is decimal and the driver keeps some: within 5% under it to 7.5% over it
        assert 0.95 < g.memory_bytes / (g.datasheet_gb * 1e9) < 1.075, g.id
    h100 = find_gpu("h100-sxm")
    assert h100.memory_bytes / 2**30 == pytest.approx(79.65, abs=0.01)  # what vLLM plans against, not 80e9 B


def test_a_card_of_the_user_s_own_memory():
    mine = find_gpu("rtx-4090").with_memory_gib(23.58)  # what vLLM logs for a 24 GB GeForce card
    assert mine.memory_bytes == round(23.58 * 2**30) and mine.datasheet_gb is None and "23.58 GiB" in mine.memory_source
    assert mine.tflops == find_gpu("rtx-4090").tflops
    for bad in (0, -3, float("nan"), float("inf"), True, "80", 2**21):
        with pytest.raises(ValueError, match="GiB"):
            find_gpu("h100-sxm").with_memory_gib(bad)
