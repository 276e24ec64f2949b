"""Cold load, cached load and one forward with attentions for 128 tokens, for each shipped model.

Each load runs in a fresh process (imports included, as a user starting the app sees it); "cold"
uses an empty cache folder, so SmolLM2 is dequantised from its GGUF file; "cached" reuses it.
Target: SmolLM2's cached load under 2 s. The one-time import of transformers is timed apart. Prints JSON with --json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import transformers  # noqa: F401  (the one-time import, timed apart from the load)
from core.models.source import load_model
from core.models.inspect import run, encode
import_s = time.perf_counter() - t0
t0 = time.perf_counter()
m = load_model(sys.argv[1])
load_s = time.perf_counter() - t0
ids = (m.tokenizer("The chef who trained in Lucknow cooked biryani. " * 40)["input_ids"])[:128]
text = m.tokenizer.decode(ids, skip_special_tokens=True)
enc = encode(m, text)
run(m, enc, 0)  # warm
times = []
for _ in range(5):
    t = time.perf_counter(); out = run(m, enc, 0); times.append(time.perf_counter() - t)
times.sort()
print(json.dumps({"import_s": import_s, "load_s": load_s, "forward_ms": times[2] * 1e3, "tokens": int(enc["input_ids"].shape[1]),
                  "layers_of_attention": len(out.attentions)}))
"""


def child(model: str, cache: str) -> dict:
    env = {**os.environ, "XDG_CACHE_HOME": cache, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", CHILD, model], capture_output=True, text=True, env=env, cwd=ROOT,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        for model in ("smollm2-135m", "minilm-l6"):
            cold = child(model, cache)
            cached = child(model, cache)
            rows.append({"model": model, "cold_load_s": round(cold["load_s"], 2), "cached_load_s": round(cached["load_s"], 2),
                         "transformers_import_s": round(cached["import_s"], 2),
                         "forward_with_attentions_ms": round(cached["forward_ms"], 1), "tokens": cached["tokens"]})
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        for r in rows:
            print(r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
