"""Where controllers tell the user something: the status bar for what happened, a non-blocking dialog for what went
wrong. One object the window hands to every controller, so none needs the window itself."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMainWindow, QMessageBox, QStatusBar, QWidget


class Notices:
    def __init__(self, window: QMainWindow) -> None:
        self.parent: QWidget = window  # dialogs and file pickers open over it
        self.bar: QStatusBar = window.statusBar()
        self.last_alert = ""  # tests read what the user was last told had failed

    def status(self, text: str, ms: int = 0) -> None:
        """A message in the status bar, for ms milliseconds (0: until the next one)."""
        self.bar.showMessage(text, ms)

    def alert(self, title: str, text: str) -> None:
        """Tell the user something went wrong, without blocking."""
        self.last_alert = text
        self.bar.showMessage(f"{title}: {text}", 10000)
        box = QMessageBox(QMessageBox.Icon.Warning, title, text, QMessageBox.StandardButton.Ok, self.parent)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()
