"""Every figure the Costs panel shows, as one value: each row's exact figure, its short form, its change against the
baseline and the formula with its inputs (the tooltip). The panel only displays it.

Per-layer rows describe the layer on screen; whole-model rows sum every layer of the architecture, so a real model
changed in one layer is counted as it is (that layer changed, the others as trained). The baseline is the MHA layer
of the same width in design mode and the model as trained for a real model. A layer kind adds its own rows and
rewrites the shared rows' formulas for itself (LayerKind.cost_rows). Pure integer math: it runs on every slider
tick, on the GUI thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from core.arch.config import AttentionConfig
from core.arch.formats import bytes_per_value
from core.arch.model import Architecture
from core.counts import kind_counts, layer_flop_counts, layer_param_counts, model_counts
from core.format import format_bytes, format_count
from core.kinds.kind import CostRow
from core.kinds.registry import KINDS, kind_of

__all__ = ["CostContext", "CostRow", "Costs", "costs", "percent_change", "row_titles"]


@dataclass(frozen=True)
class CostContext:
    """What the costs describe: the model's layers, what they are compared with, the layer on screen."""

    arch: Architecture
    baseline: Architecture
    layer: int = 0  # the layer the per-layer rows show
    baseline_name: str = "MHA"  # "MHA" (design mode) or "trained" (a real model)
    # a frontier point shown in every layer: (its label, its KV bytes per token and the trained model's, both as
    # the Frontier tab counts them at seq_len: 16-bit unless the point is a format of its own)
    kv_point: tuple[str, float, float] | None = None

    @classmethod
    def design(cls, cfg: AttentionConfig, layer: int = 0) -> CostContext:
        arch = cfg.architecture()
        base = Architecture(arch.d_model, tuple(kind_of(s).baseline(s) for s in arch.layers), arch.kind)
        return cls(arch, base, min(layer, cfg.n_layers - 1))


@dataclass(frozen=True)
class Costs:
    title: str  # the panel's heading: which layer the per-layer rows show
    baseline_name: str  # the last column's: "vs MHA", "vs trained"
    scope: str  # where a real model's change applies ('' in design mode)
    rows: tuple[CostRow, ...]  # in the panel's order, only those that apply

    def row(self, key: str) -> CostRow:
        return next(r for r in self.rows if r.key == key)


# The panel's rows in order (memory first: at 1280x800 the KV rows must be in view without scrolling). "params" marks
# where each kind's projections go; each kind's own rows follow the shared ones.
SHARED_ROWS = [
    ("head_dim", "head_dim", True),
    ("kv_token", "KV cache / token, all layers", False), ("kv_total", "KV cache, B x T x L", False),
    ("kv_split", "KV cache: local | global", False), ("layers", "Layers: local | global", False),
    ("params", "Params / layer", False), ("params_model", "Attention params, all layers", False),
    ("*projections", "", False),
    ("extras", "q/k norm + sinks params", False),
    ("flops_proj", "FLOPs projections", False), ("flops_core", "FLOPs attention core", False),
    ("flops", "FLOPs / layer", False), ("flops_model", "FLOPs, all layers", False),
    ("intensity", "Core FLOP/byte", False),
]


def merged(sequences: list[tuple[str, ...]]) -> list[str]:
    """Keys in an order every sequence keeps: a key new to the list goes before the next of its own sequence's keys
    already there (standard q, k, v, o and MLA's q_a ... kv_b, o give q, k, v, q_a ... kv_b, o)."""
    out: list[str] = []
    for seq in sequences:
        for i, key in enumerate(seq):
            if key in out:
                continue
            after = next((k for k in seq[i + 1:] if k in out), None)
            out.insert(out.index(after) if after is not None else len(out), key)
    return out


