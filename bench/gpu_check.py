"""One script that checks the CUDA path end to end, in well under 5 minutes on an H200.

1. device, default dtype and the SDPA backend chosen;
2. the display path equals SDPA (bf16) for MHA, GQA and MQA, causal and not;
3. the app's timer against triton.testing.do_bench(..., return_mode="median") on the same calls, in alternating
   blocks (target: within 5%);
4. achieved TFLOP/s of the attention core, bf16, head_dim 128, T = 2048..8192, causal and not,
   the app's measurement next to a direct SDPA call timed by do_bench (target: within 5%);
5. Windows and sinks: the display path equals the timed layer (flex_attention on CUDA) for
   a local layer, a sink layer and both (gpt-oss's shape), and the windowed core's time at T = 8192,
   W = 1024 for flex_attention, blockwise SDPA, masked SDPA and full causal SDPA, with the band's share
   of the FLOPs beside each ratio;
6. The long map on the device equals pooling the whole matrix at T = 2048, and a Gemma 3 27B-shaped
   local and global layer's overview at T = 32,768 (random weights): seconds and peak device memory.

`--smoke` runs the same logic small on the CPU (torch.utils.benchmark stands in for do_bench)
so that the script itself is tested where there is no GPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.arch.config import AttentionConfig  # noqa: E402
from core.counts import flop_counts  # noqa: E402
from core.device import TORCH_DTYPES, default_dtype, device_name, resolve_device  # noqa: E402
from core.inputs.tokens import MAX_DISPLAY_TOKENS  # noqa: E402
from core.kinds.standard.layer import AttentionLayer  # noqa: E402
from core.kinds.standard.timing import allocate  # noqa: E402
from core.timing.layer import run_timing  # noqa: E402
from core.timing.timer import BACKEND_NAMES, measure, pick_backend  # noqa: E402

BLOCKS = 5  # of each timer, alternating, per figure the two compare


def reference_median_ms(fn, device: torch.device) -> float:
    if device.type == "cuda":
        from triton.testing import do_bench

        return float(do_bench(fn, warmup=25, rep=200, return_mode="median"))
    import torch.utils.benchmark as tb

    timer = tb.Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
    return timer.blocked_autorange(min_run_time=0.2).median * 1e3


def alternated(fn, device: torch.device, blocks: int = BLOCKS) -> tuple[float, float]:
    """The app's median and the reference's, each the median of `blocks` blocks taken in turn (ABAB...): taken once
    each, one after the other, drift between them counted in full (the H200's core figures read 4-15% apart, and
    0.93-1.02 when alternated)."""
    app, ref = [], []
    for _ in range(blocks):
        app.append(measure(fn, device, budget_s=0.2).median_ms)
        ref.append(reference_median_ms(fn, device))
    return statistics.median(app), statistics.median(ref)


def check_display_equals_sdpa(device: torch.device, dtype: str) -> list[dict]:
    out = []
    for kv in (16, 4, 1):
        for causal in (False, True):
            cfg = AttentionConfig(d_model=2048, n_heads=16, n_kv_heads=kv, seq_len=256, dtype=dtype, causal=causal)
            layer = AttentionLayer(cfg, device=device, dtype=TORCH_DTYPES[dtype], seed=0)
            x = torch.randn(2, 256, 2048, device=device, dtype=TORCH_DTYPES[dtype])  # (B, T, d)
            with torch.inference_mode():
                _, y_disp = layer.display_forward(x)
                y_sdpa = layer(x)
            err = (y_disp.float() - y_sdpa.float()).abs().max().item()
            scale = y_sdpa.float().abs().max().item()
            out.append({"n_kv_heads": kv, "causal": causal, "max_abs_err": err, "rel": err / scale,
                        "ok": err / scale < 2e-2})
    return out


def check_layouts(device: torch.device, dtype: str, smoke: bool) -> list[dict]:
    """The windowed and sink layers: display path == timed layer, and the kernel the layer picked."""
    out = []
    T = 96 if smoke else MAX_DISPLAY_TOKENS  # the display path's limit (256): 512 was refused since the display cap
    for fields in (dict(window=32 if smoke else 128, layer_pattern="local"), dict(sinks=True),
                   dict(window=32 if smoke else 128, layer_pattern="local", sinks=True, bias=True)):
        cfg = AttentionConfig(d_model=512 if smoke else 2880, n_heads=8 if smoke else 64, n_kv_heads=2 if smoke else 8,
                              explicit_head_dim=64, seq_len=T, causal=True, dtype=dtype, **fields)
        layer = AttentionLayer(cfg, device=device, dtype=TORCH_DTYPES[dtype], seed=0)
        x = torch.randn(1, T, cfg.d_model, device=device, dtype=TORCH_DTYPES[dtype])
        with torch.inference_mode():
            _, y_disp = layer.display_forward(x)
            y = layer(x)
        err = (y_disp.float() - y.float()).abs().max().item() / y.float().abs().max().item()
        out.append({"layout": {k: v for k, v in fields.items() if k != "layer_pattern"}, "kernel": layer.kernel_name,
                    "rel": err, "ok": err < 2e-2})
    return out


def time_windowed(device: torch.device, dtype: str, smoke: bool) -> dict:
    """bench/window_timing.py's kernels at one length, for the record of a GPU run."""
    from bench.window_timing import time_kernels
    from core.kinds.standard.band import causal_pairs_x2

    T, W = (1024, 128) if smoke else (8192, 1024)
    ms = time_kernels(T, W, 8, 2, 64, device, TORCH_DTYPES[dtype], 0.2, device.type == "cuda")
    full = ms["full_causal_sdpa"]
    return {"T": T, "W": W, "flop_ratio": causal_pairs_x2(T, W) / causal_pairs_x2(T, None), "ms": ms,
            "time_ratio": {k: v / full for k, v in ms.items()}}


