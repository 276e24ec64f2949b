"""The full four-method KV frontier on SmolLM2-135M and all-MiniLM-L6-v2 (never from the cache): wall time,
points, and where the time goes (the unchanged runs, the latent fit, each method's points).
Target: SmolLM2 under 90 s with 6 points per method on 2,048 evaluation tokens."""

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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--models", default="smollm2-135m,minilm-l6")
    ap.add_argument("--samples", type=int, default=2)
    args = ap.parse_args()
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
    print(json.dumps(out, indent=1) if args.json else out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