def row_titles() -> list[tuple[str, str, bool]]:
    """(key, title, has no baseline) of every row any kind may show, in the panel's order."""
    projections = merged([tuple(k for k, _ in kind.projection_rows) for kind in KINDS.values()])
    names = {k: f"{name} params" for kind in KINDS.values() for k, name in kind.projection_rows}
    out: list[tuple[str, str, bool]] = []
    for key, title, no_base in SHARED_ROWS:
        if key == "*projections":
            out += [(k, names[k], False) for k in projections]
        else:
            out.append((key, title, no_base))
    for kind in KINDS.values():  # a kind that builds on another shows some of its rows: each row once
        out += [(k, title, True) for k, title in kind.own_cost_rows if k not in {key for key, _, _ in out}]
    return out


def percent_change(change: float) -> str:
    """+0.25 -> '+25.0%'. More decimals where one would read as no change or as all of it gone: 3 KV heads
    instead of 10,101 are '-99.97%', not '-100.0%'; a change of 1 in 10^7, '+1e-05%', not '+0.0%'."""
    pct = change * 100
    for decimals in range(1, 5):
        text = f"{pct:+.{decimals}f}"
        if float(text) not in (0.0, -100.0) or pct in (0.0, -100.0):
            return text + "%"
    return f"{pct:+.2g}%"


def versus(value: float, baseline: float) -> tuple[str, int]:
    """('-75.0%', -1): the change and its sign (below the baseline is better); ('=', 0) when equal."""
    if baseline == value:
        return "=", 0
    change = value / baseline - 1 if baseline else 0.0
    return percent_change(change), -1 if change < 0 else 1


@dataclass
class _Rows:
    rows: dict[str, CostRow] = field(default_factory=dict)

    def add(self, key: str, value: str, short: str, tip: str, vs: tuple[float, float] | None = None,
            name: str = "") -> None:
        self.rows[key] = CostRow(key, value, short, tip, versus(*vs) if vs is not None else None, name)


