"""The 2026 layout's controls: a head width of its own, q/k norm, biases by projection, a sliding window
with its layer pattern, sinks, and the KV cache's format. Reads and writes plain config fields; the
config panel owns validity (a refused combination is reverted there, with its sentence)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QSignalBlocker, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from core.arch.config import AttentionConfig
from core.arch.formats import KV_FORMAT_NOTES, KV_FORMATS, STATE_FORMATS
from core.arch.stack import OWN
from core.kinds.registry import kind_named, kind_of
from core.kinds.standard.band import MAX_WINDOW
from widgets.common.steady import LayoutFirewall
from widgets.common.wheel import FocusCombo
from widgets.controls.slider_spin import SliderSpin

HEAD_DIMS = [8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 160, 192, 256, 320, 384, 512]
WINDOWS = [2**i for i in range(4, 18)]  # 16 .. 131072
PATTERNS = [("local", "every layer local (Mistral-7B-v0.1)"), ("alternate", "alternate, layer 0 local (Gemma 2, gpt-oss)"),
            ("5:1", "5 local : 1 global (Gemma 3)"), ("3:1", "3 local : 1 global"), ("1:1", "1 local : 1 global")]
SAME_AS_DTYPE = "same as dtype"

TIPS = {
    "lock": "On: head_dim = d_model / n_heads (n_heads must divide d_model), as 2019-2023 models. Off: a head width "
            "of its own (Qwen3, Gemma: n_heads x head_dim may differ from d_model).",
    "head_dim": "Width of one head. W_q is d_model x (n_heads x head_dim), W_o (n_heads x head_dim) x d_model.",
    "qk_norm": "RMSNorm over head_dim on q and on k before the scores (Qwen3, Gemma 3): 2 x head_dim weights a layer.",
    "window": "Sliding window: a local layer's query sees the W keys up to itself, itself included; its KV cache "
              "holds min(seq_len, W) tokens and its core counts only the band. Needs a causal mask.",
    "pattern": "Which layers are local. Type your own: N:1 (N local then one global) or one letter a layer, "
               "L local and G global (such as LLG).",
    "sinks": "Learned attention sinks (gpt-oss): one logit per head joins every softmax row and is dropped, so a "
             "row gives some of its mass to nothing: + n_heads parameters, no KV bytes.",
    "kv_dtype": "The KV cache's element format, separate from the compute dtype. KV bytes everywhere use it; the "
                "timing still runs in the compute dtype.",
}


class LayoutControls(QGroupBox):
    """Folded to one line (what is set) until opened, or until a configuration sets any of them."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.toggle = QToolButton()
        self.toggle.setCheckable(True)
        self.toggle.setArrowType(Qt.ArrowType.RightArrow)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setStyleSheet("QToolButton { border: none; font-weight: bold; }")
        self.toggle.setToolTip("Show or hide the 2026 layout controls: head width, q/k norm, sliding window and "
                               "layer pattern, sinks, KV-cache format.")
        self.toggle.setText("Layout")
        self.summary = QLabel("")  # what is set, one wrapped line beside the arrow (a long button would widen the panel)
        self.summary.setWordWrap(True)
        self.summary.setStyleSheet("color: #6b7280;")
        self.body = QWidget()
        self.lock = QCheckBox("tied: d_model / n_heads")
        self.lock.setChecked(True)
        self.head_dim = SliderSpin(HEAD_DIMS, 64, free=True, maximum=2**20, tooltip=TIPS["head_dim"])
        self.head_dim.setEnabled(False)
        self.own_head_dim: int | None = None  # the user's own width, kept while the lock is on
        self.hidden: frozenset[str] = frozenset()  # standard controls the layer's kind has no use for (set_hidden)
        self.qk_norm = QCheckBox("q/k RMSNorm")
        self.window_on = QCheckBox("windowed")
        self.window = SliderSpin(WINDOWS, 4096, free=True, maximum=MAX_WINDOW, tooltip=TIPS["window"])
        self.pattern = FocusCombo()
        self.pattern.setEditable(True)
        for key, text in PATTERNS:
            self.pattern.addItem(key, key)
            self.pattern.setItemData(self.pattern.count() - 1, text, 3)  # ToolTipRole
        self.sinks = QCheckBox("attention sinks")
        self.kv_dtype = FocusCombo()
        self.kv_dtype.addItem(SAME_AS_DTYPE, None)
        for name in KV_FORMATS:
            self.kv_dtype.addItem(name, name)
            self.kv_dtype.setItemData(self.kv_dtype.count() - 1, KV_FORMAT_NOTES[name], 3)
        self.state_dtype = FocusCombo()  # a recurrent layer's state (a hybrid stack's, or a mixer's own)
        for name in STATE_FORMATS:
            self.state_dtype.addItem(name, name)
        self.state_dtype.setToolTip(
            "How a recurrent layer (Gated DeltaNet, Mamba ...) keeps its state: float32 as vLLM and transformers do by "
            "default; bfloat16 halves it and fp8 quarters it, and whether a state survives that is debated (MiniMax-M2's "
            "team named it as one reason to go back to full attention). Its convolution's inputs stay in the compute "
            "dtype.")
        self.split = QLabel("")  # "52 local (W 1024) + 10 global layers"
        for name in ("lock", "qk_norm", "pattern", "sinks", "kv_dtype"):
            getattr(self, name).setToolTip(TIPS[name])
        self.window_on.setToolTip(TIPS["window"])
        self._build()
        self._connect()

    def _build(self) -> None:
        outer = QVBoxLayout(self)
        outer.setContentsMargins(6, 4, 6, 4)
        head = QHBoxLayout()
        head.addWidget(self.toggle)
        head.addWidget(LayoutFirewall(self.summary, wraps=True), 1)  # new at each step: no relayout of the panel
        outer.addLayout(head)
        outer.addWidget(self.body)
        self.body.hide()
        self.form = form = QFormLayout(self.body)
        form.setContentsMargins(0, 0, 0, 0)
        hrow = QHBoxLayout()  # short rows: the side panel keeps its width when this box opens
        hrow.addWidget(self.lock)
        hrow.addWidget(self.qk_norm)
        hrow.addStretch(1)
        form.addRow("head_dim", self.head_dim)
        self.head_row = QWidget()  # rows a standard layer has and a kind of widths of its own may not
        self.head_row.setLayout(hrow)

        form.addRow("", self.head_row)
        top = QHBoxLayout()
        top.addWidget(self.window_on)
        top.addWidget(self.pattern, 1)
        self.layers_row = QWidget()
        self.layers_row.setLayout(top)
        form.addRow("layers", self.layers_row)
        form.addRow("window W", self.window)
        srow = QHBoxLayout()
        srow.addWidget(self.sinks)
        srow.addStretch(1)
        srow.addWidget(self.split)
        self.sinks_row = QWidget()
        self.sinks_row.setLayout(srow)
        form.addRow("", self.sinks_row)
        form.addRow("KV cache", self.kv_dtype)
        form.addRow("State", self.state_dtype)
        form.setRowVisible(self.state_dtype, False)  # shown for a model with recurrent layers
        for row in (hrow, top, srow):  # rows in widgets of their own (hidden for MLA): no extra margins
            row.setContentsMargins(0, 0, 0, 0)

    def _connect(self) -> None:
        self.toggle.toggled.connect(self.set_open)
        self.lock.toggled.connect(self._on_lock)
        for box in (self.qk_norm, self.window_on, self.sinks):
            box.toggled.connect(self._on_any)
        self.head_dim.value_changed.connect(self._on_any)
        self.window.value_changed.connect(self._on_any)
        self.kv_dtype.currentIndexChanged.connect(self._on_any)
        self.state_dtype.currentIndexChanged.connect(self._on_any)
        self.pattern.activated.connect(self._on_any)
        line = self.pattern.lineEdit()
        if line is not None:
            line.editingFinished.connect(self._on_any)

    def set_open(self, open_: bool) -> None:
        with QSignalBlocker(self.toggle):
            self.toggle.setChecked(open_)
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if open_ else Qt.ArrowType.RightArrow)
        self.body.setVisible(open_)

    def _on_lock(self, locked: bool) -> None:
        self.head_dim.setEnabled(not locked)
        self.changed.emit()

    def _on_any(self, *_: object) -> None:
        if self.window_on.isChecked() and self.pattern.currentText().strip().lower() == "global":
            with QSignalBlocker(self.window_on), QSignalBlocker(self.pattern):  # "global" typed: no layer is local
                self.window_on.setChecked(False)
                self.pattern.setCurrentText("local")
        self._enable_window()
        self.changed.emit()

    def _enable_window(self) -> None:
        on = self.window_on.isChecked() and self.isEnabled()
        self.window.setEnabled(on)
        self.pattern.setEnabled(on)

    def set_hidden(self, hidden: frozenset[str]) -> None:
        """Hide the rows of the controls the layer's kind has no use for (its widths decide them, or it has none):
        head_dim (with the lock and q/k norm beside it), window, sinks."""
        if hidden == self.hidden:
            return  # five rows shown again at every slider step relaid the folded box (a layout request a step)
        self.hidden = hidden
        for row in (self.head_dim, self.head_row):
            self.form.setRowVisible(row, "head_dim" not in hidden)
        for row in (self.layers_row, self.window):
            self.form.setRowVisible(row, "window" not in hidden)
        self.form.setRowVisible(self.sinks_row, "sinks" not in hidden)

    def fields(self) -> dict[str, Any]:
        """The config fields these controls set."""
        return {
            "explicit_head_dim": None if self.lock.isChecked() or "head_dim" in self.hidden else self.head_dim.value(),
            "qk_norm": self.qk_norm.isChecked(),
            "window": self.window.value() if self.window_on.isChecked() else None,
            "layer_pattern": self.pattern.currentText() if self.window_on.isChecked() else "global",
            "sinks": self.sinks.isChecked(),
            "kv_dtype": self.kv_dtype.currentData(),
            "state_dtype": None if self.state_dtype.currentData() == "float32" else self.state_dtype.currentData(),
        }

    def write(self, cfg: AttentionConfig) -> None:
        """Show cfg. A field cfg leaves unset keeps the control's last value (a window switched off keeps its
        W and pattern for when it is switched on again; a tied head width keeps the user's own width)."""
        widgets = (self.lock, self.qk_norm, self.window_on, self.pattern, self.sinks, self.kv_dtype, self.state_dtype)
        blockers = [QSignalBlocker(w) for w in widgets]
        self.lock.setChecked(cfg.head_dim_tied)
        if not cfg.head_dim_tied:
            self.own_head_dim = cfg.head_dim
        self.head_dim.set_value(cfg.head_dim)  # tied: the width d_model / n_heads gives, greyed
        self.head_dim.setEnabled(not cfg.head_dim_tied)
        self.qk_norm.setChecked(cfg.qk_norm)
        self.window_on.setChecked(cfg.window is not None and cfg.layer_pattern != "global")
        if cfg.window is not None:
            self.window.set_value(cfg.window)
        if cfg.layer_pattern != "global":
            if self.pattern.findText(cfg.layer_pattern) < 0:
                self.pattern.addItem(cfg.layer_pattern, cfg.layer_pattern)
            self.pattern.setCurrentText(cfg.layer_pattern)
        self.sinks.setChecked(cfg.sinks)
        self.kv_dtype.setCurrentIndex(0 if cfg.kv_dtype is None else self.kv_dtype.findText(cfg.kv_dtype))
        self.state_dtype.setCurrentIndex(self.state_dtype.findData(cfg.state_format))
        recurrent = any(kind_of(s).has_state for s in set(cfg.architecture().layers))
        if self.form.isRowVisible(self.state_dtype) != recurrent:
            self.form.setRowVisible(self.state_dtype, recurrent)
        del blockers
        self._enable_window()
        self.show_summary(cfg)
        if layout_is_set(cfg):
            self.set_open(True)

    def show_summary(self, cfg: AttentionConfig) -> None:
        """The folded line and the local/global count: on every change, so they never contradict the costs."""
        local = cfg.local_layers()
        n_local = sum(local)
        self.split.setText(f"{n_local} local + {len(local) - n_local} global" if n_local else "")
        self.summary.setText(summary(cfg))
        if cfg.head_dim_tied:  # the greyed spin follows d_model / n_heads
            self.head_dim.set_value(cfg.head_dim)
        else:
            self.own_head_dim = cfg.head_dim


