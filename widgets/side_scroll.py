"""A vertically scrolling side panel that is never clipped sideways: it asks for as much width as
its contents need (their minimum) and scrolls only up and down."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QScrollArea, QWidget


class SideScroll(QScrollArea):
    def __init__(self, content: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidget(content)
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        content.installEventFilter(self)
        self._fit_width()

    def _fit_width(self) -> None:
        content = self.widget()
        if content is None:
            return
        need = content.minimumSizeHint().width() + self.verticalScrollBar().sizeHint().width() + 2 * self.frameWidth()
        if need != self.minimumWidth():
            self.setMinimumWidth(need)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if watched is self.widget() and event.type() == QEvent.Type.LayoutRequest:
            self._fit_width()  # new text (a warning, a model's figures) may need more room
        return False
