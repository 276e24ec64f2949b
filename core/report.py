"""The report: every number of one configuration as one JSON-ready dict, and as a table."""

from __future__ import annotations

from typing import Any

from core.arch.config import AttentionConfig
from core.arch.model import Architecture
from core.arch.stack import OWN
from core.counts import (
    flop_counts,
    kind_counts,
    kv_cache_bytes,
    layer_flop_counts,
    layer_kv_bytes_per_token,
    layer_param_counts,
    model_counts,
    model_state_bytes,
    param_counts,
)
from core.files import schema
from core.format import format_bytes, format_count
from core.format import table_row as _row
from core.kinds.registry import kind_named, kind_of
from core.models.kv.methods import METHODS, QUANT_FORMATS, KVMethod

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
        **({"attention": cfg.layer_spec().kind} if cfg.layer_spec().kind != "standard" else {}),
    }


def uses_layout(cfg: AttentionConfig) -> bool:
    """Whether cfg uses any of the 2026 knobs (its report then adds `layout` and `layer_kinds`)."""
    own_width = cfg.explicit_head_dim is not None  # a width set apart from d_model / n_heads (a kind's own is not)
    return (own_width or cfg.qk_norm or cfg.bias == "qkv" or cfg.window is not None or cfg.sinks
            or cfg.kv_dtype is not None or cfg.softmax_scale is not None or cfg.output_gate or cfg.stack is not None
            or cfg.state_dtype is not None)


def layout_section(cfg: AttentionConfig) -> dict[str, Any]:
    local = cfg.local_layers()
    return {
        "head_dim_tied": cfg.head_dim_tied,
        "biases": cfg.layer_spec().biases,
        "qk_norm": cfg.qk_norm,
        "window": cfg.window,
        "layer_pattern": cfg.layer_pattern,
        "n_local_layers": sum(local),
        "n_global_layers": (cfg.stack.pattern.count(OWN) if cfg.stack is not None else len(local)) - sum(local),
        "sinks": cfg.sinks,
        "kv_dtype": cfg.kv_format,
        "softmax_scale": cfg.layer_spec().softmax_scale,
        "layer_0": cfg.layer_spec(0).kind_label,  # whose params and flops the report's per-layer keys are
        **({"output_gate": True} if cfg.output_gate else {}),
        **({"stack": cfg.stack.pattern, "state_dtype": cfg.state_format} if cfg.stack is not None else {}),
    }


def layers_section(arch: Architecture, cfg: AttentionConfig) -> list[dict[str, Any]]:
    """One entry per distinct layer: its spec, how many layers have it, its parameters and KV bytes; a layer that
    keeps a fixed state (a recurrent mixer) adds its kind and its state bytes a sequence."""
    out = []
    for spec, n in arch.groups():
        kind = kind_of(spec)
        entry = {"spec": spec.to_dict(), "count": n, "params_per_layer": layer_param_counts(arch.d_model, spec).total,
                 "kv_bytes_per_token_per_layer": 0 if arch.kind == "encoder" else layer_kv_bytes_per_token(spec, cfg.kv_format),
                 "flops_per_layer": layer_flop_counts(arch.d_model, spec, cfg).total}
        if kind.has_state:
            entry.update({"kind": kind.name, "state_bytes_per_sequence_per_layer": kind.state_bytes(
                spec, cfg.state_format, cfg.dtype), "state_format": cfg.state_format})
        out.append(entry)
    return out


def kv_section(arch: Architecture, cfg: AttentionConfig, layer: int) -> dict[str, Any]:
    """The KV cache of every layer of arch (kv_cache_bytes(cfg) when arch is cfg's uniform model)."""
    mha = Architecture(arch.d_model, tuple(kind_of(s).baseline(s) for s in arch.layers), arch.kind)
    mc, mm = model_counts(arch, cfg), model_counts(mha, cfg)
    per_layer = 0 if arch.kind == "encoder" else layer_kv_bytes_per_token(arch.layers[layer], cfg.kv_format)
    state = model_state_bytes(arch, cfg)
    return {"bytes_per_token_per_layer": per_layer, "bytes_per_token": mc.kv_bytes_per_token,
            "bytes_total": mc.kv_bytes_total, "bytes_total_mha": mm.kv_bytes_total,
            "ratio_vs_mha": mc.kv_bytes_total / mm.kv_bytes_total if mm.kv_bytes_total else 0.0,
            **({"state_bytes": state} if state else {})}


