"""Head roles: a layers x heads grid per score, a sortable and filterable table of every head,
"heads like this one", and CSV export."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from core.models.head_roles import BADGE_THRESHOLD, ROLE_TEXT, ROLES, similar_heads
from widgets.common.ticks import cell_ticks, label_width_px
from widgets.common.wheel import FocusCombo, FocusDoubleSpin
from widgets.maps.colormaps import lut
from widgets.maps.hover_readout import HoverReadout


class _Number(QTableWidgetItem):
    """A table cell that sorts by value, not by text."""

    def __init__(self, value: float, text: str) -> None:
        super().__init__(text)
        self.value = value
        self.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

    def __lt__(self, other: QTableWidgetItem) -> bool:
        return self.value < getattr(other, "value", 0.0)


class RolesPanel(QWidget):
    head_requested = Signal(int, int)  # layer, head
    export_requested = Signal()
    probe_requested = Signal(str)  # "induction": the hint's link to the induction probe

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.role = FocusCombo()
        for r in ROLES:
            self.role.addItem(r, r)
            self.role.setItemData(self.role.count() - 1, ROLE_TEXT[r], Qt.ItemDataRole.ToolTipRole)
        self.role.setCurrentText("induction")
        self.min_score = FocusDoubleSpin()
        self.min_score.setRange(0.0, 100.0)
        self.min_score.setDecimals(3)
        self.min_score.setSingleStep(0.05)
        self.min_score.setToolTip("Show only heads whose chosen score is at least this")
        self.explain = QLabel("")
        self.explain.setWordWrap(True)
        self.explain.linkActivated.connect(self.probe_requested.emit)  # "use the induction probe" in the hint
        self.hint = QLabel("")  # why a grid is blank (no repeated token for induction) and what would fill it
        self.hint.setWordWrap(True)
        self.hint.setStyleSheet("color: #b45309;")
        self.hint.linkActivated.connect(self.probe_requested.emit)
        self.hint.hide()
        self.probe = "text"
        self.grid = pg.PlotWidget(background="#1e1e1e")
        self.grid.invertY(True)
        self.grid.getPlotItem().layout.setContentsMargins(4, 14, 8, 4)  # room for the colour bar's "1.0" at its top
        self.grid.setLabel("left", "head")
        self.grid.setLabel("bottom", "layer")
        self.grid.hideButtons()
        self.grid.setMenuEnabled(False)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.image.setLookupTable(lut("viridis"))
        self.grid.addItem(self.image)
        self.bar = pg.ColorBarItem(values=(0, 1), colorMap=pg.colormap.get("viridis"), interactive=False)
        self.bar.setImageItem(self.image, insert_in=self.grid.getPlotItem())
        self.table = QTableWidget()
        self.table.setSortingEnabled(True)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.similar = QListWidget()
        self.similar.setToolTip("Heads whose attention on this probe is closest to the selected head's "
                                "(mean absolute difference per row; double-click to open)")
        self.readout = HoverReadout("Hover the grid to read a head's score; click it to open that head.")
        self.readout.watch(self.grid)
        export = QPushButton("Export scores CSV…")
        export.clicked.connect(self.export_requested)
        top = QHBoxLayout()
        for w in (QLabel("Score"), self.role, QLabel("at least"), self.min_score, export):
            top.addWidget(w)
        top.addStretch(1)
        right = QWidget()
        rv = QVBoxLayout(right)
        rv.setContentsMargins(0, 0, 0, 0)
        rv.addWidget(self.table, 3)
        rv.addWidget(QLabel("Heads like the selected one"))
        rv.addWidget(self.similar, 1)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.grid)
        split.addWidget(right)
        split.setSizes([420, 420])
        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addWidget(self.explain)
        lay.addWidget(self.hint)
        lay.addWidget(split, 1)
        lay.addWidget(self.readout)
        self.scores: dict[str, np.ndarray] = {}
        self.extra: dict[str, np.ndarray] = {}  # the Long tab's every-layer figures, beside the roles
        self.extra_text: dict[str, str] = {}
        self.patterns: np.ndarray | None = None
        self._dirty = False
        self.role.currentIndexChanged.connect(lambda _i: self._fill())
        self.min_score.valueChanged.connect(lambda _v: self._fill_table())
        self.table.itemSelectionChanged.connect(self._on_table_selection_changed)
        self.table.itemDoubleClicked.connect(lambda item: self._open_row(item.row()))
        self.similar.itemDoubleClicked.connect(lambda item: self.head_requested.emit(*item.data(Qt.ItemDataRole.UserRole)))
        self.grid.scene().sigMouseMoved.connect(self._on_grid_mouse_moved)
        self.grid.getViewBox().sigResized.connect(self._update_grid_ticks)
        self.grid.scene().sigMouseClicked.connect(self._on_grid_clicked)

    def text(self, role: str) -> str:
        return ROLE_TEXT.get(role) or self.extra_text.get(role, role)

    def set_long_scores(self, scores: dict[str, np.ndarray], texts: dict[str, str]) -> None:
        """The Long tab's figures of every layer x head over a long text, listed after the roles (empty: none)."""
        for name in self.extra:
            index = self.role.findData(name)
            if index >= 0 and name not in scores:
                self.role.removeItem(index)
            self.scores.pop(name, None)
        self.extra, self.extra_text = dict(scores), dict(texts)
        for name in scores:
            if self.role.findData(name) < 0:
                self.role.addItem(name, name)
                self.role.setItemData(self.role.count() - 1, texts[name], Qt.ItemDataRole.ToolTipRole)
        self._merge_extra()
        if scores:
            self.role.setCurrentIndex(self.role.findData(next(iter(scores))))
        self._dirty = True
        if self.isVisible():
            self._fill()

    def _merge_extra(self) -> None:
        shape = next((v.shape for k, v in self.scores.items() if k not in self.extra), None)
        for name, grid in self.extra.items():
            if shape is None or grid.shape == shape:
                self.scores[name] = grid

    def set_pending(self, probe: str) -> None:
        """The heads are being scored on another probe: the old scores are greyed and say they are old, at once
        (the new ones can take seconds on a real model, or wait behind other work on the worker)."""
        where = "the induction probe" if probe == "induction" else "your text"
        self.explain.setText(f"Scoring every head on {where}… (the grid below is the last probe's until then)")
        self.hint.hide()
        for w in (self.grid, self.table):
            w.setEnabled(False)

    def set_failed(self, message: str) -> None:
        """The scoring the panel waited for failed: say so, and show the last scores again for what they are."""
        self.explain.setText(f"Could not score the heads: {message} The grid below is the last probe's.")
        for w in (self.grid, self.table):
            w.setEnabled(True)

    def set_scores(self, scores: dict[str, np.ndarray], patterns: np.ndarray, probe: str) -> None:
        """scores {role: (L, H)}; patterns (L * H, T, T) layer-major, for 'heads like this one'."""
        for w in (self.grid, self.table):
            w.setEnabled(True)
        self.probe = probe
        self.scores, self.patterns = dict(scores), patterns
        self._merge_extra()
        self.readout.reset()  # a reading of the last scores would be stale now
        where = "the induction probe" if probe == "induction" else "your text"
        self.explain.setText(f"Scores on {where}. Badges on the heatmap tiles need {BADGE_THRESHOLD:.2f} or more. "
                             + self.text(self.role.currentData()))
        self._dirty = True
        if self.isVisible():  # hidden: filled when shown, so a slider drag never rebuilds the table
            self._fill()

    def showEvent(self, event: object) -> None:  # noqa: N802 (Qt's name)
        super().showEvent(event)
        if self._dirty:
            self._fill()

    @property
    def shape(self) -> tuple[int, int]:
        return next(iter(self.scores.values())).shape if self.scores else (0, 0)

    def _fill(self) -> None:
        self._dirty = False
        if not self.scores:
            return
        role = self.role.currentData()
        if role not in self.scores:  # a long figure of another model's shape, or none yet
            self.role.setCurrentIndex(0)
            role = self.role.currentData()
            if role not in self.scores:
                return
        grid = self.scores[role]  # (L, H)
        L, H = grid.shape
        top = float(grid.max()) if "distance" in role else 1.0
        self.image.setImage(grid.T.astype(np.float32), levels=(0.0, max(top, 1e-9)))  # rows = heads, columns = layers
        self.image.setRect(QRectF(0, 0, L, H))
        # Square cells while the layers are no more than the heads (one layer was a stretched band); a model of many
        # layers (SmolLM2: 30 x 9) fills the pane, or its heads shrink to a thin band of unreadable labels.
        self.grid.setAspectLocked(L <= H)
        self.bar.setLevels((0.0, max(top, 1e-9)))
        self._update_grid_ticks()
        self.explain.setText(self.explain.text().rsplit(". ", 1)[0] + ". " + self.text(role))
        blank = role == "induction" and self.probe == "text" and float(grid.max()) < 1e-6
        self.hint.setText("No head scores here: an induction head attends to the token after an earlier copy of the "
                          "current one, and no token of your text repeats. <a href=\"induction\">Use the induction "
                          "probe</a> (Ctrl+I): a random sequence repeated twice." if blank else "")
        self.hint.setVisible(blank)
        self._fill_table()

    def _update_grid_ticks(self, *_: object) -> None:
        """Layer and head numbers at the centres of their cells, thinned so they never overlap."""
        L, H = self.shape
        if not L:
            return
        vb = self.grid.getViewBox()
        self.grid.getAxis("bottom").setTicks([cell_ticks(L, vb.width(), label_width_px([str(L - 1)])), []])
        self.grid.getAxis("left").setTicks([cell_ticks(H, vb.height()), []])

    def _fill_table(self) -> None:
        role = self.role.currentData()
        L, H = self.shape
        floor = self.min_score.value()
        rows = [(layer, h) for layer in range(L) for h in range(H) if self.scores[role][layer, h] >= floor]
        self.table.setSortingEnabled(False)
        self.table.clear()
        order = [role] + [r for r in self.scores if r != role]  # the chosen score first, beside layer and head
        self.table.setColumnCount(2 + len(order))
        self.table.setHorizontalHeaderLabels(["layer", "head", *order])
        self.table.setRowCount(len(rows))
        for r, (layer, h) in enumerate(rows):
            self.table.setItem(r, 0, _Number(layer, str(layer)))
            self.table.setItem(r, 1, _Number(h, str(h)))
            for c, name in enumerate(order):
                v = float(self.scores[name][layer, h])
                self.table.setItem(r, 2 + c, _Number(v, f"{v:.3f}"))
        self.table.setSortingEnabled(True)
        self.table.sortItems(2, Qt.SortOrder.DescendingOrder)
        self.table.resizeColumnsToContents()
        for c in range(self.table.columnCount()):  # room for the sort arrow beside each name
            self.table.setColumnWidth(c, self.table.columnWidth(c) + 16)

    def _row_head(self, row: int) -> tuple[int, int]:
        return int(self.table.item(row, 0).value), int(self.table.item(row, 1).value)

    def _open_row(self, row: int) -> None:
        self.head_requested.emit(*self._row_head(row))

    def _on_table_selection_changed(self) -> None:
        rows = {i.row() for i in self.table.selectedIndexes()}
        self.similar.clear()
        if len(rows) != 1 or self.patterns is None:
            return
        layer, head = self._row_head(rows.pop())
        H = self.shape[1]
        for j, dist in similar_heads(self.patterns, layer * H + head, k=6):
            lj, hj = divmod(j, H)
            self.similar.addItem(f"layer {lj} head {hj}  (difference {dist:.3f})")
            self.similar.item(self.similar.count() - 1).setData(Qt.ItemDataRole.UserRole, (lj, hj))

    def _grid_hit(self, pos: QPointF) -> tuple[int, int] | None:
        if not self.scores:
            return None
        p = self.grid.getViewBox().mapSceneToView(pos)
        layer, head = int(np.floor(p.x())), int(np.floor(p.y()))
        L, H = self.shape
        return (layer, head) if 0 <= layer < L and 0 <= head < H else None

    def _on_grid_mouse_moved(self, pos: QPointF) -> None:
        hit = self._grid_hit(pos)
        if hit:
            role = self.role.currentData()
            self.readout.setText(f"layer {hit[0]} head {hit[1]}: {role} {self.scores[role][hit]:.3f}")
        else:
            self.readout.reset()

    def _on_grid_clicked(self, event: object) -> None:
        hit = self._grid_hit(event.scenePos())  # type: ignore[attr-defined]
        if hit:
            self.head_requested.emit(*hit)
