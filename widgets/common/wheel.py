"""Controls that take the mouse wheel only when they have keyboard focus.

A slider or combo box that passes under the cursor while the user scrolls a panel would otherwise
take the remaining wheel ticks (and start a recompute). The usual Qt remedy: focus policy
StrongFocus (the wheel never gives focus), and while unfocused the wheel goes to the scroll area
around the control. It is handed to that area explicitly rather than ignored: Qt propagates only
spontaneous wheel events to parents, and handing it over behaves the same for both kinds.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QApplication,
    QComboBox,
    QDoubleSpinBox,
    QSlider,
    QSpinBox,
    QWidget,
)


def enclosing_scroll_area(widget: QWidget) -> QAbstractScrollArea | None:
    parent = widget.parentWidget()
    while parent is not None and not isinstance(parent, QAbstractScrollArea):
        parent = parent.parentWidget()
    return parent


class _FocusWheel:
    def _init_focus_wheel(self) -> None:
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # type: ignore[attr-defined]

    def wheelEvent(self, event: QWheelEvent) -> None:  # noqa: N802 (Qt's name)
        if self.hasFocus():  # type: ignore[attr-defined]
            super().wheelEvent(event)  # type: ignore[misc]
            return
        area = enclosing_scroll_area(self)  # type: ignore[arg-type]
        if area is None:
            event.ignore()
            return
        viewport = area.viewport()
        pos = QPointF(viewport.mapFromGlobal(event.globalPosition().toPoint()))
        QApplication.sendEvent(viewport, QWheelEvent(
            pos, event.globalPosition(), event.pixelDelta(), event.angleDelta(), event.buttons(),
            event.modifiers(), event.phase(), event.inverted()))
        event.accept()


class FocusSlider(_FocusWheel, QSlider):
    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._init_focus_wheel()


class FocusCombo(_FocusWheel, QComboBox):
    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._init_focus_wheel()


class FocusSpin(_FocusWheel, QSpinBox):
    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._init_focus_wheel()


class FocusDoubleSpin(_FocusWheel, QDoubleSpinBox):
    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._init_focus_wheel()
