"""File > Export: what (every head or one), as what (PNG, SVG, .npy, .csv), how big, where."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QWidget,
)

FORMAT_LABELS = {
    "png": "PNG image (as shown, scaled)",
    "svg": "SVG vector image",
    "npy": "NumPy .npy (raw probabilities, float32)",
    "csv": "CSV (head, query, key, tokens, weight)",
}


@dataclass(frozen=True)
class ExportChoice:
    path: Path
    fmt: str
    scale: float
    head: int | None


class ExportDialog(QDialog):
    def __init__(self, n_heads: int, folder: Path, head: int | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Export heatmaps")
        self.target = QComboBox()
        self.target.addItem("Every head (the mosaic)", None)
        for h in range(n_heads):
            self.target.addItem(f"Head {h}", h)
        if head is not None:
            self.target.setCurrentIndex(head + 1)
        self.fmt = QComboBox()
        for key, label in FORMAT_LABELS.items():
            self.fmt.addItem(label, key)
        self.scale = QDoubleSpinBox()
        self.scale.setRange(0.5, 8.0)
        self.scale.setSingleStep(0.5)
        self.scale.setValue(2.0)
        self.scale.setSuffix(" x")
        self.scale.setToolTip("Output pixels per screen pixel: 2 x doubles width and height.")
        self.path = QLineEdit(str(folder / "attention.png"))
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._on_browse_clicked)
        row = QHBoxLayout()
        row.addWidget(self.path, 1)
        row.addWidget(browse)
        note = QLabel("A JSON manifest (config, metrics, timing, versions, seed, text, tokens) is written beside "
                      "the file. Files are written whole or not at all.")
        note.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form = QFormLayout(self)
        form.addRow("What", self.target)
        form.addRow("Format", self.fmt)
        form.addRow("Scale", self.scale)
        form.addRow("File", row)
        form.addRow(note)
        form.addRow(buttons)
        self.fmt.currentIndexChanged.connect(self._on_fmt_changed)
        self.resize(560, 220)

    def _on_fmt_changed(self, *_: object) -> None:
        fmt = self.fmt.currentData()
        self.scale.setEnabled(fmt == "png")
        self.path.setText(str(Path(self.path.text()).with_suffix("." + fmt)))

    def _on_browse_clicked(self) -> None:
        fmt = self.fmt.currentData()
        name, _ = QFileDialog.getSaveFileName(self, "Export to", self.path.text(), f"{fmt.upper()} (*.{fmt})")
        if name:
            self.path.setText(name)

    def choice(self) -> ExportChoice:
        fmt = self.fmt.currentData()
        path = Path(self.path.text()).expanduser()
        if path.suffix.lower() != "." + fmt:
            path = path.with_name(path.name + "." + fmt)
        return ExportChoice(path=path, fmt=fmt, scale=self.scale.value(), head=self.target.currentData())
