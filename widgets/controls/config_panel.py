"""The controls: architecture sliders, workload, preset picker. Emits a valid AttentionConfig.

A user can never reach an invalid combination: n_heads steps over the divisors of d_model and
n_kv_heads over the divisors of n_heads. The panel remembers what the user chose for n_heads and
n_kv_heads (their intent) and snaps from that intent on every change, so a d_model drag that comes
back restores the start exactly; each forced move is named in `notice`, with its reason.
"""

from __future__ import annotations

from PySide6.QtCore import QSignalBlocker, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QVBoxLayout,
    QWidget,
)

from core.arch.config import (
    DTYPE_BYTES,
    MAXIMA,
    PHASES,
    AttentionConfig,
    valid_n_heads,
    valid_n_kv_heads,
)
from core.arch.presets import LAYOUT_DEFAULTS, load_presets
from core.kinds.registry import kind_named
from core.kinds.strip import strip_cells
from core.kinds.switch import switch_key, switch_kind
from core.models.choices import ModelShape
from widgets.common.steady import LayoutFirewall, WholeLabel
from widgets.common.style import set_style
from widgets.common.wheel import FocusCombo
from widgets.controls import config_tips
from widgets.controls.config_tips import CUSTOM_NOTE, TIPS, model_tips, why_choices
from widgets.controls.kind_controls import KindControls
from widgets.controls.layout_controls import LayoutControls
from widgets.controls.preset_match import PresetMatch
from widgets.controls.slider_spin import SliderSpin
from widgets.controls.stack_strip import StackStrip
from widgets.costs.mode_badge import ModeBadge

D_MODEL_CHOICES = list(range(32, 16384 + 1, 32))
POW2 = [2**i for i in range(0, 18)]  # 1 .. 131072
FREE_HEADS = list(range(1, 257))  # n_heads with a head width of its own
NOTICE_HINT = "When one value forces another, or a value is refused, this line says why."


REFUSED = " The previous setting is kept."  # ends every refusal: said until a valid change


