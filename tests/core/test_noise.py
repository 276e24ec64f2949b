"""Confidence on comparisons: the bootstrap interval of a ratio of medians, fed synthetic repeats whose answer is
known, and the Compare table and the captions that use it (no direction within noise, the right one outside)."""

from __future__ import annotations

import numpy as np

from core.arch.config import AttentionConfig
from core.report import build_report
from core.study.compare import comparison
from core.timing.change import change
from core.timing.noise import ratio_ci

RNG = np.random.default_rng(7)


def repeats(median: float, spread: float, n: int = 40) -> list[float]:
    return [float(x) for x in median * (1 + spread * RNG.standard_normal(n))]


def test_a_real_difference_is_measurable_and_noise_is_not():
    twice = ratio_ci(repeats(10.0, 0.05), repeats(5.0, 0.05))
    assert twice is not None and twice.measurable and twice.low < 2.0 < twice.high and twice.low > 1.5
    assert twice.text() == f"x{twice.ratio:.3g} (95% CI {twice.low:.3g}-{twice.high:.3g})"
    same = ratio_ci(repeats(5.0, 0.2), repeats(5.0, 0.2))
    assert same is not None and not same.measurable and same.low < 1.0 < same.high
    assert same.text().startswith("no measurable difference (x")
    assert same.short() == f"x{same.ratio:.2f}, but CI {same.low:.2f}-{same.high:.2f} holds x1: too noisy to tell"
    # A ratio far from 1 whose repeats scatter widely: the interval is what makes "no difference" readable.
    wild = ratio_ci([1.0, 30.0, 2.0, 25.0, 3.0], [5.0, 4.0, 6.0, 1.0, 20.0])
    assert wild is not None and not wild.measurable and wild.ratio != 1.0
    assert f"x{wild.ratio:.2f}, but CI " in wild.short() and wild.short().endswith("holds x1: too noisy to tell")
    assert twice.short() == f"x{twice.ratio:.2f}, CI {twice.low:.2f}-{twice.high:.2f}"
    assert ratio_ci([1.0], [1.0, 2.0]) is None  # one repeat: nothing to resample
    assert ratio_ci([1.0, 2.0], [0.0, 0.0]) is None
    assert ratio_ci([3.0, 4.0], [1.0, 2.0], seed=1) == ratio_ci([3.0, 4.0], [1.0, 2.0], seed=1)  # seeded


def pin(median: float, spread: float) -> dict:
    t = {"device": "cpu", "device_name": "CPU", "backend": "flash", "dtype": "float32", "median_ms": median,
         "p25_ms": median, "p75_ms": median, "tflops": 1.0, "reps": 40, "core_median_ms": 1.0, "core_p25_ms": 1.0,
         "core_p75_ms": 1.0, "core_tflops": 1.0, "fused_qkv_ms": None, "separate_qkv_ms": None, "prefill_ms": median,
         "decode_ms": median, "samples_ms": {"layer": repeats(median, spread), "prefill": repeats(median, spread),
                                            "decode": repeats(median, spread)}}
    return build_report(AttentionConfig(d_model=64, n_heads=4), t)


def test_the_compare_table_says_no_measurable_difference_within_noise_and_a_direction_outside():
    rows = {r.label: r for r in comparison([pin(10.0, 0.3), pin(10.5, 0.3), pin(5.0, 0.02)], 0)}
    noisy, faster = rows["decode time"].cells[1], rows["decode time"].cells[2]
    assert "no measurable difference" in noisy.relation and noisy.better is None
    assert faster.relation.startswith("x0.") and "(" in faster.relation and faster.better is True


def test_a_caption_claims_a_change_only_when_its_interval_excludes_none():
    a, b = pin(10.0, 0.02), pin(5.0, 0.02)
    assert change(b, a, "decode_ms").startswith("-50%, 95% CI -5")
    noisy = change(pin(10.3, 0.3), pin(10.0, 0.3), "decode_ms")
    assert noisy.startswith("no measurable difference:")


def test_the_first_comparison_imports_nothing_in_the_windows_thread():
    """np.median imports numpy.ma on its first call (7-28 ms here), default_rng numpy.random (13 modules, 7-10 ms):
    core.timing.noise imports them up front, at start-up, not in the slot of the first timing shown."""
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys, core.timing.noise; before = set(sys.modules); "
            "core.timing.noise.ratio_ci([1.0, 2.0, 3.0], [2.0, 3.0, 4.0]); print(sorted(set(sys.modules) - before))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "[]"
