"""Pinned configurations side by side: every metric, its ratio or delta against a baseline pin,
better in green and worse in red; copy as text, export CSV or Markdown, rename, remove, diff."""

from __future__ import annotations

import textwrap
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from core.study.compare import as_markdown, as_text, cell_text, comparison
from widgets.common.wheel import FocusCombo


def stacked(text: str, relation: str) -> str:
    """A cell in short lines, so four pins fit a 1280 px window: '1,376,256 (1.38M)' and '-41.7%' become
    '1,376,256', '(1.38M)  -41.7%'; an interval goes under its ratio; a list ('float32, prefill') a part a line.
    The whole figure, unbroken, is the cell's tooltip."""
    lines = text.replace(", ", ",\n").split("\n")
    if " (" in lines[0] and not lines[0].startswith("–"):  # "1,376,256 (1.38M)": the short form on its own line
        head, tail = lines[0].split(" (", 1)
        lines[0:1] = [head, "(" + tail]
    if relation:
        ratio, _, interval = relation.partition(" (")
        lines[-1] = f"{lines[-1]}  {ratio}" if len(lines) > 1 else lines[-1]
        if len(lines) == 1:
            lines.append(ratio)
        if interval:
            lines.append("(" + interval.split(": ")[0].rstrip(")") + ")")
    return "\n".join(lines)


BETTER = QColor("#059669")
WORSE = QColor("#dc2626")