def layout_is_set(cfg: AttentionConfig) -> bool:
    return (not cfg.head_dim_tied or cfg.qk_norm or cfg.window is not None or cfg.sinks
            or cfg.kv_dtype is not None)


def summary(cfg: AttentionConfig) -> str:
    """One line of what the layout is: 'head_dim 128 (own), q/k norm, 52 local W 1024 + 10 global, KV q8_0'."""
    if cfg.widths is not None:
        return f"{cfg.mode}: the {kind_named(cfg.attention).cache_name} in {cfg.kv_format}"
    parts = [f"head_dim {cfg.head_dim}" + (" (tied)" if cfg.head_dim_tied else " (own)")]
    parts += ["q/k norm"] if cfg.qk_norm else []
    local = sum(cfg.local_layers())
    own = cfg.stack.pattern.count(OWN) if cfg.stack is not None else cfg.n_layers  # a stack's own layers
    parts.append(f"{local} local W {cfg.window:,} + {own - local} global" if local else
                 "all global" if cfg.stack is None else f"{own} global of {cfg.n_layers} layers (a hybrid stack)")
    parts += ["sinks"] if cfg.sinks else []
    parts.append(f"KV {cfg.kv_format}")
    if cfg.stack is not None:
        parts.append(f"state {cfg.state_format}")
    return ", ".join(parts)
