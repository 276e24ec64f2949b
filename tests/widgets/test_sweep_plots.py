"""The sweep plots read at every size: numbered value axes with units, swept values apart, pin labels merged,
legends in the titles (wrapped, never widening a column) rather than on the curves."""

import math

import pytest

from core.arch.config import AttentionConfig
from core.study.sweep import SweepResult, plan_sweep, run_point
from tests.drawn_text import drawn_labels
from widgets.common.plot_ticks import axis_ticks, short_number, spaced_values
from widgets.sweep.plots import UNITS, SweepPlots, pin_labels


def test_axis_ticks_are_round_values_at_least_two_inside_the_range():
    ticks = axis_ticks(math.log10(3e5), math.log10(2e10), log=True, most=6)
    labels = [short_number(10**t) for t in ticks]
    assert labels == ["1M", "10M", "100M", "1G", "10G"]  # whole decades when there are enough
    assert [short_number(10**t) for t in axis_ticks(math.log10(1.5), math.log10(40), True)] == ["2", "5", "10", "20"]
    assert len(axis_ticks(0, 30, log=True, most=7)) <= 7
    kib = axis_ticks(math.log10(900 * 1024), math.log10(100 * 2**20), True, "bytes", most=4)
    assert [short_number(10**t, "bytes") for t in kib] == ["1 MiB", "4 MiB", "16 MiB", "64 MiB"]
    # A log range between two round ticks (310..480 ms) still gets numbers: fixed decade ticks left it bare.
    narrow = [10**t for t in axis_ticks(math.log10(310), math.log10(480), True, "ms", most=4)]
    assert len(narrow) >= 2 and all(310 <= v <= 480 for v in narrow)
    assert [short_number(v) for v in axis_ticks(0.3, 0.9, False, most=5)] == ["0.4", "0.6", "0.8"]
    assert [short_number(v, "bytes") for v in axis_ticks(0, 8.4e8, False, "bytes", most=5)] == [
        "0 B", "256 MiB", "512 MiB", "768 MiB"]
    assert len(axis_ticks(0, 1, False, most=5)) <= 5 and len(axis_ticks(100.01, 100.02, False, most=5)) >= 2


def test_swept_value_labels_keep_their_width_apart():
    values = [2**i for i in range(4, 15)]  # 16 .. 16,384
    shown = spaced_values(values, 300, log=True)
    span = math.log10(values[-1]) - math.log10(values[0])
    xs = [(math.log10(v) - math.log10(values[0])) / span * 300 for v in shown]
    widths = [7 * len(f"{v:,}") + 10 for v in shown]
    assert shown[-1] == 16384  # the last value is always labelled
    assert all(b - a >= (wa + wb) / 2 for a, b, wa, wb in zip(xs, xs[1:], widths, widths[1:], strict=False))
    assert len(spaced_values(values, 2000, log=True)) == len(values)  # room for every one
    # A sweep that runs downwards (n_kv_heads 32..1) is labelled as well as one that runs upwards.
    assert spaced_values([32, 16, 8, 4, 2, 1], 300, log=True) == [32, 16, 8, 4, 2, 1]


def test_pins_on_one_value_share_one_label():
    assert pin_labels([(64, "A"), (256, "B"), (64, "D")]) == [(64, "pins A, D"), (256, "pin B")]


def _timed_result(knob, values, base):
    """A sweep's result with the counts the app computes and a made-up timing per point (the plots' input)."""
    rows = []
    for i, point in enumerate(plan_sweep(base, knob, values)):
        ms = 300.0 + 20 * i  # a narrow range on a log axis: between two decades
        timing = {"median_ms": ms, "p25_ms": ms * 0.95, "p75_ms": ms * 1.05, "prefill_ms": ms, "decode_ms": ms / 60,
                  "tflops": 0.12 + 0.01 * i, "core_tflops": 0.05 + 0.002 * i}
        rows.append(run_point(point, lambda cfg, t=timing: t))
    return SweepResult(knob, rows=rows, timed=True)


@pytest.mark.parametrize("size", [(500, 600), (760, 640), (1400, 900)])
def test_every_plot_is_numbered_with_units_and_legends_never_widen_a_column(qtbot, size):
    base = AttentionConfig(d_model=4096, n_heads=32, n_kv_heads=32, seq_len=1024, n_layers=32)
    plots = SweepPlots()
    qtbot.addWidget(plots)
    plots.resize(*size)
    plots.show()
    plan = ("a very long plan line name: Llama-3-70B-Instruct on 8 x H200 at TP8, per GPU", [2.0e9] * 6, 1.4e11)
    plots.show_result(_timed_result("n_kv_heads", [32, 16, 8, 4, 2, 1], base), "n_kv_heads", [], plan=plan)

    def unreadable() -> list[str]:
        """What a reader would miss, plot by plot, as painted (on screen or in an export)."""
        plots.grab()  # painted: the views take their data's ranges, the axes their final heights
        missing = []
        for key, p in plots.plots.items():
            left, bottom = p.getAxis("left"), p.getAxis("bottom")
            if len(drawn_labels(left)) < 2 or left.labelText != UNITS[key]:
                missing.append(f"{key}: value axis {drawn_labels(left)} {left.labelText!r}")
            rects = [r for r, _ in drawn_labels(left)]
            if any(a.intersects(b) for i, a in enumerate(rects) for b in rects[i + 1:]):
                missing.append(f"{key}: value labels overprint each other")
            ticks = drawn_labels(bottom)
            if not {t for _, t in ticks} >= {"1", "32"}:
                missing.append(f"{key}: swept values {[t for _, t in ticks]}")
            # the axis title sits below every tick label (it once overprinted them: "n_kv8heads")
            title_top = bottom.label.mapRectToParent(bottom.label.boundingRect()).top()  # the axis's coordinates
            if any(r.bottom() > title_top + 1 for r, _ in ticks):
                missing.append(f"{key}: the x title at {title_top} overlaps a tick label")
        return missing

    try:
        qtbot.waitUntil(lambda: not unreadable(), timeout=3000)
    except qtbot.TimeoutError:
        raise AssertionError(unreadable()) from None
    # The long plan legend wraps inside its plot: no column grows (it once pushed the right column off screen).
    widths = [p.geometry().width() for p in plots.plots.values()]
    assert sum(widths[:2]) <= plots.width()
    plots.show_result(_timed_result("n_kv_heads", [32, 16, 8, 4, 2, 1], base), "n_kv_heads", [])
    qtbot.waitUntil(lambda: not unreadable(), timeout=3000)
    assert [p.geometry().width() for p in plots.plots.values()] == pytest.approx(widths, abs=1)
