"""Process start to the first painted window, and to the first heatmaps ([live]'s bench/first_window.py).

Each run starts a fresh Python process (offscreen Qt unless DISPLAY is set) that builds the app's window as
sandbox/app.py does and reports, from a 1 ms QTimer, when the window first painted (a paint event reached it)
and when its first heatmaps arrived (last_heatmaps set). The first run is cold (files not in the page cache
yet), the others warm; the figures include the interpreter's start and every import. --json prints the rows.
Targets ([live]): first window <= 1.0 s warm, first heatmaps <= 2.5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = r"""
import sys, time
start = float(sys.argv[1])
sys.path.insert(0, sys.argv[2])
from PySide6.QtCore import QEvent, QObject, QSettings, QTimer
from PySide6.QtWidgets import QApplication
from sandbox.process_runner import ProcessRunner
runner = ProcessRunner()  # as sandbox/app.py does: the worker starts before the window's imports
app = QApplication([])
from sandbox.main_window import MainWindow
seen = {}
class Paints(QObject):
    def eventFilter(self, obj, event):
        if event.type() == QEvent.Type.Paint and "window" not in seen:
            seen["window"] = time.time() - start
        return False
w = MainWindow(runner=runner, settings=QSettings(sys.argv[3], QSettings.Format.IniFormat), quit_wait_s=1.0)
paints = Paints()
w.installEventFilter(paints)
w.show()
def poll():
    if "heatmaps" not in seen and getattr(w, "last_heatmaps", None) is not None:
        seen["heatmaps"] = time.time() - start
    if "window" in seen and "heatmaps" in seen:
        print(f"{seen['window']:.4f} {seen['heatmaps']:.4f}", flush=True)
        w.close()
        app.quit()
timer = QTimer()
timer.timeout.connect(poll)
timer.start(1)
app.exec()
"""


def one_run(settings: Path) -> tuple[float, float]:
    env = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")}
    start = time.time()
    out = subprocess.run([sys.executable, "-c", CHILD, f"{start:.6f}", str(ROOT), str(settings)], env=env,
                         capture_output=True, text=True, timeout=300, check=True).stdout.split()
    return float(out[-2]), float(out[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=4, help="the first is cold, the others warm")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    settings = Path("/tmp/first_window_settings.ini")
    settings.unlink(missing_ok=True)
    rows = []
    for i in range(args.runs):
        window_s, heatmaps_s = one_run(settings)
        rows.append({"run": i + 1, "warm": i > 0, "first_window_s": window_s, "first_heatmaps_s": heatmaps_s})
        print(f"run {i + 1} ({'warm' if i else 'cold'}): first window {window_s:.2f} s, first heatmaps "
              f"{heatmaps_s:.2f} s", flush=True)
    if args.json:
        print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
