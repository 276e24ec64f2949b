import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from hypothesis import HealthCheck, settings  # noqa: E402

import sandbox  # noqa: E402, F401 (Qt's own event loop, as the app has it, for every test's QApplication)

# `make test` runs a few hundred examples per property; the full run is
# HYPOTHESIS_PROFILE=full .venv/bin/python -m pytest tests/property (10,000 configurations).
settings.register_profile("ci", max_examples=300, deadline=None,
                          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
settings.register_profile("full", max_examples=10_000, deadline=None,
                          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_unconfigure(config):
    """Qt and pyqtgraph objects torn down by the interpreter's exit, in arbitrary order, can end a
    fully passing run in a segmentation fault (exit 139). Delete the windows while Qt lives, then
    leave without the interpreter's teardown, keeping pytest's exit status."""
    import sys

    if "PySide6.QtWidgets" not in sys.modules:
        return
    import gc

    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    if app is not None:
        for widget in QApplication.topLevelWidgets():
            widget.close()
            widget.deleteLater()
        app.processEvents()
        app.sendPostedEvents(None, 0)
        gc.collect()
    sys.stdout.flush()
    sys.stderr.flush()
    status = getattr(config, "_sandbox_exitstatus", None)
    if status is not None:
        os._exit(int(status))


def pytest_sessionfinish(session, exitstatus):
    session.config._sandbox_exitstatus = exitstatus
