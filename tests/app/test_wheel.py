"""The mouse wheel scrolls the left panel; a control under the cursor takes it only when focused."""

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication


def wheel(widget, steps: int = -3) -> None:
    """Send `steps` wheel notches (negative: scroll down) at the widget's centre."""
    centre = QPointF(widget.width() / 2, widget.height() / 2)
    glob = QPointF(widget.mapToGlobal(centre.toPoint()))
    for _ in range(abs(steps)):
        event = QWheelEvent(centre, glob, QPoint(0, 0), QPoint(0, 120 if steps > 0 else -120),
                            Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase,
                            False)
        QApplication.sendEvent(widget, event)


def test_an_unfocused_slider_lets_the_panel_scroll(make_window):
    w = make_window()
    w.resize(1024, 500)  # the left panel must scroll
    QApplication.processEvents()
    bar = w.left_scroll.verticalScrollBar()
    assert bar.maximum() > 0
    panel = w.config_panel
    before = (w.config(), bar.value())
    for control in (panel.n_heads.slider, panel.n_heads.spin, panel.preset, panel.dtype, w.models.picker.layer):
        assert not control.hasFocus()
        wheel(control, -2)
    assert w.config() == before[0]
    assert bar.value() > before[1]  # the wheel went to the scroll area


def test_a_focused_slider_takes_the_wheel(make_window):
    w = make_window()
    panel = w.config_panel
    slider = panel.n_heads.slider
    assert slider.focusPolicy() == Qt.FocusPolicy.StrongFocus  # the wheel itself never gives focus
    slider.setFocus()
    QApplication.processEvents()
    start = panel.config().n_heads
    wheel(slider, 1)
    assert panel.config().n_heads != start
