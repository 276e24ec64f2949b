"""Launch the desktop app."""

from __future__ import annotations

import gc
import logging
import os
import sys

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

from sandbox.logfile import setup_log_file


def no_display_reason() -> str:
    """On Linux without a display Qt aborts the process; say what to do instead."""
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                                                 or os.environ.get("QT_QPA_PLATFORM")):
        return ("no display found: run the app in a desktop session (or under xvfb-run); for pictures without a "
                "window use `attention-sandbox snapshot --out DIR`, for numbers `attention-sandbox report`.")
    return ""


def run_app(argv: list[str] | None = None) -> int:
    reason = no_display_reason()
    if reason:
        print(f"attention-sandbox: {reason}", file=sys.stderr)
        return 2
    from sandbox.process_runner import ProcessRunner

    runner = ProcessRunner()  # first: the worker loads torch while this process loads Qt and the widgets
    from sandbox.main_window import MainWindow

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    setup_log_file()
    app = QApplication.instance() or QApplication(argv or sys.argv[:1])
    app.setApplicationName("Attention Sandbox")
    app.setOrganizationName("AttentionSandbox")
    window = MainWindow(runner=runner, settings=QSettings("AttentionSandbox", "AttentionSandbox"), quit_wait_s=1.0)
    window.show()
    code = app.exec()
    if not window.worker_finished:  # a kernel call still runs on the worker: quit now, not when it ends
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    # Tear the window down while the QApplication still exists: left to the interpreter's exit,
    # pyqtgraph's items can outlive Qt and the process ends in a segmentation fault.
    window.deleteLater()
    del window
    app.processEvents()
    gc.collect()
    return code
