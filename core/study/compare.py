"""Compare pinned configurations: metric rows with ratios against a baseline, text/CSV/Markdown,
and the difference of two pins' attention maps."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.format import format_bytes, format_count, format_noun
from core.kinds.registry import KINDS
from core.kinds.standard.kind import STANDARD
from core.timing.change import timing_ratio

# (label, section, key, kind, lower_is_better). kind: count, bytes, gb, ms, rate, bits, percent, loss, text.
# Rows of the "model" section (a real model's context and fidelity) appear only when a pin has them.
OPTIONAL_KEYS = {"state_bytes"}  # figures only some reports have (a recurrent layer's state): rows shown when one does
METRICS = [
    ("model", "model", "name", "text", None),
    ("changed", "model", "changed", "text", None),
    ("heads read", "model", "probe", "text", None),
    ("mode", "config", "mode", "text", None),
    ("d_model", "config", "d_model", "text", None),
    ("n_heads", "config", "n_heads", "text", None),
    ("n_kv_heads", "config", "n_kv_heads", "text", None),
    ("head_dim", "config", "head_dim", "text", None),
    ("layout", "layout", "summary", "text", None),
    ("KV cache: local | global", "layout", "kv_split", "text", None),
    ("n_layers", "config", "n_layers", "text", None),
    ("seq_len x batch", "config", "workload", "text", None),
    ("dtype, phase", "config", "precision", "text", None),
    ("parameters / layer", "params", "total", "count", True),
    ("attention params, all layers", "layers", "params_total", "count", True),
    ("W_k + W_v parameters", "params", "kv", "count", True),
    ("FLOPs projections", "flops", "projections", "count", True),
    ("FLOPs attention core", "flops", "attention", "count", True),
    ("FLOPs / layer", "flops", "total", "count", True),
    ("FLOPs, all layers", "layers", "flops_total", "count", True),
    ("KV cache / token", "kv_cache", "bytes_per_token", "bytes", True),
    ("KV cache, B x T x L", "kv_cache", "bytes_total", "bytes", True),
    ("of which recurrent state", "kv_cache", "state_bytes", "bytes", True),
    *(row for kind in KINDS.values() for row in kind.compare_rows),  # the figures only one layer kind has
    ("layer time", "timing", "median_ms", "ms", True),
    ("core time", "timing", "core_median_ms", "ms", True),
    ("prefill time", "timing", "prefill_ms", "ms", True),
    ("decode time", "timing", "decode_ms", "ms", True),
    ("layer TFLOP/s", "timing", "tflops", "rate", False),
    ("attention JS divergence (bits)", "model", "js_divergence_mean", "bits", True),
    ("layer output error", "model", "output_rel_error", "percent", True),
    ("next-token loss, as trained", "model", "loss_before", "loss", True),
    ("next-token loss, changed", "model", "loss_after", "loss", True),
    ("sentence embedding cosine", "model", "embedding_cosine", "loss", False),
    # a real model's cache of the text itself, as trained and as changed (a frontier point's format, rank or window)
    ("KV cache of the text, as trained", "model", "kv_cache_bytes_before", "bytes", True),
    ("KV cache of the text, changed", "model", "kv_cache_bytes_after", "bytes", True),
    ("plan", "plan", "gpus", "text", None),
    ("plan: fits", "plan", "fits", "text", None),
    ("plan: memory a GPU (weights + KV + allowance)", "plan", "memory_per_gpu", "gb", True),
    ("plan: KV cache a GPU", "plan", "kv_per_gpu", "gb", True),
    ("plan: longest context", "plan", "max_context", "count", False),
    ("plan: largest batch", "plan", "max_batch", "count", False),
    ("plan: decode tokens/s, bound", "plan", "decode_tokens_s", "rate", False),
]


# Rows only one layer kind's pins fill: shown when one does (an en dash in the others' columns).
KIND_ROWS = {row[2]: kind for kind in KINDS.values() for row in kind.compare_rows}
ENCODER_HAS_NONE = {("kv_cache", "bytes_per_token"), ("kv_cache", "bytes_total"), ("timing", "decode_ms")}


def metric_value(report: dict[str, Any], section: str, key: str) -> Any:
    """A pin's figure in a row: the common reading, then its layer kind's own (a kind's rows, its layout)."""
    kind = KINDS.get((report.get("config") or {}).get("attention", "standard"), STANDARD)
    return kind.compare_value(report, section, key, common_value(report, section, key))


def common_value(report: dict[str, Any], section: str, key: str) -> Any:
    model = report.get("model") or {}
    if model.get("kind") == "encoder" and (section, key) in ENCODER_HAS_NONE:
        return None  # an encoder has no KV cache and no decode step: nothing to compare
    if section == "layers":  # every layer's figure: by layer kind, by distinct layer, or n_layers alike
        if key == "flops_total":
            if report.get("layer_kinds"):
                return sum(k["flops"] for k in report["layer_kinds"])
            groups = report.get("layers")
            if groups is not None:  # a real model's pin; reports saved before flops_per_layer have none
                return sum(g["flops_per_layer"] * g["count"] for g in groups) if all(
                    "flops_per_layer" in g for g in groups) else None
            return report["flops"]["total"] * report["config"]["n_layers"]
        groups = report.get("layers")
        if groups is None:
            return report["params"]["total"] * report["config"]["n_layers"]
        return sum(g["params_per_layer"] * g["count"] for g in groups)
    if section == "model" and key == "name" and not model:
        return "random weights"
    if section == "model" and key.startswith("kv_cache_bytes") and model.get("kind") == "encoder" and (
            not model.get("kv_point")):
        return None  # an encoder keeps no cache (a frontier point's is counted as a cache would hold it)
    if section == "layout":
        return layout_value(report, key)
    part = report.get(section)
    if part is None:
        return None
    if section == "params" and key == "kv":  # a layer may have no W_k, W_v (keys and values rebuilt from a latent)
        return part["k"] + part["v"] if "k" in part else None
    if section == "config" and key == "workload":
        return f"{part['seq_len']:,} x {part['batch_size']}"
    if section == "config" and key == "precision":
        return f"{part['dtype']}, {part['phase']}" + (", causal" if part["causal"] else "")
    return part.get(key)


def layout_value(report: dict[str, Any], key: str) -> str | None:
    """A pin's layout in one line, or its KV cache split into local and global layers; None for a plain layer
    (a plain pin beside a layout pin reads 'tied head_dim, all global')."""
    lay = report.get("layout")
    if key == "summary":
        if lay is None:
            return "tied head_dim, all global" if report.get("model") is None else None
        parts = ["own head_dim" if not lay["head_dim_tied"] else "tied head_dim"]
        parts += [f"biases {lay['biases']}"] if lay["biases"] == "qkv" else []
        parts += ["q/k norm"] if lay["qk_norm"] else []
        parts.append(f"{lay['n_local_layers']} local W {lay['window']:,} + {lay['n_global_layers']} global"
                     if lay["n_local_layers"] else "all global")
        parts += ["sinks"] if lay["sinks"] else []
        parts.append(f"KV {lay['kv_dtype']}")
        return ", ".join(parts)
    kinds = report.get("layer_kinds") or []
    local = sum(k["kv_bytes_total"] for k in kinds if k["window"] is not None)
    glob = sum(k["kv_bytes_total"] for k in kinds if k["window"] is None)
    if lay is None or not lay["n_local_layers"]:
        return None
    return f"{format_bytes(local)} | {format_bytes(glob)}"


def format_value(value: Any, kind: str) -> str:
    if value is None:
        return "–"
    if kind == "count":
        return f"{value:,} ({format_count(value)})"
    if kind == "bytes":
        return format_bytes(value)
    if kind == "gb":  # a plan's bytes, as the driver and engines count them (an "80 GB" H100 is 79.6 GiB)
        return f"{value / 2**30:,.1f} GiB"
    if kind == "ms":
        return f"{value:,.0f} ms" if value >= 1000 else f"{value:.4g} ms"
    if kind == "rate":
        return f"{value:.3g}"
    if kind == "bits":
        return f"{value:.4f} bits"
    if kind == "percent":
        return f"{value:.2%}"
    if kind == "loss":
        return f"{value:.4f}"
    return str(value)


def relation(value: Any, base: Any, kind: str) -> str:
    """'x0.25' for bytes and times, '-37.5%' for counts, '' where it does not apply."""
    if kind == "text" or value is None or base in (None, 0):
        return ""
    if value == base:
        return "="
    if kind in ("bytes", "gb", "ms", "rate", "bits"):
        return f"x{value / base:.3g}"
    if kind in ("percent", "loss"):
        return f"{value - base:+.4g}"
    return f"{value / base - 1:+.1%}"


@dataclass(frozen=True)
class Cell:
    text: str
    relation: str
    better: bool | None  # None: same, or not comparable
    why: str = ""  # for a cell with no figure ("–"): why this pin has none, and how to get one


def why_missing(report: dict[str, Any], section: str, key: str) -> str:
    """The sentence behind a '–': why this pin has no figure in this row, and what would give it one."""
    model = report.get("model") or {}
    if model.get("kind") == "encoder" and (section, key) in ENCODER_HAS_NONE or (
            section == "model" and key.startswith("kv_cache_bytes") and model.get("kind") == "encoder"):
        return "An encoder keeps no KV cache and has no decode step: there is nothing to measure here."
    if section == "timing":
        if report.get("timing") is None:
            return ("Not measured: this pin was made before its timing finished (or with timing off). Load it on the "
                    "sliders, press Measure now (Ctrl+M), then pin it again.")
    if section == "model":
        return ("A figure of a real model's own weights: this pin is of random weights. Open a model in the Model "
                "list and pin it to compare.") if not model else "This real model's pin has no figure of this kind."
    if section == "plan":
        return "No plan was made for this pin: set up the Plan tab before pinning to carry its figures."
    own = KINDS.get((report.get("config") or {}).get("attention", "standard"), STANDARD)
    owner = KIND_ROWS.get(key)
    why = own.compare_why(section, key, True) or (owner.compare_why(section, key, False) if owner else "")
    if why:
        return why
    if section == "layout":
        return "This pin has no local (windowed) layers: its whole cache is global."
    return "This pin has no figure of this kind."


@dataclass(frozen=True)
class TableRow:
    label: str
    cells: list[Cell]


def comparison(reports: list[dict[str, Any]], baseline: int) -> list[TableRow]:
    rows = []
    for label, section, key, kind, lower in METRICS:
        optional = section in ("model", "plan") or key in KIND_ROWS or key in OPTIONAL_KEYS
        if optional and all(metric_value(r, section, key) is None for r in reports):
            continue  # no pin holds a real model's (a layer kind's own, a plan's) figure of this kind
        if section == "layout" and (all(r.get("layout") is None for r in reports)
                                    or all(metric_value(r, section, key) is None for r in reports)):
            continue  # no pin has a 2026 layout (or none has local layers)
        base = metric_value(reports[baseline], section, key)
        cells = []
        for i, rep in enumerate(reports):
            value = metric_value(rep, section, key)
            rel = "" if i == baseline else relation(value, base, kind)
            better = None
            if rel not in ("", "=") and lower is not None:
                better = (value < base) if lower else (value > base)
            sure = timing_ratio(rep, reports[baseline], key) if i != baseline and section == "timing" else None
            if sure is not None:  # two measured times: the ratio with its 95% interval, no direction within noise
                rel = sure.cell()
                better = better if sure.measurable else None
            cells.append(Cell(format_value(value, kind), rel, better, "" if value is not None else
                              why_missing(rep, section, key)))
        rows.append(TableRow(label, cells))
    return rows


def cell_text(cell: Cell) -> str:
    return f"{cell.text} {cell.relation}".strip() if cell.relation else cell.text


def as_csv(names: list[str], rows: list[TableRow]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["metric", *names])
    for row in rows:
        w.writerow([row.label, *(cell_text(c) for c in row.cells)])
    return buf.getvalue()


def as_markdown(names: list[str], rows: list[TableRow], baseline: int) -> str:
    head = ["metric", *(f"{n} (baseline)" if i == baseline else n for i, n in enumerate(names))]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        lines.append("| " + " | ".join([row.label, *(cell_text(c) for c in row.cells)]) + " |")
    return "\n".join(lines) + "\n"


def as_text(names: list[str], rows: list[TableRow]) -> str:
    lines = ["\t".join(["metric", *names])]
    lines += ["\t".join([row.label, *(cell_text(c) for c in row.cells)]) for row in rows]
    return "\n".join(lines) + "\n"


def attention_diff(a: np.ndarray, a_tokens: list[str], b: np.ndarray, b_tokens: list[str],
                   a_name: str = "A", b_name: str = "B",
                   advice: str = "pin both with the same text to compare their heatmaps") -> tuple[np.ndarray, str]:
    """(H, T, T) A minus B, and a sentence saying what was compared. Raises ValueError when the
    two pins do not show the same tokens (their maps would not line up), with the advice given."""
    if a_tokens != b_tokens:
        raise ValueError(f"{a_name} and {b_name} show different tokens ({len(a_tokens)} vs {len(b_tokens)}); "
                         f"{advice}.")
    ha, hb = len(a), len(b)
    h = min(ha, hb)
    diff = a[:h] - b[:h]  # (h, T, T)
    if ha == hb:
        return diff, f"{a_name} minus {b_name}, head by head ({format_noun(h, 'head')})."
    more, extra = (a_name, ha - h) if ha > hb else (b_name, hb - h)
    return diff, (f"{a_name} has {ha} query heads and {b_name} has {hb}: heads 0–{h - 1} are matched by index; "
                  f"the last {extra} heads of {more} have no partner and are not shown.")
