"""Full against windowed attention: does a sliding window buy time on this device?

For T in 1k..16k at W = 1024 (CPU: stops once a T's measurements take longer than --max-s), the
attention core of one causal layer (B 1, H 8, K 2, h 64 by default) timed four ways in one process:
full causal SDPA (the reference), SDPA with an explicit T x T band mask (what the app runs), blockwise
SDPA (each block of W queries against its 2W keys, core/kinds/standard/band_kernel.py: what the app runs once T >= 2W
off CUDA), and flex_attention with a
sliding-window block mask under torch.compile (CUDA, or the CPU with --flex: about 25 s to compile per
shape there). Each row gives the band's share of the full causal FLOPs (our band convention) and, per
kernel, time / full time and that ratio over the FLOP ratio (1.0: the kernel turns saved FLOPs into
saved time exactly). --json prints the rows.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.arch.config import AttentionConfig  # noqa: E402
from core.device import resolve_device  # noqa: E402
from core.kinds.standard.band import causal_pairs_x2  # noqa: E402
from core.kinds.standard.band_kernel import blockwise_band_attention  # noqa: E402
from core.kinds.standard.layer import AttentionLayer  # noqa: E402
from core.kinds.standard.masking import sdpa_inputs  # noqa: E402
from core.timing.timer import measure  # noqa: E402


def flex_kernel(W: int, T: int, H: int, device: torch.device):
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    def band(b, h, q_idx, kv_idx):
        return (q_idx >= kv_idx) & (q_idx - kv_idx < W)

    mask = create_block_mask(band, B=None, H=None, Q_LEN=T, KV_LEN=T, device=device.type)
    compiled = torch.compile(flex_attention, dynamic=False)
    return lambda q, k, v: compiled(q, k, v, block_mask=mask, enable_gqa=True)


def time_kernels(T: int, W: int, H: int, K: int, h: int, device: torch.device, dtype: torch.dtype,
                 budget: float, flex: bool) -> dict[str, float]:
    """Median ms of each kernel on one set of random inputs of length T."""
    g = torch.Generator(device=device).manual_seed(0)
    q = torch.randn(1, H, T, h, generator=g, device=device, dtype=dtype)
    k, v = (torch.randn(1, K, T, h, generator=g, device=device, dtype=dtype) for _ in range(2))
    k2, v2, mask, _ = sdpa_inputs(q, k, v, True, W, None)
    kernels = {
        "full_causal_sdpa": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True),
        "masked_sdpa": lambda: F.scaled_dot_product_attention(q, k2, v2, attn_mask=mask, enable_gqa=True),
        "blockwise_sdpa": lambda: blockwise_band_attention(q, k, v, W),
    }
    if flex:
        compiled = flex_kernel(W, T, H, device)
        compiled(q, k, v)  # compile outside the timed region
        kernels["flex_attention"] = lambda: compiled(q, k, v)
    with torch.inference_mode():
        return {name: measure(fn, device, budget_s=budget).median_ms for name, fn in kernels.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--window", type=int, default=1024)
    ap.add_argument("--lengths", default="1024,2048,4096,8192,16384")
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--budget", type=float, default=0.5, help="seconds per measurement")
    ap.add_argument("--max-s", type=float, default=60.0, help="stop after the length whose row took longer")
    ap.add_argument("--flex", action="store_true", help="also flex_attention on the CPU (compiles ~25 s a shape)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    device = resolve_device(args.device)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    W, H, K, h = args.window, args.heads, args.kv_heads, args.head_dim
    rows = []
    for T in (int(t) for t in args.lengths.split(",")):
        start = time.perf_counter()
        ms = time_kernels(T, W, H, K, h, device, dtype, args.budget, device.type == "cuda" or args.flex)
        flop_ratio = causal_pairs_x2(T, W) / causal_pairs_x2(T, None)
        full = ms["full_causal_sdpa"]
        layer = AttentionLayer(AttentionConfig(d_model=H * h, n_heads=H, n_kv_heads=K, seq_len=T, causal=True,
                                               window=W, layer_pattern="local", n_layers=1), device=device)
        row = {"T": T, "W": W, "device": device.type, "app_kernel": layer.kernel_name, "flop_ratio": round(flop_ratio, 4),
               "ms": {n: round(m, 3) for n, m in ms.items()},
               "time_ratio": {n: round(m / full, 3) for n, m in ms.items() if n != "full_causal_sdpa"},
               "time_over_flop_ratio": {n: round(m / full / flop_ratio, 3) for n, m in ms.items()
                                        if n != "full_causal_sdpa"},
               "seconds": round(time.perf_counter() - start, 1)}
        rows.append(row)
        if not args.json:
            print(f"T {T:>6} W {W}: band/full FLOPs {flop_ratio:.3f} · " + " · ".join(
                f"{n} {m:.2f} ms" + (f" (x{m / full:.2f}, /FLOPs {m / full / flop_ratio:.2f})"
                                     if n != "full_causal_sdpa" else "") for n, m in ms.items())
                  + f" · the app runs {layer.kernel_name.split(' (')[0]}", flush=True)
        if row["seconds"] > args.max_s:
            break
    if args.json:
        print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
