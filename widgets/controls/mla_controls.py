"""The attention type: standard (MHA/GQA/MQA, the sliders above) or multi-head latent attention with its widths.

Torch-free. Emits `changed`; the config panel reads dims() (a ValueError it says and undoes), turns a change of
type into the configuration it implies, and says what moved.
"""

from __future__ import annotations

from PySide6.QtCore import QSignalBlocker, Signal
from PySide6.QtWidgets import QFormLayout, QGroupBox, QHBoxLayout, QLabel, QWidget

from core.arch.config import AttentionConfig
from core.counts import layer_kv_bytes_per_token
from core.format import format_bytes, format_noun
from core.kinds.mla.spec import MLA_MAX, MLADims
from widgets.common.style import set_style
from widgets.common.wheel import FocusCombo, FocusSpin

# field, label, tooltip
WIDTHS = [
    ("q_lora_rank", "q_lora_rank", "The low-rank query: d_model -> q_lora_rank -> RMSNorm -> n_heads x (nope + rope). "
                                   "0 builds a plain W_q (DeepSeek-V2-Lite). DeepSeek-V3: 1536."),
    ("kv_lora_rank", "kv_lora_rank", "The latent every token caches: d_model -> kv_lora_rank (then RMSNorm); each head's "
                                     "key and value are rebuilt from it by kv_b. DeepSeek-V3: 512."),
    ("qk_nope_head_dim", "qk_nope", "Each head's query/key width without position, rebuilt from the latent. 128."),
    ("qk_rope_head_dim", "qk_rope", "The RoPE part of each query, and of the one key all heads share (cached beside "
                                    "the latent). Even: RoPE rotates pairs. 64."),
    ("v_head_dim", "v_head_dim", "Each head's value width, rebuilt from the latent. 128."),
]
TYPE_TIP = ("Standard: each KV head caches its own key and value (MHA, GQA, MQA: the n_kv_heads slider). "
            "MLA (DeepSeek-V2/V3, Kimi K2): every token caches one small latent and one shared RoPE key, and each "
            "head's key and value are rebuilt from them; run naive (decompress, then per-head attention) or absorbed "
            "(scores against the latent itself).")


class MLAControls(QGroupBox):
    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Attention type", parent)
        self.kind = FocusCombo()
        self.kind.addItem("standard: MHA / GQA / MQA", "standard")
        self.kind.addItem("MLA: latent KV (DeepSeek)", "mla")
        self.kind.setToolTip(TYPE_TIP)
        self.spins: dict[str, FocusSpin] = {}
        self.d_model = 768  # the width the first switch to MLA fits its ranks to
        self._last: MLADims | None = None  # the widths to come back to; None: widths that fit d_model (fitting_dims)
        form = QFormLayout(self)
        form.setContentsMargins(6, 4, 6, 4)
        form.addRow("type", self.kind)
        self.rows = QWidget()
        grid = QFormLayout(self.rows)
        grid.setContentsMargins(0, 0, 0, 0)
        pair: QHBoxLayout | None = None
        for i, (name, label, tip) in enumerate(WIDTHS):
            spin = FocusSpin()
            spin.setRange({"q_lora_rank": 0, "qk_rope_head_dim": 2}.get(name, 1), MLA_MAX)
            spin.setKeyboardTracking(False)  # typing 64 must not pass through an odd 6... on the way
            spin.setSingleStep(2 if name == "qk_rope_head_dim" else 64 if "rank" in name else 16)
            spin.setToolTip(tip)
            spin.setAccessibleName(name)
            spin.setMaximumWidth(96)  # two a row: the side panel keeps its width
            self.spins[name] = spin
            if i % 2 == 0:
                pair = QHBoxLayout()
                grid.addRow(label, pair)
                pair.addWidget(spin, 1)
            else:
                assert pair is not None
                tag = QLabel(label)
                tag.setToolTip(tip)
                pair.addWidget(tag)
                pair.addWidget(spin, 1)
        self.note = QLabel("")
        self.note.setWordWrap(True)
        set_style(self.note, "color: #6b7280;")
        grid.addRow(self.note)
        form.addRow(self.rows)
        self.rows.hide()
        self.kind.currentIndexChanged.connect(self._emit)
        for spin in self.spins.values():
            spin.valueChanged.connect(self._emit)

    def dims(self) -> MLADims | None:
        """The widths shown, or None for standard; a ValueError (odd rope ...) when they are not valid."""
        if self.kind.currentData() != "mla":
            return None
        return MLADims(**{name: spin.value() for name, spin in self.spins.items()})

    def _emit(self, *_: object) -> None:
        if self.kind.currentData() == "mla" and self.rows.isHidden():
            self.write_dims(self._last or fitting_dims(self.d_model))  # back to MLA: the widths it had
        self.rows.setVisible(self.kind.currentData() == "mla")
        try:
            self._last = self.dims() or self._last  # the widths to come back to after a spell of standard
            if self.kind.currentData() == "mla" and self._last is None:
                self._last = fitting_dims(self.d_model)
        except ValueError:
            pass  # the panel says why and puts the last valid widths back
        self.changed.emit()

    def write_dims(self, dims: MLADims) -> None:
        blockers = [QSignalBlocker(s) for s in self.spins.values()]
        for name, spin in self.spins.items():
            spin.setValue(getattr(dims, name))
        del blockers

    def write(self, cfg: AttentionConfig) -> None:
        """Show cfg's attention type and widths (standard keeps the last MLA widths for a switch back)."""
        self.d_model = cfg.d_model
        with QSignalBlocker(self.kind):
            self.kind.setCurrentIndex(1 if cfg.mla is not None else 0)
        if cfg.mla is not None:
            self._last = cfg.mla
            self.write_dims(cfg.mla)
        self.rows.setVisible(cfg.mla is not None)

    def show_note(self, cfg: AttentionConfig) -> None:
        """What an MLA layer caches and rebuilds; the panel calls it at every change (n_heads is in it)."""
        m = cfg.mla
        if m is None:
            return
        self.note.setText(f"Caches {m.kv_lora_rank} + {m.qk_rope_head_dim} = {m.latent_width} values a token a layer "
                          f"({format_noun(float(f'{m.latent_width / (2 * m.v_head_dim):.3g}'), 'GQA head')} of "
                          f"{m.v_head_dim}); {format_noun(cfg.layer_spec().n_heads, 'head')} of q/k {m.qk_head_dim}, "
                          f"v {m.v_head_dim} rebuilt from it.")


