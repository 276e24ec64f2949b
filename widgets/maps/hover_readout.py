"""A one-line readout of what the mouse is over, back to its hint once the mouse leaves the view."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QLabel, QWidget


class HoverReadout(QLabel):
    def __init__(self, hint: str, parent: QWidget | None = None) -> None:
        super().__init__(hint, parent)
        self.hint = hint
        self.setWordWrap(True)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

    def watch(self, view: QWidget) -> None:
        """Show the hint again whenever the mouse leaves `view`."""
        view.installEventFilter(self)

    def reset(self) -> None:
        if self.text() != self.hint:
            self.setText(self.hint)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if event.type() == QEvent.Type.Leave:
            self.reset()
        return False