def check_mla(device: torch.device, dtype: str, smoke: bool) -> dict:
    """DeepSeek-V3's MLA layer: naive == absorbed on the device, and both decode forms timed at 4k..32k keys
    (the absorbed form reads 1/71 of the bytes; is it faster?)."""
    from core.arch.presets import find_preset
    from core.kinds.mla.layer import MLALayer

    base = find_preset("deepseek-v3").apply(AttentionConfig(dtype=dtype, causal=True))
    if smoke:
        base = base.with_(d_model=256, n_heads=4, n_kv_heads=None)  # an MLA layer's KV heads follow n_heads
    dt = TORCH_DTYPES[dtype]
    layer = MLALayer(base.with_(seq_len=256), device=device, dtype=dt).eval()
    x = torch.randn(1, 256, base.d_model, device=device, dtype=dt)
    with torch.inference_mode():
        a, b = layer(x, form="naive").float(), layer(x, form="absorbed").float()
    rel = (a - b).abs().max().item() / a.abs().max().item()
    out: dict = {"forms_rel": rel, "ok": rel < 3e-2, "decode": []}
    for T in ([256, 512] if smoke else [4096, 8192, 16384, 32768]):
        out["decode"].append(time_mla_decode(layer, T, device, dt))
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return out


def time_mla_decode(layer, T: int, device: torch.device, dt: torch.dtype) -> dict:
    """One decode step against T keys: the naive form on the decompressed cache, the absorbed on the latent."""
    xt = torch.randn(1, T, layer.cfg.d_model, device=device, dtype=dt)
    x_new = torch.randn(1, 1, layer.cfg.d_model, device=device, dtype=dt)
    with torch.inference_mode():
        c, pe = layer.latent(xt)
        k, v = layer.decompress(c, pe)
        naive = measure(lambda: layer.decode_naive(x_new, k, v), device, budget_s=0.2).median_ms
        absorbed = measure(lambda: layer.decode_absorbed(x_new, c, pe), device, budget_s=0.2).median_ms
    return {"T": T, "naive_ms": naive, "absorbed_ms": absorbed, "absorbed_speedup": naive / absorbed}


