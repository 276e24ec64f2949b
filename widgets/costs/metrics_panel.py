"""The numbers: parameters, FLOPs, KV cache, each beside a baseline, with formula tooltips.

Per-layer rows describe the layer on screen; whole-model rows sum every layer of the architecture,
so a real model changed in one layer is counted as it is (that layer changed, the others as
trained). The baseline is the MHA layer of the same width in design mode and the model as trained
for a real model. Pure integer math on the GUI thread: it runs on every slider tick.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QFontDatabase
from PySide6.QtWidgets import QApplication, QGridLayout, QGroupBox, QLabel, QVBoxLayout, QWidget

from core.arch.config import AttentionConfig
from core.arch.formats import bytes_per_value
from core.arch.model import Architecture
from core.counts import kind_counts, layer_flop_counts, layer_param_counts, model_counts
from core.format import format_bytes, format_count
from widgets.common.steady import SteadyLabel
from widgets.common.style import set_colour, set_style, set_tip
from widgets.costs.mla_costs import show_mla_costs

BETTER = "#059669"
MAX_EXACT_CHARS = 17  # "1,234,567,890,123" (below 10^13: Llama 3 8B's 8k prefill) shows in full; larger in
# e-notation, exact in the tip (wider figures made DeepSeek-V3's panel, and the window, wider than a 1024 px screen)
WORSE = "#dc2626"
GREY = "#6b7280"


def delta_text(value: float, baseline: float) -> tuple[str, str]:
    """('-75.0%', colour), or ('=', grey); the column's header names the baseline."""
    if baseline == value:
        return "=", GREY
    change = value / baseline - 1 if baseline else 0.0
    return percent_change(change), BETTER if change < 0 else WORSE


def percent_change(change: float) -> str:
    """+0.25 -> '+25.0%'. More decimals where one would read as no change or as all of it gone: 3 KV heads
    instead of 10,101 are '-99.97%', not '-100.0%'; a change of 1 in 10^7, '+1e-05%', not '+0.0%'."""
    pct = change * 100
    for decimals in range(1, 5):
        text = f"{pct:+.{decimals}f}"
        if float(text) not in (0.0, -100.0) or pct in (0.0, -100.0):
            return text + "%"
    return f"{pct:+.2g}%"


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
        return cls(cfg.architecture(), cfg.mha().architecture(), min(layer, cfg.n_layers - 1))


def exact(label: QLabel) -> str:
    """A label's figure in full: the exact one a value in e-notation stands for."""
    return getattr(label, "exact", None) or label.text()