class CompareTable(QWidget):
    rename_requested = Signal(int, str)
    remove_requested = Signal(int)
    diff_requested = Signal(int, int)  # pin A, pin B
    export_requested = Signal(str)  # csv or md
    load_requested = Signal(int)  # put a pin's configuration back on the sliders

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.names: list[str] = []
        self.reports: list[dict[str, Any]] = []
        self.baseline = FocusCombo()
        self.baseline.setToolTip("Every other pin is compared with this one.")
        self.table = QTableWidget()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectColumns)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setToolTip("Click a pin's name to select its column")
        # A header's click selects its pin's column, as a click in the column does (and clears "Select… first").
        self.table.horizontalHeader().sectionClicked.connect(self.table.selectColumn)
        self.table.itemSelectionChanged.connect(self._on_table_selection_changed)
        self.table.setAlternatingRowColors(True)
        self.empty = QLabel("No pins yet. Press Pin (Ctrl+P) to keep the current configuration with its numbers, "
                            "timing and heatmaps; pin another to compare them here.")
        self.empty.setWordWrap(True)
        buttons = {
            "copy": ("Copy", "Copy the table as tab-separated text (Ctrl+Shift+C)"),
            "csv": ("Export CSV…", "Write the table as CSV"),
            "md": ("Export Markdown…", "Write the table as a Markdown table"),
            "rename": ("Rename…", "Rename the selected pin"),
            "remove": ("Remove", "Remove the selected pin"),
            "load": ("Load on sliders", "Put the selected pin's configuration back on the controls"),
            "diff": ("Diff heatmaps…", "The selected pin's attention minus the baseline's, head by head"),
        }
        self.buttons: dict[str, QPushButton] = {}
        row, row2 = QHBoxLayout(), QHBoxLayout()
        row.addWidget(QLabel("Baseline"))
        row.addWidget(self.baseline)
        for key, (text, tip) in buttons.items():
            b = QPushButton(text)
            b.setToolTip(tip)
            self.buttons[key] = b
            (row if key in ("copy", "csv", "md") else row2).addWidget(b)
        row.addStretch(1)
        row2.addStretch(1)
        lay = QVBoxLayout(self)
        lay.addLayout(row)
        lay.addLayout(row2)
        lay.addWidget(self.empty)
        lay.addWidget(self.table, 1)
        self.baseline.currentIndexChanged.connect(lambda _i: self._fill())
        self.buttons["copy"].clicked.connect(self.copy)
        self.buttons["csv"].clicked.connect(lambda: self.export_requested.emit("csv"))
        self.buttons["md"].clicked.connect(lambda: self.export_requested.emit("md"))
        self.buttons["rename"].clicked.connect(self._on_rename_clicked)
        self.buttons["remove"].clicked.connect(lambda: self._with_selected(self.remove_requested.emit))
        self.buttons["load"].clicked.connect(lambda: self._with_selected(self.load_requested.emit))
        self.buttons["diff"].clicked.connect(
            lambda: self._with_selected(lambda i: self.diff_requested.emit(i, self.baseline_index())))
        QShortcut(QKeySequence("Ctrl+Shift+C"), self, activated=self.copy)
        self.set_pins([], [])

    def baseline_index(self) -> int:
        return max(0, self.baseline.currentIndex())

    @staticmethod
    def describe(name: str, report: dict[str, Any]) -> str:
        """'A: GQA, d_model 768, SmolLM2-135M (layer 18 only)' for the baseline list."""
        c, model = report["config"], report.get("model")
        what = f"{model['name']} ({model['changed']} changed)" if model and model["changed"] != "nothing" else (
            model["name"] if model else "random weights")
        return f"{name}: {c['mode']}, d_model {c['d_model']}, {what}"

    def selected(self) -> int | None:
        cols = {i.column() for i in self.table.selectedIndexes()}
        if len(cols) == 1:
            return cols.pop()
        if len(self.names) == 2:  # with two pins, the one that is not the baseline
            return 1 - self.baseline_index()
        return None

    def _on_table_selection_changed(self) -> None:
        if self.names and self.selected() is not None:
            self.empty.hide()  # a "Select a pin's column first." from before is answered

    def _with_selected(self, fn: Any) -> None:
        i = self.selected()
        if i is None:
            self.empty.setText("Select a pin's column first.")
            self.empty.show()
            return
        fn(i)

    def set_pins(self, names: list[str], reports: list[dict[str, Any]], baseline: int | None = None) -> None:
        keep = self.baseline.currentData()
        self.names, self.reports = list(names), list(reports)
        self.baseline.blockSignals(True)
        self.baseline.clear()
        for name, report in zip(self.names, self.reports, strict=True):
            self.baseline.addItem(self.describe(name, report), name)
        if baseline is not None:
            self.baseline.setCurrentIndex(baseline)
        elif keep in self.names:
            self.baseline.setCurrentIndex(self.names.index(keep))
        self.baseline.blockSignals(False)
        self._fill()

    def rows(self):
        return comparison(self.reports, self.baseline_index()) if self.reports else []

    def _fill(self) -> None:
        has = bool(self.names)
        self.empty.setVisible(not has)
        self.table.setVisible(has)
        for key in ("copy", "csv", "md", "rename", "remove", "load"):
            self.buttons[key].setEnabled(has)
        self.buttons["diff"].setEnabled(len(self.names) >= 2)
        rows = self.rows()
        self.table.clear()
        self.table.setColumnCount(len(self.names))
        self.table.setRowCount(len(rows))
        base = self.baseline_index()
        self.table.setHorizontalHeaderLabels([f"{n} (baseline)" if i == base else n for i, n in enumerate(self.names)])
        # metric names in lines of about 24 characters: "plan: memory a GPU (weights + KV + allowance)" on one line
        # made the name column 330 px wide and pushed the fourth pin out of a 1280 px window
        self.table.setVerticalHeaderLabels([textwrap.fill(r.label, 24) for r in rows])
        for r, row in enumerate(rows):
            for c, cell in enumerate(row.cells):
                item = QTableWidgetItem(stacked(cell.text, cell.relation))
                item.setToolTip(cell.why or cell_text(cell))
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if cell.better is not None:
                    item.setForeground(QBrush(BETTER if cell.better else WORSE))
                    item.setToolTip(f"{cell_text(cell)}: {'better' if cell.better else 'worse'} than "
                                    f"{self.names[base]}")
                self.table.setItem(r, c, item)
        self.table.resizeRowsToContents()

    def text(self) -> str:
        return as_text(self.names, self.rows())

    def markdown(self) -> str:
        return as_markdown(self.names, self.rows(), self.baseline_index())

    def copy(self) -> None:
        QApplication.clipboard().setText(self.text())

    def _on_rename_clicked(self) -> None:
        i = self.selected()
        if i is None:
            self._with_selected(lambda _i: None)
            return
        name, ok = QInputDialog.getText(self, "Rename pin", "New name:", text=self.names[i])
        if ok and name.strip():
            self.rename_requested.emit(i, name.strip())