def build_report(cfg: AttentionConfig, timing: dict[str, Any] | None = None, arch: Architecture | None = None,
                 model: dict[str, Any] | None = None, layer: int = 0) -> dict[str, Any]:
    """config, params (per layer), flops (one layer forward), kv_cache (all layers), timing.

    Without arch the model is cfg's n_layers identical layers (the report's JSON as the README gives
    it). With arch (a real model, changed in some layers) the report adds `layers` (each distinct
    layer with its count) and `model` (which model, what changed, what it cost), and kv_cache sums
    every layer as it is; params and flops stay those of the layer on screen (`layer`).
    A configuration with any 2026 knob (head_dim of its own, q/k norm, q/k/v-only biases, a window,
    sinks, a KV dtype, a scale) adds `layout` (the knobs) and `layer_kinds` (global and local layers,
    each kind's count, params, FLOPs and KV bytes); params and flops are then layer 0's.
    """
    report = {
        "config": config_section(cfg),
        "params": param_counts(cfg).to_dict(),
        "flops": flop_counts(cfg).to_dict(),
        "kv_cache": kv_cache_bytes(cfg).to_dict() if arch is None else kv_section(arch, cfg, layer),
        "timing": timing,
    }
    if arch is None:
        report.update(kind_of(cfg.layer_spec()).report_sections(cfg, report["kv_cache"]))
    if arch is not None:
        report["layers"] = layers_section(arch, cfg)
        report["model"] = model
    elif uses_layout(cfg):
        report["layout"] = layout_section(cfg)
        report["layer_kinds"] = [k.to_dict() for k in kind_counts(cfg.architecture(), cfg)]
        if cfg.stack is not None:  # a hybrid stack: each distinct layer, its count, and a mixer's state
            report["layers"] = layers_section(cfg.architecture(), cfg)
    return report


# A real model's context in a pin, a manifest and the Compare table: which model, which layer, what
# changed and what it cost (core/models/inspect.py's fidelity figures).
MODEL_TEXT = ("key", "name", "changed", "probe", "kind")
MODEL_FIGURES = ("js_divergence_mean", "output_rel_error", "loss_before", "loss_after", "embedding_cosine")
MODEL_BYTES = ("kv_cache_bytes_before", "kv_cache_bytes_after")


def model_context(key: str, name: str, fidelity: dict[str, Any], changed: str, probe: str,
                  kind: str = "causal", kv_point: dict[str, Any] | None = None) -> dict[str, Any]:
    """The plain dict a pin keeps; `changed` is 'layer 18 only', 'every layer' or 'nothing'; kind is
    causal or encoder (an encoder has no decode step and no KV cache). kv_point: a frontier point shown in
    every layer, {"method", "setting", "sinks", "label"} (a pin without one has no such key)."""
    out: dict[str, Any] = {"key": key, "name": name, "layer": int(fidelity["layer"]),
                           "all_layers": bool(fidelity["all_layers"]), "changed": changed, "probe": probe,
                           "kind": kind}
    out.update({k: fidelity.get(k) for k in MODEL_FIGURES})
    out.update({k: int(fidelity.get(k) or 0) for k in MODEL_BYTES})
    if kv_point is not None:
        out["kv_point"] = dict(kv_point)
    return out


def check_kv_point(d: Any, where: str) -> dict[str, Any]:
    """A pin's frontier point read back from a file (core/models/kv/methods.py's names)."""
    d = schema.mapping(d, where)
    if set(d) != {"method", "setting", "sinks", "label"}:
        raise ValueError(f"{where} needs exactly the fields method, setting, sinks and label.")
    schema.choice(d["method"], f"{where}.method", tuple(m for m in METHODS if m != "heads"))
    if d["method"] == "quant":
        schema.choice(d["setting"], f"{where}.setting", QUANT_FORMATS)
    elif d["method"] == "evict":
        schema.text(d["setting"], f"{where}.setting", 40)  # 'snapkv@0.75': KVMethod checks the press and ratio
    else:
        schema.whole(d["setting"], f"{where}.setting", 1, 2**20)
    schema.whole(d["sinks"], f"{where}.sinks", 0, 4096)
    schema.text(d["label"], f"{where}.label", 200)
    try:
        label = KVMethod(d["method"], d["setting"], d["sinks"]).label
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    if d["label"] != label:  # shown in the window: the label its settings make, never another
        raise ValueError(f"{where}.label must be {label!r}, the label of its method and setting")
    return d


def check_model_context(d: Any, where: str) -> dict[str, Any]:
    """The same dict read back from a file, every field's type checked (ValueError names the field)."""
    d = schema.mapping(d, where)
    expected = set(MODEL_TEXT) | set(MODEL_FIGURES) | set(MODEL_BYTES) | {"layer", "all_layers"}
    if "kv_point" in d:
        d = dict(d, kv_point=check_kv_point(d["kv_point"], f"{where}.kv_point"))
        expected.add("kv_point")
        if d.get("all_layers") is not True:
            raise ValueError(f"{where}: a frontier point changes every layer, so all_layers must be true")
    if set(d) != expected:
        missing, extra = sorted(expected - set(d)), sorted(repr(k)[:20] for k in set(d) - expected)
        raise ValueError(f"{where} has the wrong fields (missing: {', '.join(missing) or 'none'}; "
                         f"unknown: {', '.join(extra) or 'none'})")
    for k in MODEL_TEXT:
        schema.text(d[k], f"{where}.{k}", 4096)
    schema.choice(d["kind"], f"{where}.kind", ("causal", "encoder"))
    schema.whole(d["layer"], f"{where}.layer", 0, 4095)
    schema.flag(d["all_layers"], f"{where}.all_layers")
    for k in MODEL_FIGURES:
        schema.optional_number(d[k], f"{where}.{k}", -1e6, 1e6)
    for k in MODEL_BYTES:
        schema.whole(d[k], f"{where}.{k}", 0, 2**62)
    return d


