"""Does the app's timer agree with torch.utils.benchmark on the same call?

For each config, in one process: the app's `measure()` median of the whole-layer forward, and
`torch.utils.benchmark.Timer(...).blocked_autorange().median` of the same call (same threads), taken in
alternating blocks (app, reference, app, reference, ... --blocks of each) so that drift on a shared machine
hits both alike; each block's ratio is app / the reference block next to it, and the row gives their median
and range. Prints a table, or with --json a list of {config, app_ms, reference_ms, ratio, ratios}.
Target ([live]): every median ratio within 0.95-1.05.
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

from core.config import AttentionConfig  # noqa: E402
from core.layer_timing import allocate  # noqa: E402
from core.timing import measure  # noqa: E402

CONFIGS = [
    AttentionConfig(d_model=256, n_heads=4, seq_len=128),
    AttentionConfig(d_model=768, n_heads=12, seq_len=256),
    AttentionConfig(d_model=768, n_heads=12, n_kv_heads=4, seq_len=512, causal=True),
    AttentionConfig(d_model=1024, n_heads=16, n_kv_heads=2, seq_len=1024),
    AttentionConfig(d_model=2048, n_heads=16, n_kv_heads=4, seq_len=2048, causal=True),
    AttentionConfig(d_model=4096, n_heads=32, n_kv_heads=8, seq_len=1024, phase="decode"),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--budget", type=float, default=0.4, help="seconds per block")
    ap.add_argument("--blocks", type=int, default=5, help="blocks of each timer, alternating (at least 5)")
    args = ap.parse_args()
    device = torch.device("cpu")
    rows = []
    for cfg in CONFIGS:
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
                refs.append(timer.blocked_autorange(min_run_time=args.budget).median * 1e3)
        ratios = sorted(a / r for a, r in zip(apps, refs, strict=True))
        rows.append({
            "config": cfg.to_dict(),
            "app_ms": round(statistics.median(apps), 4),
            "reference_ms": round(statistics.median(refs), 4),
            "ratio": round(statistics.median(ratios), 4),
            "ratios": [round(x, 4) for x in ratios],
        })
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        for r in rows:
            c = r["config"]
            print(f"d={c['d_model']:5} H={c['n_heads']:3} K={c['n_kv_heads']:3} T={c['seq_len']:5} {c['phase']:8}"
                  f" app {r['app_ms']:9.3f} ms  ref {r['reference_ms']:9.3f} ms  ratio {r['ratio']:.3f} "
                  f"(blocks {min(r['ratios']):.3f}-{max(r['ratios']):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
