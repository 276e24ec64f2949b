"""The Costs panel: every figure of core/costs.py's Costs value, each beside its baseline, with its formula as the
tooltip. It computes nothing: the rows, their figures, changes and formulas come from core, for any layer kind."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QFontDatabase
from PySide6.QtWidgets import QApplication, QGridLayout, QGroupBox, QLabel, QVBoxLayout, QWidget

from core.arch.config import AttentionConfig
from core.costs import CostContext, CostRow, Costs, costs, row_titles
from widgets.common.steady import SteadyLabel
from widgets.common.style import set_colour, set_style, set_tip

__all__ = ["CostContext", "MetricsPanel"]

BETTER = "#059669"
MAX_EXACT_CHARS = 17  # "1,234,567,890,123" (below 10^13: Llama 3 8B's 8k prefill) shows in full; larger in
# e-notation, exact in the tip (wider figures made DeepSeek-V3's panel, and the window, wider than a 1024 px screen)
WORSE = "#dc2626"
GREY = "#6b7280"
COLOURS = {-1: BETTER, 0: GREY, 1: WORSE}  # a change's sign: below the baseline is better (these are costs)


def exact(label: QLabel) -> str:
    """A label's figure in full: the exact one a value in e-notation stands for."""
    return getattr(label, "exact", None) or label.text()


class MetricsPanel(QWidget):
    """One row per metric: name, exact value, short value, delta against the baseline."""

    # Every row any layer kind may show, in order (core/costs.py); those a Costs value lacks are hidden.
    ROWS = [(key, title) for key, title, _ in row_titles()]
    # Rows with nothing to compare against: their short figure also takes the change's column (DeepSeek-V3's
    # "128 + 64", "of width 128" and "naive 0.5" widened the panel, and the window past 1024 px).
    NO_BASELINE = tuple(key for key, _, no_baseline in row_titles() if no_baseline)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.box = QGroupBox("Costs (per layer unless stated)")
        grid = QGridLayout(self.box)
        grid.setHorizontalSpacing(6)  # 10 made the window wider than 1024 px at the largest figures
        grid.setVerticalSpacing(2)
        self.scope = QLabel("")
        self.scope.setWordWrap(True)
        set_style(self.scope, "color: #b45309;")
        self.scope.hide()
        grid.addWidget(self.scope, 0, 0, 1, 4)
        self.delta_header = QLabel("vs MHA")  # names the baseline of the last column
        self.delta_header.setToolTip("Each figure against the baseline: the MHA layer of the same width and "
                                     "heads (random weights), or the model as trained (a real model).")
        set_style(self.delta_header, f"color: {GREY};")
        grid.addWidget(self.delta_header, 1, 3)
        grid.setColumnStretch(1, 1)
        self.values: dict[str, SteadyLabel] = {}
        self.shorts: dict[str, SteadyLabel] = {}
        self.deltas: dict[str, SteadyLabel] = {}
        self._name_labels: dict[str, SteadyLabel] = {}
        for row, (key, title) in enumerate(self.ROWS, start=2):
            name = SteadyLabel(title)
            value, short, delta = SteadyLabel(), SteadyLabel(), SteadyLabel()  # new figures relay nothing
            value.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
            for w in (name, value, short, delta):  # copied from a menu: a selectable label paints 10x slower
                self._add_copy_actions(w, value)
            for col, w in enumerate((name, value, short, delta)):  # a fixed-size label sits left, not centred
                span = 2 if w is short and key in self.NO_BASELINE else 1  # "of width 128" in a column of "24 MiB"s
                grid.addWidget(w, row, col, 1, span, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
            self.values[key], self.shorts[key], self.deltas[key] = value, short, delta
            self._name_labels[key] = name
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.box)

    def _add_copy_actions(self, label: QLabel, value: QLabel) -> None:
        copy_value = QAction("Copy this row's exact figure", label)
        copy_value.triggered.connect(lambda: QApplication.clipboard().setText(exact(value)))
        copy_all = QAction("Copy all costs (tab-separated)", label)
        copy_all.triggered.connect(lambda: QApplication.clipboard().setText(self.table_text()))
        label.addActions([copy_value, copy_all])
        label.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)

    def table_text(self) -> str:
        """The rows on show as tab-separated lines: name, exact value, short value, change against the baseline."""
        lines = [f"{self.box.title()}\t\t\t{self.delta_header.text()}"]
        for key, _ in self.ROWS:
            if not self._name_labels[key].isHidden():
                lines.append("\t".join(exact(w) for w in (self._name_labels[key], self.values[key], self.shorts[key],
                                                            self.deltas[key])))
        return "\n".join(lines)

    def _show_row(self, key: str, visible: bool) -> None:
        for w in (self._name_labels[key], self.values[key], self.shorts[key], self.deltas[key]):
            w.setVisible(visible and not (w is self.deltas[key] and key in self.NO_BASELINE))

    def _set(self, row: CostRow) -> None:
        key, value, short, tip = row.key, row.value, row.short, row.tip
        if row.name:
            self._name_labels[key].setText(row.name)
        self.values[key].exact = value  # what the copy actions copy
        if len(value) > MAX_EXACT_CHARS:  # a 22-digit count would widen the panel past a 1024 px screen
            number, _, unit = value.partition(" ")
            tip = f"exactly {value}. {tip}"
            value = f"{int(number.replace(',', '')):.6e}" + (f" {unit}" if unit else "")
            if not unit:  # a count's e-notation says it already, and both would not fit a 1024 px screen's panel
                short = ""  # bytes keep theirs ('1.82 EiB' reads at a glance)
        self.values[key].setText(value)
        self.shorts[key].setText(short)
        text, sign = row.vs or ("", 0)
        self.deltas[key].setText(text)
        set_colour(self.deltas[key], COLOURS[sign] if text else "")
        for w in (self.values[key], self.shorts[key], self._name_labels[key]):
            set_tip(w, tip)
        set_tip(self.deltas[key], f"{text} {self.delta_header.text()}: {tip}" if text else tip)

    def show_config(self, cfg: AttentionConfig, ctx: CostContext | None = None) -> None:
        """The costs of cfg (in ctx: a real model's layers, its baseline, the layer on screen), as core counts them."""
        self.show_costs(costs(cfg, ctx))

    def show_costs(self, value: Costs) -> None:
        self.delta_header.setText(f"vs {value.baseline_name}")
        rest = "." if value.scope == "every layer" else " and every other layer as trained."
        self.scope.setText(f"Changed: {value.scope}. Whole-model rows count that change{rest}" if value.scope else "")
        self.scope.setVisible(bool(value.scope))
        self.box.setTitle(value.title)
        shown = {row.key: row for row in value.rows}
        for key, _ in self.ROWS:
            self._show_row(key, key in shown)
            if key in shown:
                self._set(shown[key])
