import threading

import pytest
from PySide6.QtCore import QSettings

from core.arch.config import AttentionConfig
from sandbox.runner.process_runner import ProcessRunner
from sandbox.runner.thread_runner import ComputeRunner
from sandbox.window.main_window import MainWindow

SMALL = AttentionConfig(d_model=64, n_heads=8, n_kv_heads=2, seq_len=64, n_layers=2, causal=True)


def runner_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("sandbox-runner")]


@pytest.fixture
def settings(tmp_path):
    return QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)


@pytest.fixture
def make_window(qtbot, settings):
    """A main window; sync=True runs compute inside submit (no thread)."""
    made = []

    def make(sync=True, config=SMALL, text=None, use_settings=True, kind="thread", **kw):
        if sync or kind == "thread":
            runner = ComputeRunner(sync=sync, settle_s=0.0 if sync else 0.05)
        else:  # the app's runner: worker processes
            runner = ProcessRunner(settle_s=0.05)
        kw.setdefault("timing_budget_s", 0.002)
        w = MainWindow(runner=runner, settings=settings if use_settings else None, config=config, text=text, **kw)
        qtbot.addWidget(w)
        w.resize(1280, 800)
        w.show()
        made.append(w)
        return w

    yield make
    for w in made:
        w.close()
    assert runner_threads() == [], "a runner thread outlived its window"
    for w in made:
        if isinstance(w.runner, ProcessRunner):
            assert w.runner.worker_pids() == [], "a worker process outlived its window"


@pytest.fixture(params=["thread", "process"])
def async_kind(request):
    """The runner contract holds for the thread runner and for the app's process runner."""
    return request.param


@pytest.fixture(scope="session", autouse=True)
def _tear_down_qt_before_exit(qapp):
    """Delete every window while the QApplication still exists: left to the interpreter's exit,
    pyqtgraph items can outlive Qt and the test process ends in a segmentation fault."""
    yield
    import gc

    from PySide6.QtWidgets import QApplication

    for widget in QApplication.topLevelWidgets():
        widget.close()
        widget.deleteLater()
    qapp.processEvents()
    qapp.sendPostedEvents(None, 0)  # DeferredDelete
    qapp.processEvents()
    gc.collect()
