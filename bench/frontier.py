"""The KV frontier on SmolLM2-135M and all-MiniLM-L6-v2 (never from the cache).

--protocol window (default): the full four-method frontier: wall time, points, and where the time goes (the
unchanged runs, the latent fit, each method's points). Target: SmolLM2 under 90 s with 6 points per method on
2,048 evaluation tokens.

--protocol compress: kvpress's protocol on SmolLM2, every eviction press at 4 ratios, the prefill shared across
them: wall time per point and for the whole chart (target: under 60 s), each method's loss change at each ratio,
and against the same points run as kvpress runs them (a prefill of the context for every point), measured on one
point a method in the same run."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from core.models.frontier.run import run_frontier  # noqa: E402
from core.models.source import load_model  # noqa: E402
from resources import CALIB_TEXT, EVAL_TEXT  # noqa: E402


def window(args: argparse.Namespace) -> dict:
    out = {"threads": torch.get_num_threads(), "models": {}}
    for key in args.models.split(","):
        m = load_model(key)
        t0 = time.perf_counter()
        r = run_frontier(m, EVAL_TEXT.read_text(), CALIB_TEXT.read_text(), n_samples=args.samples)
        wall = time.perf_counter() - t0
        by_method: dict[str, float] = {}
        for p in r.points:
            by_method[p.method] = by_method.get(p.method, 0.0) + p.seconds
        fit = wall - r.baseline.seconds - sum(by_method.values())
        out["models"][key] = {
            "wall_s": round(wall, 1), "points": len(r.points), "eval_tokens": r.eval_tokens,
            "unchanged_runs_s": round(r.baseline.seconds, 1), "latent_fit_s": round(fit, 1),
            "seconds_by_method": {k: round(v, 1) for k, v in by_method.items()},
            "seconds_per_point": round(sum(by_method.values()) / max(1, len(r.points)), 2),
            "points_by_method": {k: sum(p.method == k for p in r.points) for k in by_method},
        }
        print(f"{key}: {wall:.1f} s, {len(r.points)} points", file=sys.stderr, flush=True)
    return out


def compress(args: argparse.Namespace) -> dict:
    from core.models.evict.catalogue import PRESS_INFO, RATIOS
    from core.models.evict.continuation import continuation_loss
    from core.models.evict.run import CompressRun, run_compress

    m = load_model("smollm2-135m")
    text = EVAL_TEXT.read_text()
    t0 = time.perf_counter()
    r = run_compress(m, text)
    wall = time.perf_counter() - t0
    rows = []
    unshared = []
    for name in PRESS_INFO:
        mine = [p for p in r.points if p.method == name]
        # the reference: one point as kvpress runs it, its own prefill of the context and the continuation
        t1 = time.perf_counter()
        alone = CompressRun(m, text, (name,), (0.5,))
        alone.step(0)  # the prefill, and the unchanged cache's continuation (kvpress has none: taken off below)
        alone.step(1)
        both = time.perf_counter() - t1
        whole = [(v.key, v.value) for v in alone.prefill.views]
        t2 = time.perf_counter()
        continuation_loss(m, whole, alone.text.continuation, alone.text.length)
        unshared.append(both - (time.perf_counter() - t2))
        row = {"method": name, "points": len(mine), "seconds": round(sum(p.seconds for p in mine), 2),
               "s_per_point": round(sum(p.seconds for p in mine) / len(mine), 3),
               "unshared_point_s": round(unshared[-1], 2)}
        row.update({f"loss change @{ratio:g}": round(p.loss_change, 5) for ratio, p in zip(RATIOS, mine, strict=True)})
        rows.append(row)
        print(f"{name}: {row}", file=sys.stderr, flush=True)
    estimate = sum(unshared) / len(unshared) * len(r.points)
    rows.append({"method": "whole chart", "points": len(r.points), "seconds": round(wall, 1),
                 "prefill_and_unchanged_s": round(r.baseline.seconds, 2),
                 "s_per_point": round((wall - r.baseline.seconds) / len(r.points), 3),
                 "unshared_chart_s (estimate)": round(estimate, 1), "shared / unshared": round(wall / estimate, 3),
                 "baseline loss": round(r.baseline.loss, 5)})
    return {"threads": torch.get_num_threads(), "model": m.name, "rows": rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--protocol", choices=("window", "compress"), default="window")
    ap.add_argument("--models", default="smollm2-135m,minilm-l6")
    ap.add_argument("--samples", type=int, default=2)
    args = ap.parse_args()
    out = compress(args) if args.protocol == "compress" else window(args)
    print(json.dumps(out, indent=1) if args.json else out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