def fitting_dims(d_model: int) -> MLADims:
    """DeepSeek-V3's widths at its width and above; below it a latent of about d_model / 4 (DeepSeek-V2-Lite: 512 at
    2048) and no low-rank query under 4096 (V2-Lite has none), so a first switch to MLA compresses something."""
    if d_model >= 7168:
        return MLADims()
    rank = max(32, min(512, d_model // 4 // 32 * 32))
    return MLADims(q_lora_rank=1536 if d_model >= 4096 else 0, kv_lora_rank=rank)


def switch_attention(cfg: AttentionConfig, dims: MLADims | None) -> tuple[AttentionConfig, str]:
    """The layer a change of attention type implies, and the sentence that says what moved: to MLA, the extras
    an MLA layer has none of are off; to standard, MHA of the same heads, head_dim tied when d_model allows."""
    H = cfg.n_heads
    if dims is not None:
        new = cfg.with_(mla=dims, n_kv_heads=None, explicit_head_dim=None, bias=False, qk_norm=False, window=None,
                        layer_pattern="global", sinks=False)
        return new, (f"Attention MLA: {format_noun(H, 'head')}, each key and value rebuilt from a "
                     f"{dims.latent_width}-value latent "
                     f"(n_kv_heads follows n_heads); biases, q/k norm, window and sinks are off. {kv_move(cfg, new)}")
    width = cfg.mla.v_head_dim if cfg.mla is not None else cfg.head_dim
    tied = cfg.d_model % H == 0
    new = cfg.with_(mla=None, n_kv_heads=H, explicit_head_dim=None if tied else width)
    return new, (f"Attention standard: MHA of {format_noun(H, 'head')}, head_dim "
                 + (f"{cfg.d_model // H} (d_model / n_heads). " if tied else f"{width} (its own, as MLA's values). ")
                 + kv_move(cfg, new))


def switch_key(cfg: AttentionConfig) -> tuple[object, ...]:
    """What an attention switch's sentence names: while these stay, it still describes the layer."""
    return cfg.d_model, cfg.n_heads, cfg.kv_heads, cfg.mla, cfg.kv_format


def kv_move(old: AttentionConfig, new: AttentionConfig) -> str:
    """'KV cache per token per layer: 2,304 B -> 57 KiB.'"""
    a, b = (layer_kv_bytes_per_token(c.layer_spec(), c.kv_format) for c in (old, new))
    return f"KV cache a token a layer: {format_bytes(a)} -> {format_bytes(b)}."
