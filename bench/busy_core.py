"""A CPU timing while another process keeps one core busy: the app's figure against its idle figure.

For a small layer (d_model 512, 8 heads, T 64, float32 by default: the shapes where OpenMP's barriers dominate),
each round times it four ways in one process: idle with the app's choice of threads (core/timing/cpu_load.py: the
cores no other runnable thread holds) and with torch's default (every core); then with a second process
spinning on one core, both again. It prints the medians and each busy figure over its idle one; the app's
should stay within 2x, torch's default is what the app used to show. --json prints the rows.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.arch.config import AttentionConfig  # noqa: E402
from core.timing.cpu_load import others_running  # noqa: E402
from core.timing.layer import measure_layer, run_timing  # noqa: E402


def both(cfg: AttentionConfig, budget: float) -> tuple[float, int, float]:
    """(the app's median ms, the threads it chose, torch's default threads' median ms) for cfg's layer."""
    cpu = torch.device("cpu")
    app = run_timing(cfg, cpu, budget_s=budget, include_qkv=False)
    default = measure_layer(cfg, cpu, budget_s=budget, include_qkv=False)
    return app.layer.median_ms, app.threads or 0, default.layer.median_ms


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--d-model", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget", type=float, default=0.5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    cfg = AttentionConfig(d_model=args.d_model, n_heads=args.heads, seq_len=args.seq_len, causal=True)
    print(f"# d_model {cfg.d_model}, {cfg.n_heads} heads, T {cfg.seq_len}, {cfg.dtype}; torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads by default")
    rows = []
    for i in range(args.rounds):
        idle_app, idle_threads, idle_default = both(cfg, args.budget)
        burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            while others_running() < 1:
                pass  # until the burner is running
            busy_app, busy_threads, busy_default = both(cfg, args.budget)
        finally:
            burner.kill()
            burner.wait()
        row = {"round": i + 1, "idle_app_ms": idle_app, "idle_threads": idle_threads, "idle_default_ms": idle_default,
               "busy_app_ms": busy_app, "busy_threads": busy_threads, "busy_default_ms": busy_default,
               "app_busy_over_idle": busy_app / idle_app, "default_busy_over_idle": busy_default / idle_default}
        rows.append(row)
        print(f"round {i + 1}: idle app {idle_app:.3f} ms ({idle_threads} thread{'s' if idle_threads > 1 else ''}), "
              f"default {idle_default:.3f} ms | "
              f"busy app {busy_app:.3f} ms ({busy_threads} thread{'s' if busy_threads > 1 else ''}) "
              f"x{row['app_busy_over_idle']:.2f}, default {busy_default:.3f} ms x{row['default_busy_over_idle']:.2f}",
              flush=True)
    if args.json:
        print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