def check_long(device: torch.device, smoke: bool) -> dict:
    """The long map on the device: equal to pooling the whole matrix (CPU reference) at 2k, then 32k tokens of a
    Gemma 3 27B-shaped local and global layer, timed, with the device's peak memory."""
    from core.arch.presets import find_preset
    from core.long.inputs import design_inputs
    from core.long.map import block_for, full_probs, long_map, pool_full

    cfg = AttentionConfig(**{**find_preset("gemma-3-27b").fields, "dtype": "float32"})
    if smoke:
        cfg = cfg.with_(d_model=256, n_heads=4, n_kv_heads=2, explicit_head_dim=64, window=64)
    T0 = 256 if smoke else 2048
    li = design_inputs(cfg, cfg.layer_spec(0), T0, device=device)
    m = long_map(li.q, li.k, li.rule, 8, "max")
    cpu = li.rule.sinks.cpu() if li.rule.sinks is not None else None
    ref = pool_full(full_probs(li.q.cpu(), li.k.cpu(), type(li.rule)(li.rule.scale, True, li.rule.window, cpu)).numpy(),
                    8, "max")
    err = float(abs(m.pooled - ref).max())
    out: dict = {"equal_err": err, "ok": err < 1e-4, "runs": []}
    for layer in (0, 5):
        T = 1024 if smoke else 32768
        if device.type == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        li = design_inputs(cfg.with_(seq_len=T), cfg.layer_spec(layer), T, device=device)
        if device.type == "cuda":
            torch.cuda.synchronize()
        t1 = time.perf_counter()
        mp = long_map(li.q, li.k, li.rule, block_for(T, 1024), "max")
        if device.type == "cuda":
            torch.cuda.synchronize()
        out["runs"].append({"T": T, "layer": cfg.layer_spec(layer).kind_label, "inputs_s": t1 - t0,
                            "map_s": time.perf_counter() - t1, "sink_mean": float(mp.stats.sink.mean()),
                            "peak_mb": torch.cuda.max_memory_allocated() / 2**20 if device.type == "cuda" else None})
        del li
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--smoke", action="store_true", help="tiny sizes on the CPU, to test this script")
    args = ap.parse_args()
    t_start = time.perf_counter()
    device = resolve_device("cpu" if args.smoke else "auto")
    if device.type != "cuda" and not args.smoke:
        print("gpu_check: torch sees no CUDA device; run with --smoke to test the script on the CPU.")
        return 2
    dtype = default_dtype(device)
    result: dict = {"device": device.type, "device_name": device_name(device), "default_dtype": dtype,
                    "torch": torch.__version__}
    print(f"# device {result['device_name']} ({device.type}), default dtype {dtype}, torch {torch.__version__}")

    result["display_equals_sdpa"] = check_display_equals_sdpa(device, dtype)
    for row in result["display_equals_sdpa"]:
        print(f"display==sdpa kv={row['n_kv_heads']:2} causal={row['causal']!s:5} rel_err={row['rel']:.2e} "
              f"{'OK' if row['ok'] else 'FAIL'}")

    seqs = [256, 512] if args.smoke else [2048, 4096, 8192]
    d_model, heads = (512, 4) if args.smoke else (4096, 32)
    rows = []
    for T in seqs:
        for causal in (False, True):
            cfg = AttentionConfig(d_model=d_model, n_heads=heads, seq_len=T, batch_size=1 if args.smoke else 4,
                                  dtype=dtype, causal=causal)
            timing = run_timing(cfg, device, budget_s=0.2)  # the app's whole path, backend included
            t = allocate(cfg, device)
            core_fn = lambda t=t, c=causal: t.layer.core(t.q, t.k, t.v, c)  # noqa: E731
            layer_fn = lambda t=t: t.layer(t.x)  # noqa: E731
            direct_fn = lambda t=t, c=causal: F.scaled_dot_product_attention(t.q, t.k, t.v, is_causal=c)  # noqa: E731
            with torch.inference_mode():
                backend = pick_backend(core_fn, device)
                blocks = 2 if args.smoke else BLOCKS
                app_core, ref_core = alternated(core_fn, device, blocks)
                app_layer, ref_layer = alternated(layer_fn, device, blocks)
                direct = reference_median_ms(direct_fn, device)
            f = flop_counts(cfg)
            row = {
                "seq_len": T, "causal": causal, "backend": BACKEND_NAMES[backend], "app_backend": timing.backend,
                "app_core_ms": app_core, "ref_core_ms": ref_core, "core_ratio": app_core / ref_core,
                "app_layer_ms": app_layer, "ref_layer_ms": ref_layer, "layer_ratio": app_layer / ref_layer,
                "app_core_tflops": f.attention / app_core / 1e9,
                "direct_sdpa_tflops": f.attention / direct / 1e9,
                "app_vs_direct": direct / app_core,
                "app_layer_tflops": timing.tflops,
            }
            rows.append(row)
            print(f"T={T:5} causal={causal!s:5} backend={row['backend']:9} core app {app_core:8.3f} ms "
                  f"do_bench {ref_core:8.3f} (x{row['core_ratio']:.3f}) | layer x{row['layer_ratio']:.3f} | "
                  f"core {row['app_core_tflops']:7.1f} TFLOP/s vs direct SDPA {row['direct_sdpa_tflops']:7.1f}"
                  f" ({row['app_vs_direct']:.3f})")
            del t
            if device.type == "cuda":
                torch.cuda.empty_cache()
    result["timing"] = rows
    result["layouts"] = check_layouts(device, dtype, args.smoke)
    for row in result["layouts"]:
        print(f"layout {row['layout']}: display==timed rel_err={row['rel']:.2e} {'OK' if row['ok'] else 'FAIL'} "
              f"({row['kernel']})")
    result["mla"] = check_mla(device, dtype, args.smoke)
    print(f"mla naive==absorbed rel_err={result['mla']['forms_rel']:.2e} {'OK' if result['mla']['ok'] else 'FAIL'}; "
          "decode " + ", ".join(f"T={r['T']}: naive {r['naive_ms']:.3f} ms, absorbed {r['absorbed_ms']:.3f} ms "
                                f"(x{r['absorbed_speedup']:.2f})" for r in result["mla"]["decode"]))
    result["windowed"] = time_windowed(device, dtype, args.smoke)
    wt = result["windowed"]
    print(f"windowed T={wt['T']} W={wt['W']} band/full FLOPs {wt['flop_ratio']:.3f}: " + ", ".join(
        f"{k} {v:.3f} ms (x{wt['time_ratio'][k]:.2f})" for k, v in wt["ms"].items()))
    result["long"] = check_long(device, args.smoke)
    lg = result["long"]
    print(f"long map == pooled whole matrix err={lg['equal_err']:.2e} {'OK' if lg['ok'] else 'FAIL'}; " + ", ".join(
        f"T={r['T']} {r['layer']}: inputs {r['inputs_s']:.2f} s, map {r['map_s']:.2f} s"
        + (f", peak {r['peak_mb']:.0f} MB" if r["peak_mb"] is not None else "") for r in lg["runs"]))
    result["seconds"] = time.perf_counter() - t_start
    ok = (all(r["ok"] for r in result["display_equals_sdpa"]) and all(r["ok"] for r in result["layouts"])
          and result["mla"]["ok"] and result["long"]["ok"])
    within = all(0.95 <= r["core_ratio"] <= 1.05 and 0.95 <= r["app_vs_direct"] <= 1.05 for r in rows)
    result["display_ok"], result["timing_within_5pct"] = ok, within
    print(json.dumps({k: v for k, v in result.items() if k not in ("timing", "display_equals_sdpa", "layouts", "mla", "long")}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
