"""The window a user sees while the real one is built: painted within half a second of the start.

Importing the main window (pyqtgraph, numpy, the widgets) and building it take about a second on a
2-core machine, and the worker's torch import two; this plain Qt window, in the saved geometry, says
what is happening meanwhile and is replaced by the main window as soon as that is built."""

from __future__ import annotations

import time

from PySide6.QtCore import QByteArray, QSettings, Qt
from PySide6.QtGui import QPaintEvent
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget


class StartWindow(QWidget):
    def __init__(self, settings: QSettings | None = None) -> None:
        super().__init__()
        self.setWindowTitle("Attention Sandbox — starting")  # not the main window's title: scripts look for that
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)  # gone once the main window has taken its place
        self.painted_at: float | None = None  # time.time() of the first paint
        geometry = settings.value("geometry") if settings is not None else None
        if not (isinstance(geometry, QByteArray) and self.restoreGeometry(geometry)):
            self.resize(1280, 800)
        screen = self.screen().availableGeometry() if self.screen() is not None else None
        if screen is not None and screen.width() >= 100:
            self.resize(min(self.width(), screen.width()), min(self.height(), screen.height()))
        title = QLabel("Attention Sandbox")
        title.setStyleSheet("font-size: 20px; font-weight: bold;")
        note = QLabel("Starting: building the window, while the compute worker loads torch…")
        note.setStyleSheet("color: #6b7280;")
        # No busy bar: the imports that follow hold the event loop, and a bar that never moves looks hung.
        lay = QVBoxLayout(self)
        lay.addStretch(1)
        for w in (title, note):
            lay.addWidget(w, 0, Qt.AlignmentFlag.AlignHCenter)
        lay.addStretch(1)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 (Qt's name)
        if self.painted_at is None:
            self.painted_at = time.time()
        super().paintEvent(event)
