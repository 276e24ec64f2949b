"""Does the app's timer agree with torch.utils.benchmark on the same call?

For each config, in one process: the app's `measure()` median of the whole-layer forward, and
`torch.utils.benchmark.Timer(...).blocked_autorange().median` of the same call (same threads), taken in
alternating blocks (app, reference, app, reference, ... --blocks of each) so that drift on a shared machine
hits both alike; each block's ratio is app / the reference block next to it, and the row gives their median
and range. Prints a table, or with --json a list of {config, app_ms, reference_ms, ratio, ratios}.

--window adds the case the user sees: the real window (the app's worker processes, the GUI idle) times each
of the first --window-configs configs with Measure now, and the figure its timing panel shows (the layer
forward's median, on the thread count the timing chose and names) is compared with torch.utils.benchmark's
median of the same layer in this process on as many threads, again in alternating blocks.
Target: every median ratio within 0.95-1.05.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch
import torch.utils.benchmark as tb

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.arch.config import AttentionConfig  # noqa: E402
from core.kinds.standard.timing import allocate  # noqa: E402
from core.timing.timer import measure  # noqa: E402

CONFIGS = [
    AttentionConfig(d_model=256, n_heads=4, seq_len=128),
    AttentionConfig(d_model=768, n_heads=12, seq_len=256),
    AttentionConfig(d_model=768, n_heads=12, n_kv_heads=4, seq_len=512, causal=True),
    AttentionConfig(d_model=1024, n_heads=16, n_kv_heads=2, seq_len=1024),
    AttentionConfig(d_model=2048, n_heads=16, n_kv_heads=4, seq_len=2048, causal=True),
    AttentionConfig(d_model=4096, n_heads=32, n_kv_heads=8, seq_len=1024, phase="decode"),
]


def run_time(budget: float, app_ms: float) -> float:
    """The reference block's min_run_time: the budget, and at least as many calls as the app's block times (its
    min_reps, 5): at the budget alone a 0.43 s layer (d_model 2048, T 2048) got one call, a median of one sample."""
    return max(budget, 5 * app_ms / 1e3)


def reference_ms(cfg: AttentionConfig, threads: int, budget: float) -> float:
    """torch.utils.benchmark's median of the layer forward (the configured phase) on `threads` threads."""
    with torch.inference_mode():
        t = allocate(cfg, torch.device("cpu"))
        fn = (lambda: t.layer(t.x)) if cfg.phase == "prefill" else (  # noqa: E731
            lambda: t.layer.decode_step(t.x_new, t.k_cache, t.v_cache))
        timer = tb.Timer(stmt="fn()", globals={"fn": fn}, num_threads=threads)
        return timer.blocked_autorange(min_run_time=budget).median * 1e3


def window_rows(configs: list[AttentionConfig], blocks: int, budget: float) -> list[dict[str, object]]:
    """Measure now in the real window (worker processes, GUI idle) against the reference, block by block."""
    import os
    import time

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication

    from sandbox.runner.process_runner import ProcessRunner
    from sandbox.window.main_window import MainWindow

    QApplication.instance() or QApplication([])  # the window needs one; spin runs its event loop
    runner = ProcessRunner()
    runner.wait_ready(120)
    runner.warm_up_models()  # what the app does after 5 s idle (importing transformers): before, not amid, a block
    runner.wait_warm(300)

    def spin(cond, timeout_s: float = 300.0) -> None:
        """Until cond(), the GUI idle in its event loop as the app is while a timing runs: woken by the runner's idle
        signal, and at most four times a second to look (a 20 ms poll, until 2026-12-03, was 50 wakeups a second of
        this process on the two cores the timing measured)."""
        end = time.perf_counter() + timeout_s
        loop = QEventLoop()
        look = QTimer()
        look.setInterval(250)
        look.timeout.connect(loop.quit)
        runner.idle.connect(loop.quit)
        look.start()
        try:
            while not cond():
                if time.perf_counter() > end:
                    raise TimeoutError("the window did not finish")
                loop.exec()
        finally:
            look.stop()
            runner.idle.disconnect(loop.quit)

    rows = []
    window = MainWindow(runner=runner, settings=None, config=configs[0], live_timing=False, max_timing_s=None)
    window.show()
    try:
        for cfg in configs:
            window.config_panel.set_config(cfg)
            spin(lambda: window.view_is_current() and runner.is_idle())
            apps, refs, threads = [], [], set()
            for _ in range(blocks):
                window.last_timing = None
                window.request(force_timing=True)  # the user's Measure now
                spin(lambda: window.current_timing() is not None and runner.is_idle())
                result = window.current_timing().result
                apps.append(result.layer.median_ms)  # the timing panel's "Layer forward" figure
                threads.add(result.threads or torch.get_num_threads())
                refs.append(reference_ms(cfg, result.threads or torch.get_num_threads(), run_time(budget, apps[-1])))
            ratios = sorted(a / r for a, r in zip(apps, refs, strict=True))
            rows.append({"config": cfg.to_dict(), "case": "window", "threads": sorted(threads),
                         "app_ms": round(statistics.median(apps), 4), "reference_ms": round(statistics.median(refs), 4),
                         "ratio": round(statistics.median(ratios), 4), "ratios": [round(x, 4) for x in ratios]})
    finally:
        window.close()
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--budget", type=float, default=0.4, help="seconds per block")
    ap.add_argument("--blocks", type=int, default=9,  # at 5, the window's rows moved by up to 0.2 between runs
                    help="blocks of each timer, alternating (at least 5)")
    ap.add_argument("--window", action="store_true", help="add the in-window case (the displayed figure)")
    ap.add_argument("--only-window", action="store_true", help="the in-window case alone")
    ap.add_argument("--window-configs", type=int, default=3, help="how many of the configs the window times")
    args = ap.parse_args()
    device = torch.device("cpu")
    rows = []
    for cfg in [] if args.only_window else CONFIGS:
        with torch.inference_mode():
            t = allocate(cfg, device)
            if cfg.phase == "prefill":
                fn = lambda t=t: t.layer(t.x)  # noqa: E731
            else:
                fn = lambda t=t: t.layer.decode_step(t.x_new, t.k_cache, t.v_cache)  # noqa: E731
            timer = tb.Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
            apps, refs = [], []
            for _ in range(args.blocks):  # ABAB...: each app block beside its reference block
                apps.append(measure(fn, device, budget_s=args.budget, max_reps=1000).median_ms)
                refs.append(timer.blocked_autorange(min_run_time=run_time(args.budget, apps[-1])).median * 1e3)
        ratios = sorted(a / r for a, r in zip(apps, refs, strict=True))
        rows.append({
            "config": cfg.to_dict(),
            "app_ms": round(statistics.median(apps), 4),
            "reference_ms": round(statistics.median(refs), 4),
            "ratio": round(statistics.median(ratios), 4),
            "ratios": [round(x, 4) for x in ratios],
        })
    if args.window or args.only_window:
        rows += window_rows(CONFIGS[: args.window_configs], args.blocks, args.budget)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        for r in rows:
            c = r["config"]
            case = f"window, {'/'.join(map(str, r['threads']))} thr" if r.get("case") == "window" else "in process"
            print(f"{case:16} d={c['d_model']:5} H={c['n_heads']:3} K={c['n_kv_heads']:3} T={c['seq_len']:5} {c['phase']:8}"
                  f" app {r['app_ms']:9.3f} ms  ref {r['reference_ms']:9.3f} ms  ratio {r['ratio']:.3f} "
                  f"(blocks {min(r['ratios']):.3f}-{max(r['ratios']):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
