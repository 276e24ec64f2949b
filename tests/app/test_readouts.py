"""Text that must not go stale or be clipped: the Measured status, the status bar, hover readouts."""

import numpy as np
from PySide6.QtCore import QEvent, QPointF
from PySide6.QtWidgets import QApplication

from widgets.maps.heatmap_view import HeatmapMosaic


def test_a_skipped_timing_message_goes_once_the_timing_is_measured(make_window):
    w = make_window(max_timing_s=0.0)  # every live timing is "too slow": skipped, Measure now offered
    w.config_panel.seq_len.spin.setValue(40)
    assert w.statusBar().currentMessage().startswith("timing skipped: ")  # said once, not "timing: timing"
    panel = w.timing
    assert panel.measure.isVisible()
    QApplication.processEvents()
    state, button = panel.labels["state"], panel.measure
    # The status text and its button sit side by side: neither covers the other.
    assert not state.geometry().intersects(button.geometry())
    assert state.mapTo(panel, state.rect().topRight()).x() <= button.mapTo(panel, button.rect().topLeft()).x()
    w.request(force_timing=True)
    assert w.timing.labels["state"].text().startswith("measured")
    assert w.statusBar().currentMessage() == ""


def test_hover_readout_goes_back_to_its_hint_when_the_mouse_leaves(qtbot):
    m = HeatmapMosaic()
    qtbot.addWidget(m)
    m.resize(600, 400)
    m.show()
    probs = np.random.default_rng(0).random((4, 5, 5)).astype(np.float32)
    m.set_data(probs, list("abcde"), 2)
    QApplication.processEvents()
    x, y = m.layout_.origin(1)
    scene = m.plot.getViewBox().mapViewToScene(QPointF(x + 1.5 * m.layout_.upsample, y + 0.5))
    m._on_scene_mouse_moved(scene)
    assert m.readout.text().startswith("head 1")
    QApplication.sendEvent(m.glw, QEvent(QEvent.Type.Leave))
    assert m.readout.text() == m.readout.hint


def test_a_live_timing_that_overruns_twice_its_limit_stops_and_offers_measure_now(make_window, monkeypatch):
    import sandbox.jobs.compute as compute

    monkeypatch.setattr(compute, "estimate_timing_s", lambda *a, **k: 0.0)  # an estimate far too low
    w = make_window(max_timing_s=1e-6)  # allowed, then stopped between two repeats after 2 µs
    w.config_panel.seq_len.spin.setValue(40)
    state = w.timing.labels["state"].text()
    assert state.startswith("timing skipped: it ran over") and "press Measure now (Ctrl+M)" in state, state
    assert w.timing.measure.isVisible()
    w.request(force_timing=True)  # Measure now has no limit: it runs to the end
    assert w.timing.labels["state"].text().startswith("measured")
    assert w.current_timing() is not None and w.current_timing().result.layer.median_ms > 0
