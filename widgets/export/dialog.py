"""File > Export: what (every head or one), as what (PNG, SVG, .npy, .csv), how big, where."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QWidget,
)

from widgets.common.wheel import FocusCombo, FocusDoubleSpin

FORMAT_LABELS = {
    "png": "PNG image (as shown, scaled)",
    "svg": "SVG vector image",
    "npy": "NumPy .npy (raw probabilities, float32)",
    "csv": "CSV (head, query, key, tokens, weight)",
}


def default_export_folder(last: str | None, pictures: str | None, documents: str | None) -> Path:
    """The folder the dialog opens in: the last one used, else Pictures, Documents or home, whichever
    exists first (~/Pictures is missing on many machines)."""
    for candidate in (last, pictures, documents):
        if candidate and Path(candidate).expanduser().is_dir():
            return Path(candidate).expanduser()
    return Path.home()


def ask_create_folder(parent: QWidget, folder: Path) -> bool:
    answer = QMessageBox.question(parent, "Create the folder?", f"The folder {folder} does not exist. Create it?")
    return answer == QMessageBox.StandardButton.Yes


@dataclass(frozen=True)
class ExportChoice:
    path: Path
    fmt: str
    scale: float
    head: int | None
    decorations: bool = True  # a title, the colour bar and axis titles around an image


class ExportDialog(QDialog):
    def __init__(self, n_heads: int, folder: Path, head: int | None = None, parent: QWidget | None = None,
                 confirm_create: Callable[[QWidget, Path], bool] = ask_create_folder) -> None:
        super().__init__(parent)
        self._confirm_create = confirm_create
        self._folder = folder  # a relative name is taken as inside this folder
        self.error = QLabel("")
        self.error.setWordWrap(True)
        self.error.setStyleSheet("color: #dc2626;")
        self.error.hide()
        self.setWindowTitle("Export heatmaps")
        self.target = FocusCombo()
        self.target.addItem("Every head (the mosaic)", None)
        for h in range(n_heads):
            self.target.addItem(f"Head {h}", h)
        if head is not None:
            self.target.setCurrentIndex(head + 1)
        self.fmt = FocusCombo()
        for key, label in FORMAT_LABELS.items():
            self.fmt.addItem(label, key)
        self.scale = FocusDoubleSpin()
        self.scale.setRange(0.5, 8.0)
        self.scale.setSingleStep(0.5)
        self.scale.setValue(2.0)
        self.scale.setSuffix(" x")
        self.scale.setToolTip("Output pixels per screen pixel: 2 x doubles width and height.")
        self.decorations = QCheckBox("Title, colour bar and axis titles")
        self.decorations.setChecked(True)
        self.decorations.setToolTip("Frame the image so it stands on its own: what it shows (model or configuration, "
                                    "layer, head, text) above it, its colour scale beside it. Off: the view alone.")
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
        form.addRow("", self.decorations)
        form.addRow("File", row)
        form.addRow(note)
        form.addRow(self.error)
        form.addRow(buttons)
        self.fmt.currentIndexChanged.connect(self._on_fmt_changed)
        self.resize(560, 220)

    def _on_fmt_changed(self, *_: object) -> None:
        fmt = self.fmt.currentData()
        self.scale.setEnabled(fmt == "png")
        self.decorations.setEnabled(fmt in ("png", "svg"))
        self.path.setText(str(Path(self.path.text()).with_suffix("." + fmt)))

    def _on_browse_clicked(self) -> None:
        fmt = self.fmt.currentData()
        name, _ = QFileDialog.getSaveFileName(self, "Export to", self.path.text(), f"{fmt.upper()} (*.{fmt})")
        if name:
            self.path.setText(name)

    def _refuse(self, text: str) -> None:
        self.error.setText(text)
        self.error.show()

    def accept(self) -> None:
        """Save: a folder that does not exist is created once the user agrees; otherwise the dialog stays
        open with the path as typed and says why."""
        try:
            folder = self.choice().path.parent
            exists, is_dir = folder.exists(), folder.is_dir()
        except (ValueError, OSError) as exc:  # an empty name, a NUL byte, a name too long
            self._refuse(f"{exc}; type a file name such as attention.png.")
            return
        if not is_dir:
            if exists or not self._confirm_create(self, folder):
                self._refuse(f"{folder} is not a folder; choose an existing folder or let the app create it.")
                return
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except (OSError, ValueError) as exc:
                self._refuse(f"cannot create {folder}: {getattr(exc, 'strerror', None) or exc}; choose another folder.")
                return
        super().accept()

    def choice(self) -> ExportChoice:
        """The file to write. A relative name lands in the dialog's folder; a folder (or a name ending in
        '/') gets attention.<format> inside it; the format's extension is added when missing."""
        fmt = self.fmt.currentData()
        text = self.path.text().strip()
        if not text:
            raise ValueError("the file name is empty")
        if "\x00" in text:
            raise ValueError("the file name holds a NUL character")
        path = Path(text).expanduser()
        if not path.is_absolute():
            path = self._folder / path
        if text.endswith(("/", "\\")) or path.is_dir():
            path = path / f"attention.{fmt}"
        if path.suffix.lower() != "." + fmt:
            path = path.with_name(path.name + "." + fmt)
        if any(len(part.encode()) > 250 for part in path.parts):
            raise ValueError("a part of the path is longer than a file name may be (255 bytes)")
        return ExportChoice(path=path, fmt=fmt, scale=self.scale.value(), head=self.target.currentData(),
                            decorations=self.decorations.isChecked())
