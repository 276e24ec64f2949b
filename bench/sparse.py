"""DeepSeek's sparse attention (DSA: MLA + lightning indexer, DeepSeek-V3.2) and DeepSeek-V4's compressed layers
beside dense attention of the same widths and weights, in one process on this CPU.

DeepSeek-V4: V4-Flash's compressed sparse and heavily compressed layers (d_model 4096, one KV head of 512, window 128,
top-512) with --heads query heads (default 16 of its 64), beside the same layer reading every causal token.

The layer has V3.2's widths (d_model 7168, q_lora_rank 1536, latent 512 + rope 64, heads of 128 + 64 / 128, an
indexer of 64 heads of 128, top-2,048) with --heads query heads (default 16 of its 128, so a 4k prefill's per-head
scores fit a CPU's memory; --heads 128 runs the whole layer). Rows: the prefill of T = 4k tokens (the naive form under
the selection mask, against every causal key), and one decode step with 4k and 64k tokens cached (the indexer over
every cached token, then the absorbed form over the top-k latents, against the absorbed form over all of them).
Ratio: sparse / dense. --json prints the rows.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.arch.config import AttentionConfig  # noqa: E402
from core.kinds.dsa.layer import DSALayer  # noqa: E402
from core.kinds.dsa.spec import DSADims  # noqa: E402
from core.kinds.dsv4.layer import V4Layer  # noqa: E402
from core.kinds.dsv4.spec import V4Dims  # noqa: E402
from core.timing.timer import measure  # noqa: E402

PREFILL_T = (4096,)
DECODE_T = (4096, 65536)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heads", type=int, default=16, help="query heads (DeepSeek-V3.2 has 128; default 16)")
    ap.add_argument("--budget", type=float, default=0.5, help="seconds of repeats a measurement")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    device = torch.device("cpu")
    cfg = AttentionConfig(d_model=7168, n_heads=args.heads, widths=DSADims(), causal=True, seq_len=max(PREFILL_T))
    rows = []
    with torch.inference_mode():
        layer = DSALayer(cfg, device=device).eval()
        gen = torch.Generator().manual_seed(1)
        for T in PREFILL_T:
            x = torch.randn(1, T, cfg.d_model, generator=gen)
            row = {"layer": "dsa", "phase": "prefill", "T": T,
                   "sparse_ms": measure(lambda: layer(x), device, budget_s=args.budget).median_ms,  # noqa: B023
                   "dense_ms": measure(lambda: layer.dense(x), device, budget_s=args.budget).median_ms}  # noqa: B023
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
        x_new = torch.randn(1, 1, cfg.d_model, generator=gen)
        m = cfg.widths
        for T in DECODE_T:
            c = torch.randn(1, T, m.kv_lora_rank, generator=gen)  # (1, T, r_kv): the latent cache
            pe = torch.randn(1, T, m.qk_rope_head_dim, generator=gen)  # (1, T, r)
            keys = torch.randn(1, T, m.index_head_dim, generator=gen)  # (1, T, D_I): the index keys
            row = {"layer": "dsa", "phase": "decode", "T": T,
                   "sparse_ms": measure(lambda: layer.decode_sparse(x_new, c, pe, keys), device,  # noqa: B023
                                        budget_s=args.budget).median_ms,
                   "dense_ms": measure(lambda: layer.decode_absorbed(x_new, c, pe), device,  # noqa: B023
                                       budget_s=args.budget).median_ms}
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
        for compressor, ratio in (("csa", 4), ("hca", 128)):
            v4 = AttentionConfig(d_model=4096, n_heads=args.heads, causal=True, seq_len=max(PREFILL_T),
                                 widths=V4Dims(compressor=compressor, compress_ratio=ratio))
            layer4 = V4Layer(v4.d_model, v4.layer_spec(), device=device).eval()
            name = f"v4_{compressor}"
            for T in PREFILL_T:
                x = torch.randn(1, T, v4.d_model, generator=gen)
                row = {"layer": name, "phase": "prefill", "T": T,
                       "sparse_ms": measure(lambda: layer4(x), device, budget_s=args.budget).median_ms,  # noqa: B023
                       "dense_ms": measure(lambda: layer4.dense(x), device, budget_s=args.budget).median_ms}  # noqa: B023
                rows.append(row)
                print(json.dumps(row), file=sys.stderr)
            x_new = torch.randn(1, 1, v4.d_model, generator=gen)
            for T in DECODE_T:
                window = torch.randn(1, 128, 512, generator=gen)  # (1, W, D): the window's keys
                entries = torch.randn(1, T // ratio, 512, generator=gen)  # (1, n, D): the compressed entries
                index = torch.randn(1, T // ratio, 128, generator=gen) if compressor == "csa" else None  # (1, n, D_I)
                keys = torch.randn(1, T, 512, generator=gen)  # (1, T, D): every token's key, for the dense step
                row = {"layer": name, "phase": "decode", "T": T,
                       "sparse_ms": measure(lambda: layer4.decode_step(x_new, window, entries, index),  # noqa: B023
                                            device, budget_s=args.budget).median_ms,
                       "dense_ms": measure(lambda: layer4.decode_dense(x_new, keys), device,  # noqa: B023
                                           budget_s=args.budget).median_ms}
                rows.append(row)
                print(json.dumps(row), file=sys.stderr)
    for row in rows:
        row["sparse_vs_dense"] = row["sparse_ms"] / row["dense_ms"]
    out = {"heads": args.heads, "threads": torch.get_num_threads(), "index_topk": cfg.widths.index_topk, "rows": rows}
    if args.json:
        print(json.dumps(out))
    else:
        for r in rows:
            print(f"{r['layer']} {r['phase']:7s} T {r['T']:>6}: sparse {r['sparse_ms']:9.2f} ms, dense "
                  f"{r['dense_ms']:9.2f} ms, x{r['sparse_vs_dense']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