def format_report(report: dict[str, Any]) -> str:
    """A readable table of the report, exact integers beside their short forms."""
    c, p, f, kv, t = (report[k] for k in REPORT_KEYS)
    kind = kind_named(c.get("attention", "standard"))
    lines = [
        kind.report_header(report),
        f"Workload: {c['phase']}, batch {c['batch_size']} x seq_len {c['seq_len']}, "
        f"{c['n_layers']} layers, {c['dtype']}, causal={c['causal']}, bias={c['bias']}",
        "",
        "Parameters (per layer)",
    ]
    for key in (k for k in p if k not in ("total", "total_mha", "qk_norm", "sinks")):  # W_q..W_o, or MLA's
        lines.append(_row(f"W_{key}" if key in "qkvo" else key, f"{p[key]:,}", format_count(p[key])))
    delta = p["total"] / p["total_mha"] - 1
    lines.append(_row("total", f"{p['total']:,}", f"{format_count(p['total'])} ({delta:+.1%} vs MHA)"))
    lines.append(_row("total if MHA" + kind.baseline_note(), f"{p['total_mha']:,}",
                      format_count(p["total_mha"])))
    if "qk_norm" in p or "sinks" in p:
        for key, label in (("qk_norm", "q/k RMSNorm"), ("sinks", "sink logits")):
            if key in p:
                lines.insert(-2, _row(label, f"{p[key]:,}"))
    first = f"layer 0, {report['layout']['layer_0']}: " if "layout" in report else ""
    lines += ["", f"FLOPs ({first}one layer forward, {c['phase']})"]
    for key in ("projections", "attention", "total"):
        lines.append(_row(key, f"{f[key]:,}", format_count(f[key])))
    lines += ["", "KV cache" + (f" ({report['layout']['kv_dtype']}; a local layer holds min(seq_len, W) tokens)"
                                 if "layout" in report else "")]
    lines.append(_row("bytes per token per layer", f"{kv['bytes_per_token_per_layer']:,}",
                      format_bytes(kv["bytes_per_token_per_layer"])))
    lines.append(_row("bytes per token", f"{kv['bytes_per_token']:,}", format_bytes(kv["bytes_per_token"])))
    lines.append(_row("total (all layers, B x T)", f"{kv['bytes_total']:,}", format_bytes(kv["bytes_total"])))
    lines.append(_row("total if MHA", f"{kv['bytes_total_mha']:,}", format_bytes(kv["bytes_total_mha"])))
    lines.append(_row("ratio vs MHA", f"x{kv['ratio_vs_mha']:.4g}"))
    lines += kind.report_lines(report)
    if "layout" in report:
        lines += ["", "Layout"] + [_row(k, str(v)) for k, v in report["layout"].items()]
        lines += ["", "By layer kind (all layers of the kind)"]
        for k in report["layer_kinds"]:
            lines.append(_row(f"{k['kind']} x {k['n_layers']}", f"{k['kv_bytes_total']:,}",
                              f"{'state' if k.get('state_bytes') else 'KV'} {format_bytes(k['kv_bytes_total'])}, "
                              f"params {format_count(k['params'])}, "
                              f"FLOPs {format_count(k['flops'])}"))
    if t:
        lines += ["", f"Timing on {t['device_name']} ({t['device']}), SDPA backend {t['backend']}, {t['dtype']}"]
        lines.append(_row("layer median", f"{t['median_ms']:.4g} ms",
                          f"p25 {t['p25_ms']:.4g} / p75 {t['p75_ms']:.4g}, {t['reps']} reps"
                          + (f", on {t['threads']} CPU thread(s)" if t.get("threads") else "")))
        if (t.get("other_load") or 0.0) >= 0.25:
            lines.append(f"  busy: other processes kept {t['other_load']:.1f} cores busy during the run; the figures "
                         "may be inflated")
        lines.append(_row("layer throughput", f"{t['tflops']:.4g} TFLOP/s"))
        lines.append(_row("core median", f"{t['core_median_ms']:.4g} ms", f"{t['core_tflops']:.4g} TFLOP/s"))
        if t.get("fused_qkv_ms") is not None:
            lines.append(_row("QKV fused / separate", f"{t['fused_qkv_ms']:.4g} ms",
                              f"{t['separate_qkv_ms']:.4g} ms separate"))
        lines.append(_row("prefill / decode", f"{t['prefill_ms']:.4g} ms", f"{t['decode_ms']:.4g} ms decode"))
        if t.get("kernel"):
            lines.append(f"  core kernel: {t['kernel']}")
        lines += kind.timing_lines(t)
        if t.get("full_core_ms"):
            ratio = t["core_median_ms"] / t["full_core_ms"]
            lines.append(_row("full causal core", f"{t['full_core_ms']:.4g} ms",
                              f"the window's core x{ratio:.2f} the time for x{t['band_flop_ratio']:.2f} the FLOPs "
                              f"({'faster' if ratio < 1 else 'not faster'})"))
    return "\n".join(lines)
