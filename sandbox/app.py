"""Launch the desktop app."""

from __future__ import annotations

import gc
import logging
import sys

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

from sandbox.logfile import setup_log_file


def run_app(argv: list[str] | None = None) -> int:
    from sandbox.main_window import MainWindow

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    setup_log_file()
    app = QApplication.instance() or QApplication(argv or sys.argv[:1])
    app.setApplicationName("Attention Sandbox")
    app.setOrganizationName("AttentionSandbox")
    window = MainWindow(settings=QSettings("AttentionSandbox", "AttentionSandbox"))
    window.show()
    code = app.exec()
    # Tear the window down while the QApplication still exists: left to the interpreter's exit,
    # pyqtgraph's items can outlive Qt and the process ends in a segmentation fault.
    window.deleteLater()
    del window
    app.processEvents()
    gc.collect()
    return code
