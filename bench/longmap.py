"""How long a long map takes and how much memory it holds, on this machine's CPU (or the GPU with --device).

Cases: T = 2,048, 4,096 and 8,192 tokens of one layer of SmolLM2-135M (layer 13, the first that gives the first
token most of its attention: its forward runs 14 layers first) over the shipped long text, and a random-weight
Gemma 3 27B-shaped layer, local (layer 0, W = 1,024) and global (layer 5), over seeded inputs. Each case runs in a
fresh process (so its peak memory is its own): the seconds to get the layer's queries and keys (the model's
forward, or drawing and projecting the inputs), the seconds of the map itself (1,024 cells a side, max pooled),
and the process's peak resident memory above what it held once torch (and the model) had loaded (ru_maxrss).
--json prints the rows. --tokens 32768 adds the longest input (the GPU check runs it).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
import torch
from core.long.map import block_for, long_map
case, T, device = sys.argv[2], int(sys.argv[3]), torch.device(sys.argv[4])
def rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
if case == "smollm2":
    from core.long.inputs import model_inputs
    from core.models.source import load_model
    from resources import long_text
    m = load_model("smollm2-135m")
    ids = m.tokenizer(long_text())["input_ids"][:T]
    base = rss()
    t0 = time.perf_counter()
    layer = int(sys.argv[5])
    li = model_inputs(m, ids, layer, [])
    what = f"SmolLM2-135M layer {layer}"
else:
    from core.long.inputs import design_inputs
    from core.arch.presets import find_preset
    from core.arch.config import AttentionConfig
    cfg = AttentionConfig(**{**find_preset("gemma-3-27b").fields, "seq_len": T})
    layer = 0 if case == "gemma3-local" else 5
    base = rss()
    t0 = time.perf_counter()
    li = design_inputs(cfg, cfg.layer_spec(layer), T, device=device)
    what = f"Gemma 3 27B-shaped layer {layer} ({cfg.layer_spec(layer).kind_label}), random weights"
q, k = li.q.to(device), li.k.to(device)
if device.type == "cuda":
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
inputs_s = time.perf_counter() - t0
t1 = time.perf_counter()
mp = long_map(q, k, li.rule, block_for(T, 1024), "max")
if device.type == "cuda":
    torch.cuda.synchronize()
map_s = time.perf_counter() - t1
row = {"case": what, "tokens": T, "device": device.type, "inputs_s": round(inputs_s, 3), "map_s": round(map_s, 3),
       "total_s": round(inputs_s + map_s, 3), "peak_rss_growth_mb": round((rss() - base) / 2**20, 1),
       "largest_chunk_mb": round(mp.peak_chunk_bytes / 2**20, 1), "heads": q.shape[0], "threads": torch.get_num_threads()}
if device.type == "cuda":
    row["peak_cuda_mb"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
print(json.dumps(row))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--tokens", type=int, nargs="*", default=[2048, 4096, 8192])
    ap.add_argument("--cases", nargs="*", default=["smollm2", "gemma3-local", "gemma3-global"])
    ap.add_argument("--smollm2-layer", type=int, default=13, help="SmolLM2's layer (its forward runs every one before)")
    args = ap.parse_args()
    rows = []
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for case in args.cases:
        for T in args.tokens:
            if case == "smollm2" and T > 8192:
                continue  # SmolLM2 reads at most 8,192 tokens
            out = subprocess.run([sys.executable, "-c", CHILD, str(ROOT), case, str(T), args.device,
                                  str(args.smollm2_layer)],
                                 capture_output=True, text=True, env=env, timeout=3600)
            if out.returncode:
                rows.append({"case": case, "tokens": T, "error": out.stderr.strip().splitlines()[-1:]})
            else:
                rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
            if not args.json:
                r = rows[-1]
                print(r if "error" in r else f"{r['case']:<62} T={r['tokens']:>6,}  inputs {r['inputs_s']:7.2f} s  "
                      f"map {r['map_s']:7.2f} s  total {r['total_s']:7.2f} s  peak +{r['peak_rss_growth_mb']:7.1f} MB "
                      f"(largest chunk {r['largest_chunk_mb']} MB)", flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