class MetricsPanel(QWidget):
    """One row per metric: name, exact value, short value, delta against the baseline."""

    # Memory first: at 1280x800 the KV rows must be in view without scrolling.
    ROWS = [
        ("head_dim", "head_dim"),
        ("kv_token", "KV cache / token, all layers"), ("kv_total", "KV cache, B x T x L"),
        ("kv_split", "KV cache: local | global"), ("layers", "Layers: local | global"),
        ("params", "Params / layer"), ("params_model", "Attention params, all layers"),
        ("q", "W_q params"), ("k", "W_k params"), ("v", "W_v params"),
        ("q_a", "q_a_proj params"), ("q_a_norm", "q_a_layernorm params"), ("q_b", "q_b_proj params"),
        ("kv_a", "kv_a_proj_with_mqa params"), ("kv_a_norm", "kv_a_layernorm params"), ("kv_b", "kv_b_proj params"),
        ("o", "W_o params"),
        ("extras", "q/k norm + sinks params"),
        ("flops_proj", "FLOPs projections"), ("flops_core", "FLOPs attention core"), ("flops", "FLOPs / layer"),
        ("flops_model", "FLOPs, all layers"),
        ("intensity", "Core FLOP/byte"),
        ("mla_kv", "MLA latent | decompressed"), ("mla_equiv", "MLA latent as GQA heads"),
        ("mla_decode", "MLA decode FLOP/byte"),
    ]
    PROJECTIONS = ("q", "k", "v", "q_a", "q_a_norm", "q_b", "kv_a", "kv_a_norm", "kv_b", "o")
    # Rows with nothing to compare against: their short figure also takes the change's column (DeepSeek-V3's
    # "128 + 64", "of width 128" and "naive 0.5" widened the panel, and the window past 1024 px).
    NO_BASELINE = ("head_dim", "mla_kv", "mla_equiv", "mla_decode")

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.box = QGroupBox("Costs (per layer unless stated)")
        grid = QGridLayout(self.box)
        grid.setHorizontalSpacing(6)  # 10 made the window wider than 1024 px at the largest figures
        grid.setVerticalSpacing(2)
        self.scope = QLabel("")
        self.scope.setWordWrap(True)
        set_style(self.scope, "color: #b45309;")
        self.scope.hide()
        grid.addWidget(self.scope, 0, 0, 1, 4)
        self.delta_header = QLabel("vs MHA")  # names the baseline of the last column
        self.delta_header.setToolTip("Each figure against the baseline: the MHA layer of the same width and "
                                     "heads (random weights), or the model as trained (a real model).")
        set_style(self.delta_header, f"color: {GREY};")
        grid.addWidget(self.delta_header, 1, 3)
        grid.setColumnStretch(1, 1)
        self.values: dict[str, SteadyLabel] = {}
        self.shorts: dict[str, SteadyLabel] = {}
        self.deltas: dict[str, SteadyLabel] = {}
        self._name_labels: dict[str, SteadyLabel] = {}
        for row, (key, title) in enumerate(self.ROWS, start=2):
            name = SteadyLabel(title)
            value, short, delta = SteadyLabel(), SteadyLabel(), SteadyLabel()  # new figures relay nothing
            value.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
            for w in (name, value, short, delta):  # copied from a menu: a selectable label paints 10x slower
                self._add_copy_actions(w, value)
            for col, w in enumerate((name, value, short, delta)):  # a fixed-size label sits left, not centred
                span = 2 if w is short and key in self.NO_BASELINE else 1  # "of width 128" in a column of "24 MiB"s
                grid.addWidget(w, row, col, 1, span, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
            self.values[key], self.shorts[key], self.deltas[key] = value, short, delta
            self._name_labels[key] = name
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.box)

    def _add_copy_actions(self, label: QLabel, value: QLabel) -> None:
        copy_value = QAction("Copy this row's exact figure", label)
        copy_value.triggered.connect(lambda: QApplication.clipboard().setText(exact(value)))
        copy_all = QAction("Copy all costs (tab-separated)", label)
        copy_all.triggered.connect(lambda: QApplication.clipboard().setText(self.table_text()))
        label.addActions([copy_value, copy_all])
        label.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)

    def table_text(self) -> str:
        """The rows on show as tab-separated lines: name, exact value, short value, change against the baseline."""
        lines = [f"{self.box.title()}\t\t\t{self.delta_header.text()}"]
        for key, _ in self.ROWS:
            if not self._name_labels[key].isHidden():
                lines.append("\t".join(exact(w) for w in (self._name_labels[key], self.values[key], self.shorts[key],
                                                            self.deltas[key])))
        return "\n".join(lines)

    def _show_row(self, key: str, visible: bool) -> None:
        for w in (self._name_labels[key], self.values[key], self.shorts[key], self.deltas[key]):
            w.setVisible(visible and not (w is self.deltas[key] and key in self.NO_BASELINE))

    def _set(self, key: str, value: str, short: str, tip: str, delta: tuple[str, str] | None = None) -> None:
        self.values[key].exact = value  # what the copy actions copy
        if len(value) > MAX_EXACT_CHARS:  # a 22-digit count would widen the panel past a 1024 px screen
            number, _, unit = value.partition(" ")
            tip = f"exactly {value}. {tip}"
            value = f"{int(number.replace(',', '')):.6e}" + (f" {unit}" if unit else "")
            if not unit:
                short = ""  # a count's e-notation says it already; bytes keep theirs ('1.82 EiB' reads at a glance)
        self.values[key].setText(value)
        self.shorts[key].setText(short)
        text, colour = delta or ("", "")
        self.deltas[key].setText(text)
        set_colour(self.deltas[key], colour)
        for w in (self.values[key], self.shorts[key], self._name_labels[key]):
            set_tip(w, tip)
        set_tip(self.deltas[key], f"{text} {self.delta_header.text()}: {tip}" if text else tip)

    def set_tip(self, key: str, tip: str) -> None:
        """Replace a row's tooltip (an MLA layer's formulas for the rows every layer shares)."""
        for w in (self.values[key], self.shorts[key], self._name_labels[key]):
            set_tip(w, tip)

    def show_config(self, cfg: AttentionConfig, ctx: CostContext | None = None) -> None:
        ctx = ctx or CostContext.design(cfg)
        arch, base = ctx.arch, ctx.baseline
        spec, base_spec = arch.layers[ctx.layer], base.layers[ctx.layer]
        d, H, K, h = arch.d_model, spec.n_heads, spec.n_kv_heads, spec.head_dim
        B, T, L, b = cfg.batch_size, cfg.seq_len, arch.n_layers, cfg.dtype_bytes
        fmt, kb = cfg.kv_format, bytes_per_value(cfg.kv_format)  # the KV cache's own element format
        name = ctx.baseline_name
        self.delta_header.setText(f"vs {name}")
        p, pm = layer_param_counts(d, spec), layer_param_counts(d, base_spec)
        f, fm = layer_flop_counts(d, spec, cfg), layer_flop_counts(d, base_spec, cfg)
        mc, mb = model_counts(arch, cfg), model_counts(base, cfg)
        scope = arch.change_scope(base) if name == "trained" else ""
        self.scope.setText(f"Changed: {scope}. Whole-model rows count that change and every other layer as "
                           "trained." if scope else "")
        self.scope.setVisible(bool(scope))
        where = f" ({scope})" if scope else ""
        vs = delta_text
        self._set("head_dim", str(h), "own" if H * h != d else "",
                  f"head_dim = width / n_heads = {H * h} / {H}" if H * h == d else
                  f"head_dim {h} of its own: n_heads x head_dim = {H * h:,}, not d_model {d:,}")
        extras = p.qk_norm + p.sinks
        self._show_row("extras", bool(extras))
        self._set("extras", f"{extras:,}", "", f"q/k RMSNorm weights 2 x head_dim = {p.qk_norm:,}; sink logits, "
                  f"one per head = {p.sinks:,}. Sinks keep no KV bytes.", vs(extras, pm.qk_norm + pm.sinks))
        shown = p.rows(d, spec)
        base_rows = {key: n for key, _, n, _ in pm.rows(d, base_spec)}
        for key in self.PROJECTIONS:
            self._show_row(key, any(row[0] == key for row in shown))
        for key, name, n, formula in shown:  # W_q..W_o, or an MLA layer's seven
            self._name_labels[key].setText(f"{name} params")
            self._set(key, f"{n:,}", format_count(n), formula, vs(n, base_rows[key]) if key in base_rows else None)
        self._set("params", f"{p.total:,}", format_count(p.total), p.formula(d, spec), vs(p.total, pm.total))
        self._set("params_model", f"{mc.params:,}", format_count(mc.params),
                  f"attention parameters (W_q, W_k, W_v, W_o) of all {L} layers{where}: no MLP, no embeddings",
                  vs(mc.params, mb.params))
        tq = "T" if cfg.phase == "prefill" else "1"
        self._set("flops_proj", f"{f.projections:,}", format_count(f.projections),
                  f"2 x B x {tq} x d x (H*h + 2*K*h) + 2 x B x {tq} x H*h x d  (B={B}, T={T})",
                  vs(f.projections, fm.projections))
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
        self._set("flops_core", f"{f.attention:,}", format_count(f.attention),
                  core_tip + ": depends on n_heads, not on n_kv_heads", vs(f.attention, fm.attention))
        self._set("flops", f"{f.total:,}", format_count(f.total), "projections + attention core, one forward",
                  vs(f.total, fm.total))
        fa = sum(layer_flop_counts(d, s, cfg).total * n for s, n in arch.groups())
        fb = sum(layer_flop_counts(d, s, cfg).total * n for s, n in base.groups())
        self._set("flops_model", f"{fa:,}", format_count(fa),
                  f"one forward of all {L} layers' attention{where}, each layer counted as it is"
                  + (" (a local layer's core only its band)" if any(s.window for s, _ in arch.groups()) else ""),
                  vs(fa, fb))
        local_layers = [s for s, _ in arch.groups() if s.window is not None]
        self.box.setTitle(f"Costs (per layer: layer {ctx.layer}, {spec.kind_label}; unless stated)" if local_layers
                          else "Costs (per layer unless stated)")
        kinds = kind_counts(arch, cfg)
        local = [k for k in kinds if k.window is not None]
        self._show_row("kv_split", bool(local) and arch.kind != "encoder")
        self._show_row("layers", bool(local))
        if arch.kind == "encoder":
            why = "an encoder reads its whole input at once and keeps no KV cache"
            self._set("kv_token", "none", "", why)
            self._set("kv_total", "none", "", why)
        else:
            per_layer = " + ".join(f"{n} x 2 x {s.n_kv_heads} x {s.head_dim} x {kb:g}" for s, n in arch.groups())
            self._set("kv_token", f"{mc.kv_bytes_per_token:,} B", format_bytes(mc.kv_bytes_per_token),
                      f"{mc.kv_bytes_per_token:,} B = 2 (K and V) x n_kv_heads x head_dim x bytes per value "
                      f"({fmt}: {kb:g}), summed over the {L} layers{where}: {per_layer}"
                      + (". Once the context passes a window, only the global layers keep growing." if local else ""),
                      vs(mc.kv_bytes_per_token, mb.kv_bytes_per_token))
            held = (" (a local layer holds min(seq_len, W) tokens: the keys the next query reads; transformers "
                    "keeps W - 1 between steps)" if local else "")
            formula = " + ".join(f"{n} x 2 x {sp.n_kv_heads} x {sp.head_dim} x {kb:g} x {B} x "
                                 + (f"min({T:,}, {sp.window:,})" if sp.window else f"{T:,}") for sp, n in arch.groups())
            self._set("kv_total", f"{mc.kv_bytes_total:,} B", format_bytes(mc.kv_bytes_total),
                      f"layers x 2 (K and V) x n_kv_heads x head_dim x bytes per value ({fmt}) x batch x tokens held "
                      f"= {formula}{held}", vs(mc.kv_bytes_total, mb.kv_bytes_total))
        if ctx.kv_point is not None:
            label, per_token, trained = ctx.kv_point
            why = (f"the frontier point {label} in every layer, counted as the Frontier tab counts it (the trained "
                   f"model's cache in 16-bit: {trained:,.0f} B a token at seq_len {T:,}); the other rows count the "
                   "layers as trained")
            self._set("kv_token", f"{per_token:,.0f} B", format_bytes(per_token), why, vs(per_token, trained))
            total = per_token * T * B
            self._set("kv_total", f"{total:,.0f} B", format_bytes(total), why + f", x {T:,} tokens x batch {B}",
                      vs(total, trained * T * B))
        if local:
            glob = next((k for k in kinds if k.window is None), None)
            g_kv, g_n = (glob.kv_bytes_total, glob.n_layers) if glob else (0, 0)
            l_kv, l_n = sum(k.kv_bytes_total for k in local), sum(k.n_layers for k in local)
            self._set("kv_split", format_bytes(l_kv), f"| {format_bytes(g_kv)}",
                      f"local layers' cache {l_kv:,} B, global layers' {g_kv:,} B, at seq_len {T:,}")
            windows = ", ".join(f"W {k.window:,}" for k in local)
            self._set("layers", f"{l_n} | {g_n}", windows,
                      "; ".join(f"{k.kind}: {k.n_layers} layers, {format_count(k.params)} params, "
                                f"{format_count(k.flops)} FLOPs, {format_bytes(k.kv_bytes_total)} KV" for k in kinds)
                      + f". The per-layer rows show layer {ctx.layer} ({spec.kind_label}).")
        # Arithmetic intensity of the core: FLOPs over the bytes of Q, K, V and O it must move.
        tq_n = T if cfg.phase == "prefill" else 1
        moved = B * h * b * (2 * H * tq_n + 2 * K * (T if spec.window is None else min(T, spec.window)))
        self._set("intensity", f"{f.attention / moved:,.1f}", "",
                  "attention-core FLOPs / bytes of Q, K, V and output read or written. Decode stays near "
                  "1-2 x group size: memory-bound; an H200's ridge point is about 206 FLOP/byte.")
        for key in ("mla_kv", "mla_equiv", "mla_decode"):
            self._show_row(key, spec.mla is not None)
        if spec.mla is not None:
            show_mla_costs(self, cfg, spec, d, where)
