"""The attention type: the layer kinds (standard MHA/GQA/MQA, the sliders above, or a kind with widths of its own),
and the selected kind's widths as spin boxes its WidthControl data describes.

Torch-free. Emits `changed`; the config panel reads kind() and widths() (a ValueError it says and undoes), turns a
change of kind into the configuration it implies (core/kinds/switch.py), and says what moved.
"""

from __future__ import annotations

from PySide6.QtCore import QSignalBlocker, Signal
from PySide6.QtWidgets import QFormLayout, QGroupBox, QHBoxLayout, QLabel, QWidget

from core.arch.config import AttentionConfig
from core.kinds.registry import OWN_LAYER_KINDS, kind_named
from core.kinds.widths import KindWidths
from widgets.common.style import set_style
from widgets.common.wheel import FocusCombo, FocusSpin


class KindControls(QGroupBox):
    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Attention type", parent)
        self.kind = FocusCombo()
        for kind in OWN_LAYER_KINDS.values():
            self.kind.addItem(kind.picker, kind.name)
        self.kind.setToolTip(" ".join(kind.about for kind in OWN_LAYER_KINDS.values())
                             + " Recurrent layers (Gated DeltaNet, Mamba ...) come with the hybrid presets.")
        self.d_model = 768  # the width a first switch to a kind fits its widths to
        self._last: dict[str, KindWidths] = {}  # each kind's widths to come back to
        form = QFormLayout(self)
        form.setContentsMargins(6, 4, 6, 4)
        form.addRow("type", self.kind)
        self.rows: dict[str, QWidget] = {}  # a kind's spin boxes, shown while it is chosen
        self.spins: dict[str, dict[str, FocusSpin]] = {}
        self.notes: dict[str, QLabel] = {}
        for kind in OWN_LAYER_KINDS.values():
            if kind.widths_type is not None:
                self.rows[kind.name] = self._width_rows(kind.name, kind.widths_type)
                form.addRow(self.rows[kind.name])
                self.rows[kind.name].hide()
        self.kind.currentIndexChanged.connect(self._emit)

    def _width_rows(self, name: str, widths_type: type[KindWidths]) -> QWidget:
        """Two spin boxes a row, then the note of what the widths make of the layer."""
        rows = QWidget()
        grid = QFormLayout(rows)
        grid.setContentsMargins(0, 0, 0, 0)
        pair: QHBoxLayout | None = None
        spins: dict[str, FocusSpin] = {}
        for i, c in enumerate(widths_type.controls):
            spin = FocusSpin()
            spin.setRange(c.low, c.high)
            spin.setKeyboardTracking(False)  # typing 64 must not pass through an odd 6... on the way
            spin.setSingleStep(c.step)
            spin.setToolTip(c.tip)
            spin.setAccessibleName(c.field)
            spin.setMaximumWidth(96)  # two a row: the side panel keeps its width
            spin.valueChanged.connect(self._emit)
            spins[c.field] = spin
            if i % 2 == 0:
                pair = QHBoxLayout()
                grid.addRow(c.label, pair)
                pair.addWidget(spin, 1)
            else:
                assert pair is not None
                tag = QLabel(c.label)
                tag.setToolTip(c.tip)
                pair.addWidget(tag)
                pair.addWidget(spin, 1)
        note = QLabel("")
        note.setWordWrap(True)
        set_style(note, "color: #6b7280;")
        grid.addRow(note)
        self.spins[name], self.notes[name] = spins, note
        return rows

    def chosen(self) -> str:
        """The kind chosen in the picker."""
        return str(self.kind.currentData())

    def widths(self) -> KindWidths | None:
        """The chosen kind's widths as shown (None for a kind without); a ValueError (odd rope ...) when not valid."""
        widths_type = kind_named(self.chosen()).widths_type
        if widths_type is None:
            return None
        return widths_type(**{name: spin.value() for name, spin in self.spins[self.chosen()].items()})

    def _emit(self, *_: object) -> None:
        name = self.chosen()
        if name in self.rows and self.rows[name].isHidden():  # back to a kind: the widths it had, or fitting ones
            self.write_widths(name, self._last.get(name) or kind_named(name).default_widths(self.d_model))
        for kind, rows in self.rows.items():
            rows.setVisible(kind == name)
        try:
            widths = self.widths()
            if widths is not None:
                self._last[name] = widths  # the widths to come back to after a spell of another kind
        except ValueError:
            pass  # the panel says why and puts the last valid widths back
        self.changed.emit()

    def write_widths(self, name: str, widths: KindWidths | None) -> None:
        if widths is None:
            return
        blockers = [QSignalBlocker(s) for s in self.spins[name].values()]
        for field, spin in self.spins[name].items():
            spin.setValue(getattr(widths, field))
        del blockers

    def write(self, cfg: AttentionConfig) -> None:
        """Show cfg's kind and widths (another kind keeps its last widths for a switch back)."""
        self.d_model = cfg.d_model
        with QSignalBlocker(self.kind):
            self.kind.setCurrentIndex(self.kind.findData(cfg.attention))
        if cfg.widths is not None:
            self._last[cfg.attention] = cfg.widths
            self.write_widths(cfg.attention, cfg.widths)
        for kind, rows in self.rows.items():
            rows.setVisible(kind == cfg.attention)

    def show_note(self, cfg: AttentionConfig) -> None:
        """What the widths make of the layer; the panel calls it at every change (n_heads is in it)."""
        if cfg.attention in self.notes:
            self.notes[cfg.attention].setText(kind_named(cfg.attention).widths_note(cfg))
