"""The compress protocol's settings in the Frontier tab: which eviction methods run, and at what cache: kvpress's
ratios, one sequence's cache in MiB, or a GPU's cache memory shared by a number of sequences (the planner's rule)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from core.models.evict.catalogue import PRESS_INFO, RATIOS
from core.plan.gpus import catalogue

MODES = (("ratios", "ratios " + ", ".join(f"{r:g}" for r in RATIOS)),
         ("mib", "one sequence in"),
         ("gpu", "sequences sharing"))
MODE_TIPS = {
    "ratios": "Each method evicts these fractions of the context's 1,024 tokens (kvpress's compression ratio: 0.5 "
              "evicts half); the layer methods run their usual settings.",
    "mib": "Each method keeps as many tokens as one sequence's cache of this many MiB holds; each layer method its "
           "mildest setting that fits.",
    "gpu": "The cache one sequence gets when this many share the GPU's memory (less a 10% reserve and the weights in "
           "bf16, as the Plan tab counts it).",
}


class CompressControls(QWidget):
    changed = Signal()  # a press ticked, or the cache asked for changed
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.boxes: dict[str, QCheckBox] = {}
        presses = QHBoxLayout()
        presses.setContentsMargins(0, 0, 0, 0)
        presses.addWidget(QLabel("Evict:"), 0, Qt.AlignmentFlag.AlignTop)
        grid = QGridLayout()  # three by two: a 1,024-pixel window holds it
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setVerticalSpacing(0)
        presses.addLayout(grid)
        for n, (name, press) in enumerate(PRESS_INFO.items()):
            box = QCheckBox(press.short)
            box.setChecked(True)
            box.setToolTip(f"{press.tip} As kvpress defines it ({press.source}); "
                           + ("each KV head keeps its own tokens." if press.per_head else
                              "every head of a layer keeps the same tokens."))
            box.toggled.connect(lambda _on: self.changed.emit())
            self.boxes[name] = box
            grid.addWidget(box, n // 3, n % 3)
        presses.addStretch(1)
        self.mode = QComboBox()
        for key, words in MODES:
            self.mode.addItem(words, key)
            self.mode.setItemData(self.mode.count() - 1, MODE_TIPS[key], 3)  # Qt.ToolTipRole
        self.mode.setToolTip("Compress to ratios, or to a cache size (kvpress's users ask for the second).")
        self.mib = QDoubleSpinBox()
        self.mib.setRange(0.01, 1_000_000.0)
        self.mib.setDecimals(2)
        self.mib.setValue(5.0)
        self.mib.setSuffix(" MiB")
        self.mib.setToolTip(MODE_TIPS["mib"])
        self.sequences = QSpinBox()
        self.sequences.setRange(1, 10_000_000)
        self.sequences.setValue(20_000)
        self.sequences.setGroupSeparatorShown(True)
        self.sequences.setSuffix(" on")
        self.sequences.setToolTip(MODE_TIPS["gpu"])
        self.gpu = QComboBox()
        for g in catalogue():
            self.gpu.addItem(g.name, g.id)
        self.gpu.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.gpu.setMinimumContentsLength(10)  # long names elide: the row fits a 1,024-pixel window
        self.gpu.setToolTip(MODE_TIPS["gpu"])
        budget = QHBoxLayout()
        budget.setContentsMargins(0, 0, 0, 0)
        budget.addWidget(QLabel("Cache:"))
        budget.addWidget(self.mode)
        budget.addWidget(self.mib)
        budget.addWidget(self.sequences)
        budget.addWidget(self.gpu, 1)  # wide windows show the whole name
        budget.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(presses)
        layout.addLayout(budget)
        self.mode.currentIndexChanged.connect(self._show_mode)
        for spin in (self.mib, self.sequences):
            spin.valueChanged.connect(lambda _v: self.changed.emit())
        self.gpu.currentIndexChanged.connect(lambda _i: self.changed.emit())
        self._show_mode()

    def _show_mode(self) -> None:
        mode = self.mode.currentData()
        self.mib.setVisible(mode == "mib")
        for w in (self.sequences, self.gpu):
            w.setVisible(mode == "gpu")
        self.changed.emit()

    def presses(self) -> tuple[str, ...]:
        return tuple(k for k, box in self.boxes.items() if box.isChecked())

    def settings(self) -> dict[str, Any]:
        """What a compress run needs: presses, ratios or a budget (MiB, or a GPU and its sequences)."""
        mode = self.mode.currentData()
        return {"presses": self.presses(), "ratios": RATIOS if mode == "ratios" else (),
                "budget_mib": float(self.mib.value()) if mode == "mib" else None,
                "budget_gpu": self.gpu.currentData() if mode == "gpu" else None,
                "sequences": int(self.sequences.value()) if mode == "gpu" else None}

    def set_enabled(self, on: bool) -> None:
        for w in (*self.boxes.values(), self.mode, self.mib, self.sequences, self.gpu):
            w.setEnabled(on)
