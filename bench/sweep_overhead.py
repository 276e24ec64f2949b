"""Overhead of a 12-point timed sweep through the runner against the same 12 timings taken directly.

Both sides run the same run_timing calls (budget 0.1 s per measurement, QKV comparison off, as the
sweep does); the sweep adds planning, counts, reports, progress signals and one worker job per
point. Target: under 10% extra. Prints JSON with --json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from PySide6.QtCore import QCoreApplication, QEventLoop  # noqa: E402

from core.arch.config import AttentionConfig  # noqa: E402
from core.study.sweep import SweepResult, plan_sweep  # noqa: E402
from core.timing.layer import run_timing  # noqa: E402
from sandbox.jobs.types import SweepJob  # noqa: E402
from sandbox.runner.thread_runner import ComputeRunner  # noqa: E402

BASE = AttentionConfig(d_model=512, n_heads=8, n_kv_heads=2, seq_len=256, causal=True)
VALUES = list(range(64, 64 * 12 + 1, 64))
BUDGET_S = 0.1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    app = QCoreApplication.instance() or QCoreApplication([])  # noqa: F841 (kept alive for the event loop)
    device = torch.device("cpu")
    points = plan_sweep(BASE, "seq_len", VALUES)
    run_timing(BASE, device, budget_s=BUDGET_S, include_qkv=False)  # warm the process once

    t0 = time.perf_counter()
    for p in points:
        run_timing(p.config, device, budget_s=BUDGET_S, include_qkv=False)
    direct_s = time.perf_counter() - t0

    runner = ComputeRunner()
    done = {}
    loop = QEventLoop()  # blocks the main thread like an idle GUI, instead of polling

    def finish(kind, payload) -> None:
        done["result"] = payload.result
        loop.quit()

    runner.done.connect(finish)
    t0 = time.perf_counter()
    runner.submit(SweepJob(1, points, "cpu", BUDGET_S, SweepResult("seq_len", timed=True)))
    if "result" not in done:
        loop.exec()
    sweep_s = time.perf_counter() - t0
    runner.shutdown()
    result = done["result"]
    out = {
        "points": len(points),
        "ok_points": len(result.ok_rows()),
        "direct_s": round(direct_s, 3),
        "sweep_s": round(sweep_s, 3),
        "overhead": round(sweep_s / direct_s - 1, 4),
    }
    print(json.dumps(out, indent=1) if args.json else out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
