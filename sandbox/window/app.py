"""Launch the desktop app."""

from __future__ import annotations

import gc
import logging
import os
import sys
import time
from typing import Any

from PySide6.QtCore import QCoreApplication, QEvent, QEventLoop, QSettings
from PySide6.QtWidgets import QApplication, QWidget

from sandbox.runner.worker_child import WorkerChild, start_worker
from sandbox.window.logfile import setup_log_file
from sandbox.window.start_window import StartWindow


def no_display_reason() -> str:
    """On Linux without a display Qt aborts the process; say what to do instead."""
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                                                 or os.environ.get("QT_QPA_PLATFORM")):
        return ("no display found: run the app in a desktop session (or under xvfb-run); for pictures without a "
                "window use `attention-sandbox snapshot --out DIR`, for numbers `attention-sandbox report`.")
    return ""


def open_windows(app: QApplication, settings: QSettings | None, main: WorkerChild) -> tuple[Any, StartWindow]:
    """The start window first, painted; then the runner (adopting the main worker already started) and the
    main window, built and shown in its place (bench/first_window.py times both). Returns the main
    window, shown but not yet painted, and the start window, closed."""
    start = StartWindow(settings)
    start.show()
    deadline = time.monotonic() + 2.0  # a minimised or hidden start never paints: go on regardless
    while start.painted_at is None and time.monotonic() < deadline:  # painted before the slow imports begin
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)
    from sandbox.runner.process_runner import ProcessRunner
    from sandbox.window.main_window import MainWindow

    window = MainWindow(runner=ProcessRunner(main=main), settings=settings, quit_wait_s=1.0)
    window.show()
    start.close()
    keep_out_of_collections()
    return window, start


def keep_out_of_collections() -> None:
    """What is built by now lives as long as the app: gc.freeze() takes it out of the collector's generations,
    so a full collection, 100-240 ms over the 220,000 objects of a built window on this machine, never scans
    it again in the middle of a drag (collecting first would delay the first paint by as much)."""
    gc.freeze()


def run_app(argv: list[str] | None = None) -> int:
    reason = no_display_reason()
    if reason:
        print(f"attention-sandbox: {reason}", file=sys.stderr)
        return 2
    main = start_worker("main")  # first of all: the worker loads torch while this process loads Qt and the widgets
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    setup_log_file()
    app = QApplication.instance() or QApplication(argv or sys.argv[:1])
    app.setApplicationName("Attention Sandbox")
    app.setOrganizationName("AttentionSandbox")
    window, _start = open_windows(app, QSettings("AttentionSandbox", "AttentionSandbox"), main)
    code = app.exec()
    if not window.worker_finished:  # a kernel call still runs on the worker: quit now, not when it ends
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    tear_down(window)
    return code


def tear_down(window: QWidget) -> None:
    """Delete a window while the QApplication still exists: left to the interpreter's exit, pyqtgraph's items
    can outlive Qt and the process ends in a segmentation fault (the app, the benches and the soak)."""
    if window.isVisible():  # the app's window is closed already: its close event is not sent twice
        window.close()
    window.deleteLater()
    QApplication.processEvents()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    gc.collect()
