"""The numbers: parameters, FLOPs, KV cache, each beside its MHA baseline, with formula tooltips.

Pure integer math on the GUI thread: it runs on every slider tick.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGridLayout, QGroupBox, QLabel, QVBoxLayout, QWidget

from core.config import AttentionConfig
from core.counts import flop_counts, format_bytes, format_count, kv_cache_bytes, param_counts
from widgets.style import set_style

BETTER = "#059669"
WORSE = "#dc2626"


def delta_text(value: float, baseline: float) -> tuple[str, str]:
    """('-75.0% vs MHA', colour), or ('= MHA', grey)."""
    if baseline == value:
        return "= MHA", "#6b7280"
    change = value / baseline - 1 if baseline else 0.0
    return f"{change:+.1%} vs MHA", BETTER if change < 0 else WORSE


class MetricsPanel(QWidget):
    """One row per metric: name, exact value, short value, delta against MHA."""

    ROWS = [
        ("head_dim", "head_dim"), ("mode", "mode"),
        ("q", "W_q params"), ("k", "W_k params"), ("v", "W_v params"), ("o", "W_o params"),
        ("params", "Params / layer"), ("params_model", "Params, all layers"),
        ("flops_proj", "FLOPs projections"), ("flops_core", "FLOPs attention core"), ("flops", "FLOPs / layer"),
        ("kv_token", "KV cache / token"), ("kv_total", "KV cache, B x T x L"), ("intensity", "Core FLOP/byte"),
    ]

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        box = QGroupBox("Costs (per layer unless stated)")
        grid = QGridLayout(box)
        grid.setHorizontalSpacing(10)
        grid.setVerticalSpacing(2)
        self.values: dict[str, QLabel] = {}
        self.shorts: dict[str, QLabel] = {}
        self.deltas: dict[str, QLabel] = {}
        self._name_labels: dict[str, QLabel] = {}
        for row, (key, title) in enumerate(self.ROWS):
            name = QLabel(title)
            value, short, delta = QLabel(), QLabel(), QLabel()
            value.setStyleSheet("font-family: monospace;")
            for w in (value, short):
                w.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            grid.addWidget(name, row, 0)
            grid.addWidget(value, row, 1)
            grid.addWidget(short, row, 2)
            grid.addWidget(delta, row, 3)
            self.values[key], self.shorts[key], self.deltas[key] = value, short, delta
            self._name_labels[key] = name
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(box)

    def _set(self, key: str, value: str, short: str, tip: str, delta: tuple[str, str] | None = None) -> None:
        self.values[key].setText(value)
        self.shorts[key].setText(short)
        text, colour = delta or ("", "")
        self.deltas[key].setText(text)
        set_style(self.deltas[key], f"color: {colour};" if colour else "")
        for w in (self.values[key], self.shorts[key], self.deltas[key], self._name_labels[key]):
            w.setToolTip(tip)

    def show_config(self, cfg: AttentionConfig) -> None:
        d, H, K, h = cfg.d_model, cfg.n_heads, cfg.kv_heads, cfg.head_dim
        B, T, L, b = cfg.batch_size, cfg.seq_len, cfg.n_layers, cfg.dtype_bytes
        p, pm = param_counts(cfg), param_counts(cfg.mha())
        f, fm = flop_counts(cfg), flop_counts(cfg.mha())
        kv = kv_cache_bytes(cfg)
        bias = " + bias" if cfg.bias else ""
        self._set("head_dim", str(h), "", f"head_dim = d_model / n_heads = {d} / {H}")
        self._set("mode", cfg.mode_label, "", f"{H} query heads, {K} KV heads, group size {cfg.group_size}")
        self._set("q", f"{p.q:,}", format_count(p.q), f"W_q = d_model x n_heads x head_dim{bias} = {d} x {H} x {h}")
        self._set("k", f"{p.k:,}", format_count(p.k), f"W_k = d_model x n_kv_heads x head_dim{bias} = {d} x {K} x {h}",
                  delta_text(p.k, pm.k))
        self._set("v", f"{p.v:,}", format_count(p.v), f"W_v = d_model x n_kv_heads x head_dim{bias} = {d} x {K} x {h}",
                  delta_text(p.v, pm.v))
        self._set("o", f"{p.o:,}", format_count(p.o), f"W_o = n_heads x head_dim x d_model{bias} = {H} x {h} x {d}")
        self._set("params", f"{p.total:,}", format_count(p.total),
                  f"2 x d_model x head_dim x (n_heads + n_kv_heads){bias}; MHA: 4 x d_model^2 = {4 * d * d:,}",
                  delta_text(p.total, p.total_mha))
        self._set("params_model", f"{p.total * L:,}", format_count(p.total * L),
                  f"attention parameters of all {L} layers (no MLP, no embeddings)",
                  delta_text(p.total * L, p.total_mha * L))
        tq = "T" if cfg.phase == "prefill" else "1"
        self._set("flops_proj", f"{f.projections:,}", format_count(f.projections),
                  f"2 x B x {tq} x d x (H*h + 2*K*h) + 2 x B x {tq} x H*h x d  (B={B}, T={T})",
                  delta_text(f.projections, fm.projections))
        core_tip = ("4 x B x H x T^2 x h" + (" / 2 (causal)" if cfg.causal else "")
                    if cfg.phase == "prefill" else "4 x B x H x T x h (one query against T cached keys)")
        self._set("flops_core", f"{f.attention:,}", format_count(f.attention),
                  core_tip + ": depends on n_heads, not on n_kv_heads", delta_text(f.attention, fm.attention))
        self._set("flops", f"{f.total:,}", format_count(f.total), "projections + attention core, one forward",
                  delta_text(f.total, fm.total))
        self._set("kv_token", f"{kv.bytes_per_token:,} B", format_bytes(kv.bytes_per_token),
                  f"2 (K and V) x n_layers x n_kv_heads x head_dim x bytes = 2 x {L} x {K} x {h} x {b}",
                  delta_text(kv.bytes_per_token, kv.bytes_per_token * H / K))
        self._set("kv_total", f"{kv.bytes_total:,} B", format_bytes(kv.bytes_total),
                  f"KV cache per token x batch x seq_len = {kv.bytes_per_token:,} x {B} x {T}",
                  delta_text(kv.bytes_total, kv.bytes_total_mha))
        # Arithmetic intensity of the core: FLOPs over the bytes of Q, K, V and O it must move.
        tq_n = T if cfg.phase == "prefill" else 1
        moved = B * h * b * (2 * H * tq_n + 2 * K * T)
        self._set("intensity", f"{f.attention / moved:,.1f}", "",
                  "attention-core FLOPs / bytes of Q, K, V and output read or written. Decode stays near "
                  "1-2 x group size: memory-bound; an H200's ridge point is about 206 FLOP/byte.")