class ConfigPanel(QWidget):
    config_changed = Signal(object)  # AttentionConfig
    device_changed = Signal(str)
    notice = Signal(str)  # a slider was moved to stay valid, and why
    layer_picked = Signal(int)  # a cell of the layers' strip was clicked: the layer the maps and timing show

    def __init__(self, cfg: AttentionConfig, devices: list[str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._cfg = cfg
        self.preset = FocusCombo()
        self.preset.addItem("Custom")
        for p in load_presets():
            self.preset.addItem(p.name, p)
            self.preset.setItemData(self.preset.count() - 1, p.note, 3)  # ToolTipRole
        self.shape: ModelShape | None = None  # a real model's shape: the sliders keep to what it allows
        # Typed values may go to the configuration's own maxima (a pin or preset may hold them).
        self.d_model = SliderSpin(D_MODEL_CHOICES, cfg.d_model, free=True, maximum=MAXIMA["d_model"],
                                  tooltip=TIPS["d_model"])
        self.n_heads = SliderSpin(valid_n_heads(cfg.d_model), cfg.n_heads, tooltip=TIPS["n_heads"])
        self.n_kv_heads = SliderSpin(valid_n_kv_heads(cfg.n_heads), cfg.kv_heads, tooltip=TIPS["n_kv_heads"])
        self.seq_len = SliderSpin(POW2, cfg.seq_len, free=True, maximum=MAXIMA["seq_len"], tooltip=TIPS["seq_len"])
        self.batch_size = SliderSpin(POW2[:10], cfg.batch_size, free=True, maximum=MAXIMA["batch_size"],
                                     tooltip=TIPS["batch_size"])
        self.n_layers = SliderSpin(list(range(1, 129)), cfg.n_layers, free=True, maximum=MAXIMA["n_layers"],
                                   tooltip=TIPS["n_layers"])
        self.dtype = FocusCombo()
        self.dtype.addItems(list(DTYPE_BYTES))
        self.phase = FocusCombo()
        self.phase.addItems(list(PHASES))
        self.causal = QCheckBox("causal mask")
        self.bias = QCheckBox("biases")
        self.bias_which = FocusCombo()  # which projections, when biases are on
        self.bias_which.addItem("all four", True)
        self.bias_which.addItem("q, k, v only", "qkv")
        self.bias_which.setToolTip(TIPS["bias"])
        self.layout_controls = LayoutControls()
        self.kind_controls = KindControls()
        self.device = FocusCombo()
        self.device.addItems(devices)
        self.badge = ModeBadge()
        self.warnings = QLabel()
        self.warnings.setWordWrap(True)
        set_style(self.warnings, "color: #b45309;")
        # The last forced move or refused value, in full (the status bar cuts it). Always shown, two lines high,
        # with a hint until the first notice: a first notice shown into a hidden row relaid and repainted the whole
        # side panel (16-20 ms, the longest stall of a drag; QFormLayout gives a hidden row no room, kept or not).
        self.notice_label = WholeLabel(NOTICE_HINT, lines=2)  # most notices take two lines at this panel's width
        set_style(self.notice_label, "color: #6b7280;")
        self._forced: set[str] = set()  # which of n_heads, n_kv_heads the panel moved away from the intent
        self._tick_notes = ""  # forced moves said during the change being handled
        self.last_notice = ""
        self._refused_at: AttentionConfig | None = None  # the layer a refusal ("... is kept.") was said on
        self._chosen = None  # the preset last picked: named while the layers still are its own
        self._kv_kept_by: tuple[str, str] | None = None  # (preset, KV format) picked while a format set before stayed
        self._switched: tuple[object, ...] = ()  # the layer an attention switch's notice describes (switch_key)
        self._preset_match = PresetMatch([self.preset.itemData(i) for i in range(1, self.preset.count())])
        # What the user chose, kept while d_model (or a real model's shape) forces other values.
        self._intent = {"n_heads": cfg.n_heads, "n_kv_heads": cfg.kv_heads}
        for name in ("dtype", "phase", "causal", "bias", "device", "preset"):
            getattr(self, name).setToolTip(TIPS[name])
        self._build()
        self._write(cfg)
        self._connect()

    def _build(self) -> None:
        arch = QGroupBox("Architecture")
        self.arch_form = form = QFormLayout(arch)
        form.addRow("Preset", self.preset)
        form.addRow("d_model", self.d_model)
        form.addRow("n_heads", self.n_heads)
        form.addRow("n_kv_heads", self.n_kv_heads)
        form.addRow("n_layers", self.n_layers)
        self.strip = StackStrip()
        self.strip.picked.connect(self.layer_picked)
        form.addRow("Layers", self.strip)
        self.strip_legend = QLabel("")  # the strip's colours, by kind
        self.strip_legend.setStyleSheet("color: #374151;")
        form.addRow("", self.strip_legend)
        row = QHBoxLayout()
        row.addWidget(self.bias)
        row.addWidget(self.bias_which)
        row.addStretch(1)
        row.addWidget(self.badge)
        self.bias_row = QWidget()
        self.bias_row.setLayout(row)
        row.setContentsMargins(0, 0, 0, 0)
        form.addRow("", self.bias_row)
        form.addRow(self.warnings)
        form.addRow(LayoutFirewall(self.notice_label, wraps=True))  # a new notice of as many lines relays nothing
        work = QGroupBox("Workload")
        wform = QFormLayout(work)
        wform.addRow("seq_len", self.seq_len)
        wform.addRow("batch", self.batch_size)
        wrow = QHBoxLayout()
        wrow.addWidget(self.phase)
        wrow.addWidget(self.causal)
        wform.addRow("phase", wrow)
        drow = QHBoxLayout()
        drow.addWidget(self.dtype, 1)
        drow.addWidget(QLabel("device"))
        drow.addWidget(self.device, 1)
        wform.addRow("dtype", drow)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(arch)
        lay.addWidget(self.kind_controls)
        lay.addWidget(self.layout_controls)
        lay.addWidget(work)
        lay.addStretch(1)

    def _connect(self) -> None:
        self.d_model.value_changed.connect(self._on_d_model_changed)
        self.n_heads.value_changed.connect(self._on_n_heads_changed)
        self.n_kv_heads.value_changed.connect(self._on_n_kv_heads_changed)
        self.n_heads.snapped.connect(lambda typed, kept: self._on_snapped("n_heads", typed, kept))
        self.n_kv_heads.snapped.connect(lambda typed, kept: self._on_snapped("n_kv_heads", typed, kept))
        for name in ("seq_len", "batch_size", "n_layers"):
            getattr(self, name).value_changed.connect(self._on_control_changed)
        self.dtype.currentTextChanged.connect(self._on_control_changed)
        self.phase.currentTextChanged.connect(self._on_control_changed)
        self.causal.toggled.connect(self._on_control_changed)
        self.bias.toggled.connect(self._on_control_changed)
        self.bias_which.currentIndexChanged.connect(self._on_control_changed)
        self.layout_controls.changed.connect(self._on_layout_changed)
        self.kind_controls.changed.connect(self._on_attention_changed)
        self.device.currentTextChanged.connect(self.device_changed)
        self.preset.activated.connect(self._on_preset_activated)

    # -- reading and writing -------------------------------------------------------------
    def config(self) -> AttentionConfig:
        return self._cfg

    def device_choice(self) -> str:
        return self.device.currentText()

    def set_device_choice(self, name: str) -> None:
        if self.device.findText(name) >= 0:
            self.device.setCurrentText(name)

    def set_config(self, cfg: AttentionConfig) -> None:
        """Show cfg (already valid) and emit config_changed once."""
        self._write(cfg)
        self.config_changed.emit(self._cfg)

    def _write(self, cfg: AttentionConfig) -> None:
        blockers = [QSignalBlocker(w) for w in (self.dtype, self.phase, self.causal, self.bias, self.bias_which)]
        self.d_model.set_value(cfg.d_model)
        heads = self._head_choices(cfg.d_model, cfg.head_dim_tied)  # cfg is valid: its count is shown, not snapped
        self.n_heads.set_choices(heads if cfg.n_heads in heads else [*heads, cfg.n_heads], cfg.n_heads)
        self.n_kv_heads.set_choices(self._kv_choices(cfg.n_heads), cfg.kv_heads)
        self.seq_len.set_value(cfg.seq_len)
        self.batch_size.set_value(cfg.batch_size)
        self.n_layers.set_value(cfg.n_layers)
        self.dtype.setCurrentText(cfg.dtype)
        self.phase.setCurrentText(cfg.phase)
        self.causal.setChecked(cfg.causal)
        self.bias.setChecked(cfg.bias is not False)
        self.bias_which.setCurrentIndex(1 if cfg.bias == "qkv" else 0)
        self.bias_which.setEnabled(cfg.bias is not False and self.shape is None)
        self.layout_controls.write(cfg)
        self.kind_controls.write(cfg)
        del blockers
        self._cfg = cfg
        self._intent, self._forced = {"n_heads": cfg.n_heads, "n_kv_heads": cfg.kv_heads}, set()  # a preset, pin, model
        self._clear_notice()  # what the last setting's moves said no longer holds (a caller says what this one does)
        self._refresh_labels()

    def _read(self) -> AttentionConfig:
        widths = self.kind_controls.widths()  # a kind of widths of its own: its KV heads and head_dim follow from them
        return AttentionConfig(
            d_model=self.d_model.value(), n_heads=self.n_heads.value(),
            n_kv_heads=None if widths else self.n_kv_heads.value(),
            seq_len=self.seq_len.value(), batch_size=self.batch_size.value(), n_layers=self.n_layers.value(),
            dtype=self.dtype.currentText(), causal=self.causal.isChecked(),
            bias=self.bias_which.currentData() if self.bias.isChecked() else False,
            phase=self.phase.currentText(), softmax_scale=self._cfg.softmax_scale, **self.layout_controls.fields(),
            widths=widths, output_gate=self._cfg.output_gate,
            stack=self._cfg.stack)  # a preset's gate and hybrid stack: not sliders

    def _refresh_labels(self) -> None:
        cfg = self._cfg
        self.badge.show_config(cfg)
        hidden = kind_named(cfg.attention).hides()  # controls its kind has no use for (MLA's heads follow its latent)
        self.arch_form.setRowVisible(self.n_kv_heads, "n_kv_heads" not in hidden)
        for w in (self.bias, self.bias_which):  # the badge beside them stays
            w.setVisible("bias" not in hidden)
        self.kind_controls.show_note(cfg)  # its head count follows n_heads
        stacked = cfg.stack is not None  # a hybrid stack lists its layers: n_layers is its length
        self.n_layers.setEnabled(not stacked)
        self.arch_form.setRowVisible(self.strip, stacked)
        self.arch_form.setRowVisible(self.strip_legend, stacked)
        if stacked:
            self.strip.set_cells(strip_cells(cfg), self.strip.current)
            legend = self.strip.legend() + "  (click a layer)"
            if self.strip_legend.text() != legend:
                self.strip_legend.setText(legend)
        self.layout_controls.set_hidden(hidden)
        self.kind_controls.d_model = cfg.d_model  # a first switch to a kind fits its widths to this width
        notes = cfg.head_dim_warnings()
        self.warnings.setText("\n".join("⚠ " + n for n in notes))
        self.warnings.setVisible(bool(notes))
        match = self._preset_match.index(cfg)
        chosen = self.preset.findData(self._chosen) if self._chosen is not None else -1
        if chosen > 0 and self._chosen.apply(cfg) == cfg:  # Mistral 7B's layers are Llama 3 8B's: keep the one chosen
            match = chosen
        with QSignalBlocker(self.preset):
            self.preset.setCurrentIndex(match)
        stale_preset = self.last_notice.startswith("Preset ") and (match == 0 or self.preset.itemData(match)
                                                                    is not self._chosen)  # Custom, or V3 at 64 heads
        stale_switch = self.last_notice.startswith("Attention ") and self._switched != switch_key(cfg)  # "N heads"
        stale_refusal = REFUSED in self.last_notice and self._cfg != self._refused_at  # a valid change since
        if stale_preset or stale_switch or stale_refusal:
            self._clear_notice()  # it no longer describes what the controls show
        config_tips.refresh_choice_tips({n: getattr(self, n) for n in ('n_heads', 'n_kv_heads')}, self.why_choices)

    # -- slots -------------------------------------------------------------------------------
    def _say(self, text: str) -> None:
        self.last_notice = text
        if REFUSED in text:
            self._refused_at = self._cfg
        self.notice_label.setText(text)
        self.notice.emit(text)

    def _head_choices(self, d_model: int, tied: bool | None = None) -> list[int]:
        """Divisors of d_model while head_dim is tied; any count from 1 to 256 when it is not."""
        if self.shape:
            return self.shape.head_choices()
        tied = self.layout_controls.lock.isChecked() if tied is None else tied
        return valid_n_heads(d_model) if tied else FREE_HEADS

    def _kv_choices(self, n_heads: int) -> list[int]:
        return self.shape.kv_choices(n_heads) if self.shape else valid_n_kv_heads(n_heads)

    def set_model_shape(self, shape: ModelShape | None) -> None:
        """Lock the controls to a real model (None: back to random weights) and show its own config."""
        self.shape = shape
        model = shape is not None
        for w in (self.d_model, self.n_layers, self.causal, self.bias, self.bias_which, self.preset,
                  self.layout_controls, self.kind_controls):  # a real model is standard attention, as trained
            w.setEnabled(not model)
        encoder = shape is not None and shape.kind == "encoder"
        self.phase.setEnabled(not encoder)
        for name, tip in model_tips(shape).items():
            getattr(self, name).setToolTip(tip)
        if shape is None:
            self.set_config(self._cfg)
            return
        self.set_config(self._cfg.with_(**LAYOUT_DEFAULTS, kv_dtype=None,
                                        d_model=shape.d_model, n_heads=shape.n_heads, n_kv_heads=shape.n_kv_heads,
                                        n_layers=shape.n_layers, causal=shape.kind == "causal", bias=shape.bias,
                                        phase="prefill" if encoder else self._cfg.phase))

    def _snap_kv(self, n_heads: int) -> list[str]:
        """Put n_kv_heads at the allowed value nearest the user's choice; say why when it differs."""
        old, wanted = self.n_kv_heads.value(), self._intent["n_kv_heads"]
        if "n_kv_heads" in kind_named(self._cfg.attention).hides():  # hidden: they follow n_heads, nothing to say
            self._intent["n_kv_heads"] = self.n_kv_heads.set_choices(self._kv_choices(n_heads), n_heads)
            return []
        new = self.n_kv_heads.set_choices(self._kv_choices(n_heads), wanted)
        if new == wanted or (new == old and "n_kv_heads" not in self._forced):
            return []  # as chosen, or kept where it stood for another reason: nothing to say of it
        if self.shape:  # a real model's KV heads re-split with its heads: more cannot be made, others not all
            why = self.shape.why_not_more_kv() if wanted > new else self.shape.why_kv_choices(n_heads)
        else:
            why = f"{wanted} does not divide n_heads {n_heads}."
        return [f"n_kv_heads is {new}, not your {wanted}: {why}"]

    def _say_moves(self, notes: list[str]) -> None:
        """Name every forced move; when the forced values come back to the user's, say that once."""
        now = {"n_heads": self.n_heads.value(), "n_kv_heads": self.n_kv_heads.value()}
        self._forced, text = config_tips.moves_notice(notes, now, self._intent, self._forced)
        if notes:
            self._tick_notes = text
        if text:
            self._say(text)
        elif "back, as you chose" in self.last_notice:  # moves_notice's "n_kv_heads 4 is back": moved since
            self._clear_notice()

    def _clear_notice(self) -> None:
        self.last_notice = ""
        self._refused_at: AttentionConfig | None = None  # the layer a refusal ("... is kept.") was said on
        self.notice_label.setText(NOTICE_HINT)

    def why_choices(self, name: str) -> str:
        """Why the n_heads or n_kv_heads slider offers only the values it does."""
        return why_choices(name, self.shape, self.d_model.value(), self.n_heads.value())

    def _on_snapped(self, name: str, typed: int, kept: int) -> None:
        """A typed value that is not allowed: what it became, why, and what followed from it."""
        allowed = getattr(self, name).choices()
        listed = ", ".join(map(str, allowed[:12])) + (" …" if len(allowed) > 12 else "")
        moves = f" {self._tick_notes}" if self._tick_notes else ""
        self._tick_notes = ""
        self._say(f"{name} {typed} is not possible here; it is {kept}, the nearest allowed ({listed}). "
                  f"{self.why_choices(name)}{moves} The layer is {self._cfg.mode_label}.")

    def _snap_heads(self, choices: list[int]) -> list[str]:
        """Put n_heads at the allowed value nearest the user's choice, then n_kv_heads; say why when they differ."""
        old, wanted = self.n_heads.value(), self._intent["n_heads"]
        new = self.n_heads.set_choices(choices, wanted)
        why = f"{wanted} does not divide d_model {self.d_model.value()} (head_dim = d_model / n_heads must be whole)."
        # Said whenever it stays forced, not only when it moves: a notice names the values shown (a drag that
        # passes 6592 and stops at 10784 must not leave "d_model 6592" under the badge).
        forced = new != wanted and (old != new or "n_heads" in self._forced)
        return ([f"n_heads is {new}, not your {wanted}: {why}"] if forced else []) + self._snap_kv(new)

    # Each slot lays out the panel's other labels first and says its notice last: a notice set before the labels
    # below it changed kept the height of its old text (cut top and bottom) until the next change.
    def _on_d_model_changed(self, d_model: int) -> None:
        self._tick_notes = ""
        notes = self._snap_heads(self._head_choices(d_model))
        self._on_control_changed()
        self._say_moves(notes)

    def _on_n_heads_changed(self, n_heads: int) -> None:
        self._tick_notes = ""
        self._intent["n_heads"] = n_heads  # the user chose it
        notes = self._snap_kv(n_heads)
        self._on_control_changed()
        self._say_moves(notes)

    def _on_n_kv_heads_changed(self, n_kv_heads: int) -> None:
        self._tick_notes = ""
        self._intent["n_kv_heads"] = n_kv_heads
        notes = self._snap_heads(self._head_choices(self.d_model.value()))  # what stays forced, said anew: the
        self._on_control_changed()  # notice names only what is forced now, not an earlier n_kv_heads
        self._say_moves(notes)

    def _on_layout_changed(self) -> None:
        """The lock, window, sinks or KV format changed: n_heads' choices follow the lock."""
        tied = self.layout_controls.lock.isChecked()
        if tied != self._cfg.head_dim_tied:
            if not tied:  # back to the user's own width, or start at today's tied one
                own = self.layout_controls.own_head_dim
                self.layout_controls.head_dim.set_value(own if own is not None else self._cfg.head_dim)
            self._tick_notes = ""
            self._say_moves(self._snap_heads(self._head_choices(self.d_model.value(), tied)))
        self._on_control_changed()

    def _on_attention_changed(self) -> None:
        """A change of kind: the layer that kind implies, and what moved; widths within a kind: as any control."""
        try:
            widths = self.kind_controls.widths()
        except ValueError as exc:  # an odd rope width: said, and the last valid widths are back
            self._write(self._cfg)
            self._say(f"{str(exc)[:1].upper()}{str(exc)[1:]}{REFUSED}")
            return
        name = self.kind_controls.chosen()
        if name == self._cfg.attention:
            self._on_control_changed()
            return
        try:
            cfg, message = switch_kind(self._cfg, name, widths)
        except ValueError as exc:  # q8_0 on the head width the other kind would have: said, nothing changes
            self._write(self._cfg)
            self._say(f"{str(exc)[:1].upper()}{str(exc)[1:]}{REFUSED}")
            return
        self.set_config(cfg)
        self._say(message)
        self._switched = switch_key(cfg)

    def _on_control_changed(self, *_: object) -> None:
        try:
            cfg = self._read()
        except ValueError as exc:  # a window without a causal mask, q4_0 on head_dim 80, ...: nothing is lost
            self._write(self._cfg)
            self._say(f"{str(exc)[:1].upper()}{str(exc)[1:]}{REFUSED}{self._kv_origin(exc)}")
            return
        self._cfg = cfg
        self.bias_which.setEnabled(self.bias.isChecked() and self.shape is None)
        self.layout_controls.show_summary(cfg)
        self._refresh_labels()
        self.config_changed.emit(self._cfg)

    def _on_preset_activated(self, index: int) -> None:
        preset = self.preset.itemData(index)
        if preset is None:  # Custom: the layers are the user's already; the list names a preset while they match one
            self._refresh_labels()
            self._say(CUSTOM_NOTE)
            return
        self._chosen = preset
        cfg = preset.apply(self._cfg)
        self._kv_kept_by = (preset.name, cfg.kv_dtype) if cfg.kv_dtype is not None else None  # presets set none
        self.set_config(cfg)
        self._say(f"Preset {preset.name}: {preset.note}." + (
            f" The KV format {cfg.kv_dtype} is kept from before (Layout, KV format)." if self._kv_kept_by else ""))

    def _kv_origin(self, exc: ValueError) -> str:
        """Where the KV format of a refusal came from, so that the user finds it: a preset keeps the one set before."""
        fmt = self._cfg.kv_dtype
        if fmt is None or "KV format" not in str(exc):
            return ""
        kept = (f", kept when you picked the preset {self._kv_kept_by[0]}" if self._kv_kept_by is not None
                and self._kv_kept_by[1] == fmt else "")
        return f" The KV format {fmt} was set under Layout (KV format){kept}: choose another there to go on."
