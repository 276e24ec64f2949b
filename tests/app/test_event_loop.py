"""The app runs Qt's own event loop, where a due timer is not kept waiting behind chained posted events
(sandbox/__init__.py says why). Each case is a fresh process: the loop is chosen when the QApplication is made."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHAIN = r"""
import sys
sys.path.insert(0, sys.argv[1])
import sandbox  # as every entry point: chooses the loop
from PySide6.QtCore import QEventLoop, QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QApplication
app = QApplication([])
print(app.eventDispatcher().metaObject().className())
seq = []
class Chain(QObject):
    link = Signal(int)
    def __init__(self):
        super().__init__()
        self.link.connect(self.step, Qt.ConnectionType.QueuedConnection)
    def step(self, k):  # a posted event that posts the next one, once the timer is due
        seq.append("e")
        while timer.remainingTime() > 0:
            pass
        if k > 1:
            self.link.emit(k - 1)
        else:
            loop.quit()
chain = Chain()
timer = QTimer()
timer.setTimerType(Qt.TimerType.PreciseTimer)
timer.setInterval(1)
timer.timeout.connect(lambda: seq.append("t"))
timer.start()
loop = QEventLoop()
QTimer.singleShot(0, lambda: chain.link.emit(6))
loop.exec()
print("".join(seq))
"""


def run_chain(no_glib: str | None) -> tuple[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "QT_NO_GLIB"}
    env["QT_QPA_PLATFORM"] = "offscreen"
    if no_glib is not None:
        env["QT_NO_GLIB"] = no_glib
    out = subprocess.run([sys.executable, "-c", CHAIN, str(ROOT)], env=env, capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    return out[0], out[1]


def test_a_due_timer_runs_between_chained_events():
    dispatcher, seq = run_chain(None)
    assert "Glib" not in dispatcher
    assert seq.count("e") == 6, seq
    assert "ee" not in seq, f"two posted events ran back to back while the timer was due: {seq}"


def test_glibs_loop_keeps_the_timer_waiting():
    """The control: what the app's loop avoids (QT_NO_GLIB set empty brings GLib's loop back)."""
    dispatcher, seq = run_chain("")
    if "Glib" not in dispatcher:
        pytest.skip(f"this Qt has no GLib loop ({dispatcher})")
    assert "ee" in seq, seq
