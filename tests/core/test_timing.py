import numpy as np
import pytest
import torch

from core.arch.config import AttentionConfig
from core.counts import flop_counts, timing_bytes
from core.device import default_dtype, resolve_device
from core.timing.layer import run_timing
from core.timing.memory import check_memory, guard_memory
from core.timing.timer import Cancelled, measure, quartiles

CPU = torch.device("cpu")


def test_quartiles_match_numpy():
    samples = [5.0, 1.0, 3.0, 2.0, 4.0, 10.0, 7.0]
    stats = quartiles(samples)
    assert stats.median_ms == np.median(samples)
    assert stats.p25_ms == np.percentile(samples, 25) and stats.p75_ms == np.percentile(samples, 75)
    assert stats.reps == 7


def test_measure_calls_warmup_then_at_least_min_reps():
    calls = []
    stats = measure(lambda: calls.append(1), CPU, budget_s=0.0, min_reps=7, warmup=3)
    assert len(calls) == 3 + 7 and stats.reps == 7


def test_measure_stops_between_repeats_when_asked():
    calls = []
    with pytest.raises(Cancelled):
        measure(lambda: calls.append(1), CPU, warmup=1, min_reps=50, should_stop=lambda: len(calls) >= 4)
    assert len(calls) == 4


def test_device_choice_on_this_machine():
    if not torch.cuda.is_available():
        assert resolve_device("auto").type in ("cpu", "mps")
        with pytest.raises(ValueError, match="no CUDA GPU"):
            resolve_device("cuda")
    assert default_dtype(CPU) == "float32"
    with pytest.raises(ValueError, match="not known"):
        resolve_device("tpu")


def test_memory_guard_refuses_before_allocating():
    big = AttentionConfig(d_model=16384, n_heads=128, seq_len=131072)
    with pytest.raises(ValueError, match=r"needs about .* free"):
        guard_memory(big, CPU, free_bytes=24 * 2**30)
    small = AttentionConfig(d_model=64, n_heads=4, seq_len=16)
    assert check_memory(small, CPU, free_bytes=2**30).ok
    # run_timing refuses through the same guard, with the device's free memory faked small.
    with pytest.raises(ValueError, match="lower seq_len"):
        run_timing(small, CPU, free_bytes=timing_bytes(small) // 2)


def test_timing_bytes_cover_the_allocated_tensors():
    from core.kinds.standard.timing import allocate

    cfg = AttentionConfig(d_model=64, n_heads=8, n_kv_heads=2, seq_len=32, batch_size=2)
    t = allocate(cfg, CPU)
    tensors = [t.x, t.q, t.k, t.v, t.k_cache, t.v_cache] + list(t.layer.parameters()) + list(t.separate.parameters())
    allocated = sum(x.numel() * x.element_size() for x in tensors)
    assert allocated <= timing_bytes(cfg)


@pytest.mark.parametrize("phase", ["prefill", "decode"])
def test_run_timing_reports_consistent_figures(phase):
    cfg = AttentionConfig(d_model=64, n_heads=8, n_kv_heads=2, seq_len=64, phase=phase, causal=True)
    res = run_timing(cfg, CPU, budget_s=0.01)
    flops = flop_counts(cfg)
    assert res.device == "cpu" and res.backend in ("flash", "math")
    assert res.tflops == pytest.approx(flops.total / (res.layer.median_ms * 1e-3) / 1e12)
    assert res.core_tflops == pytest.approx(flops.attention / (res.core.median_ms * 1e-3) / 1e12)
    assert res.layer == (res.prefill if phase == "prefill" else res.decode)
    assert res.layer.p25_ms <= res.layer.median_ms <= res.layer.p75_ms
    assert set(res.to_report()) >= {"device", "backend", "median_ms", "p25_ms", "p75_ms", "tflops", "reps",
                                     "core_median_ms", "core_tflops"}


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_path_structure():
    dev = resolve_device("auto")
    assert dev.type == "cuda" and default_dtype(dev) == "bfloat16"
    cfg = AttentionConfig(d_model=1024, n_heads=8, n_kv_heads=2, seq_len=512, dtype="bfloat16", causal=True)
    res = run_timing(cfg, dev, budget_s=0.05)
    assert res.device == "cuda" and res.backend in ("cudnn", "flash", "efficient", "math")
