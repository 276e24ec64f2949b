"""Process start to the first painted window, and to the first heatmaps.

Each run starts a fresh Python process (offscreen Qt unless DISPLAY is set) that opens the app's windows
with sandbox/window/app.py's open_windows and reports when the start window first painted (its first paint event),
when the main window that replaces it first painted, and, from a 1 ms QTimer, when its first heatmaps
arrived (last_heatmaps set). The first run is cold (files not in the page cache
yet), the others warm; the figures include the interpreter's start and every import. --json prints the rows.
Targets: first window <= 1.0 s warm, first heatmaps <= 2.5 s.
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
from sandbox.runner.worker_child import start_worker
main = start_worker("main")  # as sandbox/window/app.py does: the worker starts before every other import
from PySide6.QtCore import QEvent, QObject, QSettings, QTimer
from PySide6.QtWidgets import QApplication
app = QApplication([])
from sandbox.window.app import open_windows
w, first = open_windows(app, QSettings(sys.argv[3], QSettings.Format.IniFormat), main)
seen = {"start": first.painted_at - start}
class Paints(QObject):
    def eventFilter(self, obj, event):
        if event.type() == QEvent.Type.Paint and "window" not in seen:
            seen["window"] = time.time() - start
        return False
paints = Paints()
w.installEventFilter(paints)  # shown, not yet painted: open_windows returns before the event loop runs
def poll():
    if "heatmaps" not in seen and getattr(w, "last_heatmaps", None) is not None:
        seen["heatmaps"] = time.time() - start
    if "window" in seen and "heatmaps" in seen:
        print(f"{seen['start']:.4f} {seen['window']:.4f} {seen['heatmaps']:.4f}", flush=True)
        w.close()
        app.quit()
timer = QTimer()
timer.timeout.connect(poll)
timer.start(1)
app.exec()
"""


def one_run(settings: Path) -> tuple[float, float, float]:
    env = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")}
    start = time.time()
    out = subprocess.run([sys.executable, "-c", CHILD, f"{start:.6f}", str(ROOT), str(settings)], env=env,
                         capture_output=True, text=True, timeout=300, check=True).stdout.split()
    return float(out[-3]), float(out[-2]), float(out[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=4, help="the first is cold, the others warm")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    settings = Path("/tmp/first_window_settings.ini")
    settings.unlink(missing_ok=True)
    rows = []
    for i in range(args.runs):
        start_s, window_s, heatmaps_s = one_run(settings)
        rows.append({"run": i + 1, "warm": i > 0, "first_window_s": start_s, "main_window_s": window_s,
                     "first_heatmaps_s": heatmaps_s})
        print(f"run {i + 1} ({'warm' if i else 'cold'}): first window (the start window) {start_s:.2f} s, main "
              f"window {window_s:.2f} s, first heatmaps {heatmaps_s:.2f} s", flush=True)
    if args.json:
        print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
