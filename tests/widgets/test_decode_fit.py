"""The Long tab's decode charts fit the width a 1024 px window gives them: titles side by side once made the charts'
layout 720 px wide in a 525 px view, and the second chart was cut off at the window's edge."""

from types import SimpleNamespace

import numpy as np
from PySide6.QtCore import Qt

from widgets.long.decode_view import DecodeView

WIDTH = 525  # the Decode run tab's width in a 1024 x 700 window (the side panel beside it)


def layout_min_width(view: DecodeView) -> float:
    return view.glw.ci.layout.effectiveSizeHint(Qt.SizeHint.MinimumSize).width()


def test_a_random_weight_curve_fits_a_1024_px_window(qtbot):
    view = DecodeView()
    qtbot.addWidget(view)
    view.resize(WIDTH, 400)
    view.show()
    points = [dict(context=c, cached=c, median_ms=0.1 + c / 1e4, p25_ms=0.09 + c / 1e4, p75_ms=0.12 + c / 1e4,
                   kv_bytes=c * 2048) for c in range(1, 4097, 256)]
    view.show_curve(dict(points=points, slope_ms_per_1k_tokens=0.1, intercept_ms=0.05, r2=0.99), {})
    qtbot.waitUntil(lambda: view.glw.viewport().width() > 0)
    assert layout_min_width(view) <= view.glw.viewport().width()


def test_a_real_model_s_run_fits_a_1024_px_window(qtbot):
    view = DecodeView()
    qtbot.addWidget(view)
    view.resize(WIDTH, 400)
    view.show()
    for i in range(3):  # SimpleNamespace: sandbox/jobs/long_types.py's DecodeStepView (widgets never import sandbox)
        view.add_step(SimpleNamespace(step=i, n_cached=10 + i, kv_bytes=1000 * (i + 1), step_ms=2.0, token=f"t{i}",
                                      row=np.full((3, 10 + i), 1 / (10 + i), dtype=np.float32)))
    qtbot.waitUntil(lambda: view.glw.viewport().width() > 0)
    assert layout_min_width(view) <= view.glw.viewport().width()
