"""The full soak: N random user actions on the real window, offscreen (sandbox/window/soak.py).
Prints actions, seconds, rss_growth_mb, stale_views, errors (and more) as JSON with --json.
Pass criteria: no crash, no Qt warning, no thread left, no stale view, RSS growth < 20 MB."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from PySide6.QtWidgets import QApplication  # noqa: E402

from sandbox.window.app import tear_down
from sandbox.window.main_window import OPENING_CONFIG, MainWindow  # noqa: E402
from sandbox.window.soak import Soak, threads_left  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--actions", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-models", action="store_true", help="skip real-model switches")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    app = QApplication.instance() or QApplication([])
    with tempfile.TemporaryDirectory() as tmp:
        w = MainWindow(settings=None, config=OPENING_CONFIG, timing_budget_s=0.01, max_timing_s=2.0)
        w.resize(1280, 800)
        w.show()
        soak = Soak(app, w, Path(tmp), seed=args.seed, models=not args.no_models)
        report = soak.run(args.actions, progress=lambda n: print(f"  {n} actions", file=sys.stderr, flush=True))
        tear_down(w)  # as the app does: pyqtgraph's items outliving Qt crashed the exit
        report.threads_left = threads_left()
    out = report.to_json()
    ok = (not report.errors and not report.qt_warnings and report.threads_left == 0 and report.stale_views == 0
          and report.rss_growth_mb < 20)
    out["pass"] = ok
    print(json.dumps(out, indent=1) if args.json else out)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
