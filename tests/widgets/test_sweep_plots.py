"""The sweep plots read at 1280x800: majors only on log axes, swept values apart, pin labels merged,
legends in the titles rather than on the curves."""

import math

from widgets.plot_ticks import log_ticks, spaced_values
from widgets.sweep_plots import pin_labels


def test_log_ticks_are_labelled_majors_that_never_repeat():
    ticks = log_ticks(3e5, 2e10)
    labels = [t[1] for t in ticks]
    assert labels == ["1M", "10M", "100M", "1G", "10G"] and len(set(labels)) == len(labels)
    assert [round(10 ** t[0]) for t in ticks] == [10**6, 10**7, 10**8, 10**9, 10**10]
    assert [t[1] for t in log_ticks(1.5, 40)] == ["2", "5", "10", "20"]  # few decades: 1-2-5
    wide = log_ticks(1, 1e30)
    assert len(wide) <= 7
    kib = log_ticks(900 * 1024, 100 * 2**20, "bytes")
    assert [t[1] for t in kib] == ["1 MiB", "4 MiB", "16 MiB", "64 MiB"]


def test_swept_value_labels_keep_their_width_apart():
    values = [2**i for i in range(4, 15)]  # 16 .. 16,384
    shown = spaced_values(values, 300, log=True)
    span = math.log10(values[-1]) - math.log10(values[0])
    xs = [(math.log10(v) - math.log10(values[0])) / span * 300 for v in shown]
    widths = [7 * len(f"{v:,}") + 10 for v in shown]
    assert shown[-1] == 16384  # the last value is always labelled
    assert all(b - a >= (wa + wb) / 2 for a, b, wa, wb in zip(xs, xs[1:], widths, widths[1:], strict=False))
    assert len(spaced_values(values, 2000, log=True)) == len(values)  # room for every one


def test_pins_on_one_value_share_one_label():
    assert pin_labels([(64, "A"), (256, "B"), (64, "D")]) == [(64, "pins A, D"), (256, "pin B")]
