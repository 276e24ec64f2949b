"""MLA against GQA at (nearly) equal KV bytes: does the latent cost time, and which MLA form wins where?

DeepSeek-V3's attention width (d_model 7168, 128 heads) by default: the MLA layer (latent 512 + rope 64) in
both forms, and the GQA layer whose KV bytes a token come closest to the latent (2 KV heads of 128:
core/kinds/mla/latent_vs_grouped.py), each timed in one process for the prefill of T tokens and one decode step
against T keys, T = 512 .. 8192 doubling. On a CPU it stops at the first T whose measurements take longer
than --max-s (a V3-width layer is about 0.2 TFLOP a 512-token prefill). Ratios are against the GQA layer
of the same run: mla_<form>_<phase> / gqa_<phase>. --json prints the rows.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.arch.config import AttentionConfig  # noqa: E402
from core.arch.presets import find_preset  # noqa: E402
from core.device import TORCH_DTYPES, default_dtype, resolve_device  # noqa: E402
from core.kinds.mla.latent_vs_grouped import equal_kv_gqa  # noqa: E402
from core.kinds.mla.layer import MLALayer  # noqa: E402
from core.kinds.standard.layer import AttentionLayer  # noqa: E402
from core.report import build_report  # noqa: E402
from core.timing.timer import measure  # noqa: E402


def time_mla(cfg: AttentionConfig, x: torch.Tensor, x_new: torch.Tensor, device: torch.device,
             budget: float) -> dict[str, float]:
    """Median ms of the MLA layer's naive and absorbed prefill and decode."""
    mla = MLALayer(cfg, device=device, dtype=x.dtype).eval()
    c, k_pe = mla.latent(x)  # the latent cache (B, T, r_kv), (B, T, r)
    k, v = mla.decompress(c, k_pe)  # the decompressed cache (B, H, T, n + r), (B, H, T, v)
    calls = {"mla_naive_prefill": lambda: mla(x, form="naive"), "mla_absorbed_prefill": lambda: mla(x, form="absorbed"),
             "mla_naive_decode": lambda: mla.decode_naive(x_new, k, v),
             "mla_absorbed_decode": lambda: mla.decode_absorbed(x_new, c, k_pe)}
    return {name: measure(fn, device, budget_s=budget).median_ms for name, fn in calls.items()}


def time_gqa(cfg: AttentionConfig, x: torch.Tensor, x_new: torch.Tensor, device: torch.device,
             budget: float) -> dict[str, float]:
    """Median ms of the equal-KV GQA layer's prefill and decode."""
    gqa = AttentionLayer(equal_kv_gqa(cfg), device=device, dtype=x.dtype).eval()
    _, kc, vc = gqa.project_qkv(x)  # (B, K, T, h) each
    return {"gqa_prefill": measure(lambda: gqa(x), device, budget_s=budget).median_ms,
            "gqa_decode": measure(lambda: gqa.decode_step(x_new, kc, vc), device, budget_s=budget).median_ms}


def time_pair(cfg: AttentionConfig, device: torch.device, budget: float) -> dict[str, float]:
    """Both layers on one set of inputs, one after the other (each freed before the next is built)."""
    dtype = TORCH_DTYPES[cfg.dtype]
    g = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(cfg.batch_size, cfg.seq_len, cfg.d_model, generator=g, device=device, dtype=dtype)  # (B, T, d)
    x_new = torch.randn(cfg.batch_size, 1, cfg.d_model, generator=g, device=device, dtype=dtype)  # (B, 1, d)
    with torch.inference_mode():
        out = time_mla(cfg, x, x_new, device, budget)
        if device.type == "cuda":
            torch.cuda.empty_cache()
        out.update(time_gqa(cfg, x, x_new, device, budget))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", default="deepseek-v3", help="an MLA preset (default deepseek-v3)")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--dtype", default=None, help="default: bfloat16 on CUDA, float32 elsewhere")
    ap.add_argument("--seq", default="512,1024,2048,4096,8192")
    ap.add_argument("--max-s", type=float, default=60.0, help="stop after the first T that takes longer (CPU)")
    ap.add_argument("--budget", type=float, default=0.3, help="seconds of repeats per measurement")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    device = resolve_device(args.device)
    dtype = args.dtype or default_dtype(device)
    base = find_preset(args.preset).apply(AttentionConfig(dtype=dtype, batch_size=1, causal=True))
    if base.widths is None:
        print(f"mla_timing: {args.preset} is not an MLA preset.", file=sys.stderr)
        return 2
    gqa = equal_kv_gqa(base)
    kv_m = build_report(base)["kv_cache"]["bytes_per_token_per_layer"]
    kv_g = build_report(gqa)["kv_cache"]["bytes_per_token_per_layer"]
    print(f"# {args.preset} on {device.type} {dtype}: {base.widths.label}, {kv_m:,} B a token a layer; "
          f"partner {gqa.mode_label} of head_dim {gqa.head_dim}, {kv_g:,} B; torch {torch.__version__}")
    rows = []
    for T in [int(t) for t in args.seq.split(",")]:
        start = time.perf_counter()
        ms = time_pair(base.with_(seq_len=T), device, args.budget)
        seconds = time.perf_counter() - start
        row = {"T": T, **{k: round(v, 4) for k, v in ms.items()}, "seconds": round(seconds, 1)}
        for phase in ("prefill", "decode"):
            for form in ("naive", "absorbed"):
                row[f"ratio_{form}_{phase}"] = round(ms[f"mla_{form}_{phase}"] / ms[f"gqa_{phase}"], 3)
        rows.append(row)
        print(f"T={T:5}  prefill: MLA naive {ms['mla_naive_prefill']:9.2f} ms (x{row['ratio_naive_prefill']:.2f}) "
              f"absorbed {ms['mla_absorbed_prefill']:9.2f} ms (x{row['ratio_absorbed_prefill']:.2f}) "
              f"GQA {ms['gqa_prefill']:9.2f} ms | decode: MLA naive {ms['mla_naive_decode']:8.2f} ms "
              f"(x{row['ratio_naive_decode']:.2f}) absorbed {ms['mla_absorbed_decode']:8.2f} ms "
              f"(x{row['ratio_absorbed_decode']:.2f}) GQA {ms['gqa_decode']:8.2f} ms  [{seconds:.0f} s]", flush=True)
        if device.type != "cuda" and seconds > args.max_s:
            print(f"# stopped: T={T} took {seconds:.0f} s (> --max-s {args.max_s:g})")
            break
    if args.json:
        print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