def costs(cfg: AttentionConfig, ctx: CostContext | None = None) -> Costs:
    ctx = ctx or CostContext.design(cfg)
    arch, base = ctx.arch, ctx.baseline
    spec, base_spec = arch.layers[ctx.layer], base.layers[ctx.layer]
    kind = kind_of(spec)
    d, H, K, h = arch.d_model, spec.n_heads, spec.n_kv_heads, spec.head_dim
    B, T, L, b = cfg.batch_size, cfg.seq_len, arch.n_layers, cfg.dtype_bytes
    fmt, kb = cfg.kv_format, bytes_per_value(cfg.kv_format)  # the KV cache's own element format
    p, pm = layer_param_counts(d, spec), layer_param_counts(d, base_spec)
    f, fm = layer_flop_counts(d, spec, cfg), layer_flop_counts(d, base_spec, cfg)
    mc, mb = model_counts(arch, cfg), model_counts(base, cfg)
    scope = arch.change_scope(base) if ctx.baseline_name == "trained" else ""
    where = f" ({scope})" if scope else ""
    r = _Rows()
    r.add("head_dim", str(h), "own" if H * h != d else "",
          f"head_dim = width / n_heads = {H * h} / {H}" if H * h == d else
          f"head_dim {h} of its own: n_heads x head_dim = {H * h:,}, not d_model {d:,}")
    kinds = kind_counts(arch, cfg)
    local = [k for k in kinds if k.window is not None]
    if arch.kind == "encoder":
        why = "an encoder reads its whole input at once and keeps no KV cache"
        r.add("kv_token", "none", "", why)
        r.add("kv_total", "none", "", why)
    else:
        per_layer = " + ".join(f"{n} x 2 x {s.n_kv_heads} x {s.head_dim} x {kb:g}" for s, n in arch.groups())
        r.add("kv_token", f"{mc.kv_bytes_per_token:,} B", format_bytes(mc.kv_bytes_per_token),
              f"{mc.kv_bytes_per_token:,} B = 2 (K and V) x n_kv_heads x head_dim x bytes per value "
              f"({fmt}: {kb:g}), summed over the {L} layers{where}: {per_layer}"
              + (". Once the context passes a window, only the global layers keep growing." if local else ""),
              (mc.kv_bytes_per_token, mb.kv_bytes_per_token))
        held = (" (a local layer holds min(seq_len, W) tokens: the keys the next query reads; transformers "
                "keeps W - 1 between steps)" if local else "")
        formula = " + ".join(f"{n} x 2 x {sp.n_kv_heads} x {sp.head_dim} x {kb:g} x {B} x "
                             + (f"min({T:,}, {sp.window:,})" if sp.window else f"{T:,}") for sp, n in arch.groups())
        r.add("kv_total", f"{mc.kv_bytes_total:,} B", format_bytes(mc.kv_bytes_total),
              f"layers x 2 (K and V) x n_kv_heads x head_dim x bytes per value ({fmt}) x batch x tokens held "
              f"= {formula}{held}", (mc.kv_bytes_total, mb.kv_bytes_total))
    if ctx.kv_point is not None:
        label, per_token, trained = ctx.kv_point
        why = (f"the frontier point {label} in every layer, counted as the Frontier tab counts it (the trained "
               f"model's cache in 16-bit: {trained:,.0f} B a token at seq_len {T:,}); the other rows count the "
               "layers as trained")
        r.add("kv_token", f"{per_token:,.0f} B", format_bytes(per_token), why, (per_token, trained))
        total = per_token * T * B
        r.add("kv_total", f"{total:,.0f} B", format_bytes(total), why + f", x {T:,} tokens x batch {B}",
              (total, trained * T * B))
    mixers = [k for k in kinds if k.layer_kind != "standard"]  # a hybrid stack's recurrent layers
    if mixers and arch.kind != "encoder" and "kv_total" in r.rows:  # the total holds the state too: its name says so
        r.rows["kv_total"] = replace(r.rows["kv_total"], name="Cache (KV + state), B x T x L")
    if mixers and arch.kind != "encoder":
        state = sum(k.state_bytes for k in mixers)
        kv = mc.kv_bytes_total - state
        r.add("kv_split", format_bytes(state), f"| {format_bytes(kv)}",
              f"At seq_len {T:,}, batch {B}: the recurrent layers' fixed state {state:,} B ("
              + ", ".join(f"{k.n_layers} {k.kind} {format_bytes(k.state_bytes)}" for k in mixers)
              + f"), the attention layers' KV {kv:,} B. The state does not grow with T; the KV does "
              "(the Long tab's Memory vs context chart draws both).", name="Cache: state | KV")
        r.add("layers", " | ".join(str(k.n_layers) for k in kinds), "",
              "; ".join(f"{k.kind}: {k.n_layers} layers, {format_count(k.params)} params, {format_count(k.flops)} "
                        f"FLOPs, {format_bytes(k.kv_bytes_total)} cache" for k in kinds)
              + f". The per-layer rows show layer {ctx.layer} ({kind.label(spec)}).",
              name="Layers: " + " | ".join(k.kind for k in kinds))
    elif local and arch.kind != "encoder":
        glob = next((k for k in kinds if k.window is None), None)
        g_kv = glob.kv_bytes_total if glob else 0
        l_kv = sum(k.kv_bytes_total for k in local)
        r.add("kv_split", format_bytes(l_kv), f"| {format_bytes(g_kv)}",
              f"local layers' cache {l_kv:,} B, global layers' {g_kv:,} B, at seq_len {T:,}")
    if local and not mixers:
        glob = next((k for k in kinds if k.window is None), None)
        g_n = glob.n_layers if glob else 0
        l_n = sum(k.n_layers for k in local)
        windows = ", ".join(f"W {k.window:,}" for k in local)
        r.add("layers", f"{l_n} | {g_n}", windows,
              "; ".join(f"{k.kind}: {k.n_layers} layers, {format_count(k.params)} params, "
                        f"{format_count(k.flops)} FLOPs, {format_bytes(k.kv_bytes_total)} KV" for k in kinds)
              + f". The per-layer rows show layer {ctx.layer} ({spec.kind_label}).")
    r.add("params", f"{p.total:,}", format_count(p.total), p.formula(d, spec), (p.total, pm.total))
    r.add("params_model", f"{mc.params:,}", format_count(mc.params),
          f"attention parameters (W_q, W_k, W_v, W_o) of all {L} layers{where}: no MLP, no embeddings",
          (mc.params, mb.params))
    base_rows = {key: n for key, _, n, _ in pm.rows(d, base_spec)}
    for key, name, n, formula in p.rows(d, spec):  # W_q..W_o, or an MLA layer's seven
        r.add(key, f"{n:,}", format_count(n), formula, (n, base_rows[key]) if key in base_rows else None,
              name=f"{name} params")
    extras = p.qk_norm + p.sinks
    if extras:
        r.add("extras", f"{extras:,}", "", f"q/k RMSNorm weights 2 x head_dim = {p.qk_norm:,}; sink logits, one per "
              f"head = {p.sinks:,}. Sinks keep no KV bytes.", (extras, pm.qk_norm + pm.sinks))
    tq = "T" if cfg.phase == "prefill" else "1"
    r.add("flops_proj", f"{f.projections:,}", format_count(f.projections),
          f"2 x B x {tq} x d x (H*h + 2*K*h) + 2 x B x {tq} x H*h x d  (B={B}, T={T})", (f.projections, fm.projections))
    if spec.window is not None and cfg.phase == "prefill":
        core_tip = (f"layer {ctx.layer} is local (W {spec.window:,}): 4 x B x H x h x (T x W - W^2 / 2) once "
                    "T > W, the band only (T^2 / 2 below it)")
    elif spec.window is not None:
        core_tip = (f"layer {ctx.layer} is local: 4 x B x H x h x min(T, W) (the new token's query against the "
                    f"{min(T, spec.window):,} keys of its window)")
    else:
        core_tip = ("4 x B x H x T^2 x h" + (" / 2 (causal)" if cfg.causal else "") if cfg.phase == "prefill"
                    else "4 x B x H x T x h (the new token's query against seq_len keys: seq_len - 1 cached "
                         "and its own)")
    r.add("flops_core", f"{f.attention:,}", format_count(f.attention),
          core_tip + ": depends on n_heads, not on n_kv_heads", (f.attention, fm.attention))
    r.add("flops", f"{f.total:,}", format_count(f.total), "projections + attention core, one forward",
          (f.total, fm.total))
    fa = sum(layer_flop_counts(d, s, cfg).total * n for s, n in arch.groups())
    fb = sum(layer_flop_counts(d, s, cfg).total * n for s, n in base.groups())
    r.add("flops_model", f"{fa:,}", format_count(fa),
          f"one forward of all {L} layers' attention{where}, each layer counted as it is"
          + (" (a local layer's core only its band)" if any(s.window for s, _ in arch.groups()) else ""), (fa, fb))
    # Arithmetic intensity of the core: FLOPs over the bytes of Q, K, V and O it must move.
    tq_n = T if cfg.phase == "prefill" else 1
    moved = B * h * b * (2 * H * tq_n + 2 * K * (T if spec.window is None else min(T, spec.window)))
    r.add("intensity", f"{f.attention / moved:,.1f}", "",
          "attention-core FLOPs / bytes of Q, K, V and output read or written. Decode stays near "
          "1-2 x group size: memory-bound; an H200's ridge point is about 206 FLOP/byte.")
    for row in kind.cost_rows(cfg, spec, d, where):  # the kind's own rows, and its formulas for the shared ones
        old = r.rows.get(row.key)
        r.rows[row.key] = row if old is None or row.value else replace(old, tip=row.tip)
    order = [key for key, _, _ in row_titles()]
    title = (f"Costs (per layer: layer {ctx.layer}, {spec.kind_label}; unless stated)"
             if any(s.window is not None for s, _ in arch.groups()) else "Costs (per layer unless stated)")
    return Costs(title, ctx.baseline_name, scope, tuple(r.rows[k] for k in order if k in r.rows))
