"""Time to score every head of every layer of SmolLM2-135M on the induction probe (forward with
attentions included, model already loaded), on this machine. Target: under 5 s."""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.models.head_roles import all_layer_scores, induction_probe_ids  # noqa: E402
from core.models.inspect import encode_ids, run  # noqa: E402
from core.models.source import load_model  # noqa: E402


def main() -> int:
    m = load_model("smollm2-135m")
    ids, repeat = induction_probe_ids(m.tokenizer.vocab_size, seed=0, bos=m.tokenizer.bos_token_id)
    enc = encode_ids(m, ids)
    times, score_only = [], []
    for _ in range(5):
        t0 = time.perf_counter()
        out = run(m, enc, 0)
        t1 = time.perf_counter()
        scores = all_layer_scores(out.attentions, ids, repeat)
        t2 = time.perf_counter()
        times.append(t2 - t0)
        score_only.append(t2 - t1)
    print(json.dumps({"model": m.name, "tokens": len(ids), "heads": int(scores["induction"].size),
                      "median_s": round(statistics.median(times), 3),
                      "scoring_only_median_s": round(statistics.median(score_only), 3),
                      "best_induction": round(float(scores["induction"].max()), 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
