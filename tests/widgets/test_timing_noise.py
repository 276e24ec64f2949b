"""The timing panel says how a CPU timing ran: its thread count, its spread as a share of the median, and a
warning when other processes kept the machine busy meanwhile."""

from __future__ import annotations

from widgets.common.style import text_colour
from widgets.costs.timing_panel import TimingPanel

T = {"device": "cpu", "device_name": "CPU (2 threads)", "backend": "flash", "dtype": "float32", "median_ms": 2.0,
     "p25_ms": 1.9, "p75_ms": 2.3, "tflops": 0.1, "reps": 9, "core_median_ms": 1.0, "core_p25_ms": 1.0,
     "core_p75_ms": 1.0, "core_tflops": 0.1, "fused_qkv_ms": None, "separate_qkv_ms": None, "prefill_ms": 2.0,
     "decode_ms": 0.5}


def test_threads_spread_and_a_busy_machine_are_said(qtbot):
    panel = TimingPanel()
    qtbot.addWidget(panel)
    panel.show_timing({**T, "threads": 1, "other_load": 0.02}, "MHA")
    assert panel.labels["device"].text().startswith("CPU (1 of 2 threads) ·")
    assert "IQR 20%, 9 reps, on 1 of 2 threads)" in panel.labels["layer"].text()  # (2.3 - 1.9) / 2.0
    panel.show_timing({**T, "threads": 2, "other_load": 0.02}, "MHA")  # every thread: nothing to say beside it
    assert panel.labels["layer"].text().endswith("IQR 20%, 9 reps)")
    assert panel.labels["device"].text().startswith("CPU (2 of 2 threads) ·")
    panel.show_timing({**T, "threads": 1, "other_load": 0.02}, "MHA")
    assert "busy" not in panel.labels["state"].text()
    assert text_colour(panel.labels["state"]) == "#059669"  # a CPU figure is a result, not a warning
    panel.show_timing({**T, "threads": 1, "other_load": 1.04}, "MHA")
    state = panel.labels["state"].text()
    assert "other processes kept 1.0 core busy meanwhile" in state and "measure again" in state
    assert text_colour(panel.labels["state"]) == "#b45309"  # the warning's amber
    panel.show_timing(T, "MHA")  # a GPU-less older report without the fields: nothing claimed
    assert panel.labels["device"].text().startswith("CPU (2 threads) ·")


def test_nothing_animates_while_the_cpu_is_measured(qtbot):
    """The indeterminate busy bar repainted the window 60 times a second during a CPU timing, on the cores it
    measured: the displayed figure read 3-6% slow against torch.utils.benchmark (bench/timing_accuracy.py --window)."""
    panel = TimingPanel()
    qtbot.addWidget(panel)
    panel.show()
    panel.show_measuring("CPU")
    assert panel.busy.isHidden() and "no progress animation" in panel.labels["state"].text()
    panel.show_measuring("CUDA")  # a GPU timing does not share the window's cores: the bar says it is busy
    assert panel.busy.isVisible() and panel.labels["state"].text() == "measuring on CUDA…"


def test_a_noisy_qkv_ratio_shows_its_interval_and_says_why_it_is_no_difference(qtbot):
    """'375 ms fused, 2,027 ms separate (x5.41: no measurable difference)' read as a contradiction: the interval
    that holds x1 is what a reader needs to see it."""
    panel = TimingPanel()
    qtbot.addWidget(panel)
    fused, separate = [300.0, 375.0, 3000.0, 350.0, 400.0], [2027.0, 300.0, 2500.0, 2100.0, 280.0]
    t = {**T, "fused_qkv_ms": 375.0, "separate_qkv_ms": 2027.0,
         "samples_ms": {"fused_qkv": fused, "separate_qkv": separate}}
    panel.show_timing(t, "MHA")
    text = panel.labels["qkv"].text()
    assert "375 ms fused · 2,027 ms separate (x5.41, but CI " in text and text.endswith("holds x1: too noisy to tell)")
