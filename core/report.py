"""The report: every number of one configuration as one JSON-ready dict, and as a table."""

from __future__ import annotations

from typing import Any

from core.config import AttentionConfig
from core.counts import flop_counts, format_bytes, format_count, kv_cache_bytes, param_counts

REPORT_KEYS = ("config", "params", "flops", "kv_cache", "timing")


def config_section(cfg: AttentionConfig) -> dict[str, Any]:
    return {
        "d_model": cfg.d_model,
        "n_heads": cfg.n_heads,
        "n_kv_heads": cfg.kv_heads,
        "head_dim": cfg.head_dim,
        "group_size": cfg.group_size,
        "mode": cfg.mode,
        "seq_len": cfg.seq_len,
        "batch_size": cfg.batch_size,
        "n_layers": cfg.n_layers,
        "dtype": cfg.dtype,
        "causal": cfg.causal,
        "bias": cfg.bias,
        "phase": cfg.phase,
    }


def build_report(cfg: AttentionConfig, timing: dict[str, Any] | None = None) -> dict[str, Any]:
    """config, params (per layer), flops (one layer forward), kv_cache (all layers), timing."""
    return {
        "config": config_section(cfg),
        "params": param_counts(cfg).to_dict(),
        "flops": flop_counts(cfg).to_dict(),
        "kv_cache": kv_cache_bytes(cfg).to_dict(),
        "timing": timing,
    }


def _row(label: str, value: str, note: str = "") -> str:
    return f"  {label:<28}{value:>18}  {note}".rstrip()


def format_report(report: dict[str, Any]) -> str:
    """A readable table of the report, exact integers beside their short forms."""
    c, p, f, kv, t = (report[k] for k in REPORT_KEYS)
    mode = c["mode"] if c["mode"] != "GQA" else f"GQA (group {c['group_size']})"
    lines = [
        f"Attention layer: d_model {c['d_model']}, {c['n_heads']} heads x {c['head_dim']}, "
        f"{c['n_kv_heads']} KV heads -> {mode}",
        f"Workload: {c['phase']}, batch {c['batch_size']} x seq_len {c['seq_len']}, "
        f"{c['n_layers']} layers, {c['dtype']}, causal={c['causal']}, bias={c['bias']}",
        "",
        "Parameters (per layer)",
    ]
    for key in ("q", "k", "v", "o"):
        lines.append(_row(f"W_{key}", f"{p[key]:,}", format_count(p[key])))
    delta = p["total"] / p["total_mha"] - 1
    lines.append(_row("total", f"{p['total']:,}", f"{format_count(p['total'])} ({delta:+.1%} vs MHA)"))
    lines.append(_row("total if MHA", f"{p['total_mha']:,}", format_count(p["total_mha"])))
    lines += ["", f"FLOPs (one layer forward, {c['phase']})"]
    for key in ("projections", "attention", "total"):
        lines.append(_row(key, f"{f[key]:,}", format_count(f[key])))
    lines += ["", "KV cache"]
    lines.append(_row("bytes per token per layer", f"{kv['bytes_per_token_per_layer']:,}",
                      format_bytes(kv["bytes_per_token_per_layer"])))
    lines.append(_row("bytes per token", f"{kv['bytes_per_token']:,}", format_bytes(kv["bytes_per_token"])))
    lines.append(_row("total (all layers, B x T)", f"{kv['bytes_total']:,}", format_bytes(kv["bytes_total"])))
    lines.append(_row("total if MHA", f"{kv['bytes_total_mha']:,}", format_bytes(kv["bytes_total_mha"])))
    lines.append(_row("ratio vs MHA", f"x{kv['ratio_vs_mha']:.4g}"))
    if t:
        lines += ["", f"Timing on {t['device_name']} ({t['device']}), SDPA backend {t['backend']}, {t['dtype']}"]
        lines.append(_row("layer median", f"{t['median_ms']:.4g} ms",
                          f"p25 {t['p25_ms']:.4g} / p75 {t['p75_ms']:.4g}, {t['reps']} reps"))
        lines.append(_row("layer throughput", f"{t['tflops']:.4g} TFLOP/s"))
        lines.append(_row("core median", f"{t['core_median_ms']:.4g} ms", f"{t['core_tflops']:.4g} TFLOP/s"))
        if t.get("fused_qkv_ms") is not None:
            lines.append(_row("QKV fused / separate", f"{t['fused_qkv_ms']:.4g} ms",
                              f"{t['separate_qkv_ms']:.4g} ms separate"))
        lines.append(_row("prefill / decode", f"{t['prefill_ms']:.4g} ms", f"{t['decode_ms']:.4g} ms decode"))
    return "\n".join(lines)
