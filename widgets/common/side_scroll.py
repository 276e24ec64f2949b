"""A vertically scrolling side panel that is never clipped sideways: it asks for as much width as
its contents need (their minimum) and scrolls only up and down."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QScrollArea, QWidget


class SideScroll(QScrollArea):
    """min_width: the width it keeps even when its contents need less, so that controls do not move
    under the mouse as warnings or long numbers come and go."""

    def __init__(self, content: QWidget, parent: QWidget | None = None, min_width: int = 470) -> None:
        super().__init__(parent)
        self._floor = min_width
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
        need = max(need, self._floor)
        if need != self.minimumWidth():
            self.setMinimumWidth(need)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if watched is self.widget() and event.type() == QEvent.Type.LayoutRequest:
            self._fit_width()  # new text (a warning, a model's figures) may need more room
        return False
