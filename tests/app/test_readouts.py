"""Text that must not go stale or be clipped: the Measured status, the status bar, hover readouts."""

import numpy as np
from PySide6.QtCore import QEvent, QPointF
from PySide6.QtWidgets import QApplication

from widgets.heatmap_view import HeatmapMosaic


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
