"""Real models in the real window (offscreen, the threaded runner, a fresh process), as a user meets them:

- warm_imports_s: the background import of transformers, which starts once the window has rested 5 s
  (or the mouse reaches the Model box), timed from its start;
- open_to_heatmaps_s: choosing SmolLM2-135M (its cache already made) until its heatmaps are shown;
- layer_change_ms: the Layer box moved to another layer until that layer's heatmaps are shown
  (median of 8; nothing is timed again: timing runs random inputs of the same shapes);
- pool_change_ms: n_kv_heads 3 -> 1 in the chosen layer until the changed heads are shown (median of 4).
Prints JSON with --json. Run it twice: the first run of a fresh machine also makes SmolLM2's cache.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from PySide6.QtWidgets import QApplication  # noqa: E402

from bench.live_latency import spin  # noqa: E402
from sandbox.runner.thread_runner import ComputeRunner  # noqa: E402
from sandbox.window.main_window import OPENING_CONFIG, MainWindow  # noqa: E402
from sandbox.window.qt_messages import quiet_offscreen_messages  # noqa: E402

TEXT = "The chef who trained in Lucknow cooked biryani in a copper pot for the whole family"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--no-warm", action="store_true", help="measure without the background import")
    args = ap.parse_args()
    quiet_offscreen_messages()
    app = QApplication.instance() or QApplication([])
    runner = ComputeRunner()
    window = MainWindow(runner=runner, settings=None, config=OPENING_CONFIG, text=TEXT)
    if args.no_warm:
        window.warm_timer.timeout.disconnect(runner.warm_up_models)
        window.models.picker.reaching.disconnect(runner.warm_up_models)
    window.resize(1280, 800)
    window.show()
    spin(app, lambda: runner.is_idle() and window.last_timing is not None, 120)
    warm_s = 0.0
    if not args.no_warm:
        spin(app, lambda: runner._warm_thread is not None, 30)  # the user rests: the import starts
        t0 = time.perf_counter()
        spin(app, lambda: runner.wait_warm(0.0), 60)
        warm_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    window.models.load("smollm2-135m")
    spin(app, lambda: window.last_heatmaps is not None and window.last_heatmaps.model is not None
         and window.view_is_current(), 120)
    open_s = time.perf_counter() - t0
    spin(app, runner.is_idle, 120)  # its shapes' timing, once
    layer_ms = []
    for layer in (3, 7, 12, 18, 22, 25, 27, 29):
        t0 = time.perf_counter()
        window.models.picker.layer.setValue(layer)
        spin(app, lambda layer=layer: window.view_is_current() and window.last_heatmaps.model.layer == layer)
        layer_ms.append((time.perf_counter() - t0) * 1e3)
        spin(app, runner.is_idle)
    pool_ms = []
    for _ in range(4):
        panel = window.config_panel
        for kv in (0, 1):  # slider index 0: 1 KV head; back to 3 after each measure
            t0 = time.perf_counter()
            panel.n_kv_heads.slider.setValue(kv if kv == 0 else panel.n_kv_heads.slider.maximum())
            spin(app, window.view_is_current)
            if kv == 0:
                pool_ms.append((time.perf_counter() - t0) * 1e3)
            spin(app, runner.is_idle)
    row = {"warm_imports_s": round(warm_s, 2), "open_to_heatmaps_s": round(open_s, 2),
           "layer_change_ms": round(statistics.median(layer_ms), 1), "layer_change_max_ms": round(max(layer_ms), 1),
           "pool_change_ms": round(statistics.median(pool_ms), 1), "tokens": len(window.last_heatmaps.tokens)}
    window.close()
    print(json.dumps(row) if args.json else row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
