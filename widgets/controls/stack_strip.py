"""The model's layers as a strip: one cell a layer, coloured by its kind; click a cell (or use the arrow keys) to
pick the layer the heatmaps and the timing show. Draws what core/kinds/strip.py computed."""

from __future__ import annotations

import html

from PySide6.QtCore import QEvent, QPoint, QRect, QSize, Qt, Signal
from PySide6.QtGui import QColor, QHelpEvent, QKeyEvent, QMouseEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from core.kinds.strip import StripCell, strip_summary


class StackStrip(QWidget):
    picked = Signal(int)  # the layer a click or a key chose

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.cells: list[StripCell] = []
        self.current = 0
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setAccessibleName("Layers of the model")

    def sizeHint(self) -> QSize:
        return QSize(200, 22)

    def minimumSizeHint(self) -> QSize:
        return QSize(60, 22)

    def set_cells(self, cells: list[StripCell], current: int) -> None:
        if cells != self.cells or current != self.current:
            self.cells, self.current = cells, min(max(current, 0), max(len(cells) - 1, 0))
            legend = {c.short: c.colour for c in cells}
            self.setToolTip(f"{len(cells)} layers: {strip_summary(cells)}. Click a layer (or ←/→) to show its heads "
                            "and time it; " + ", ".join(legend) + " as coloured.")
            self.update()

    def legend(self) -> str:
        """The strip's colours, as rich text: '■ GDN ■ global'."""
        seen = {c.short: c.colour for c in self.cells}
        return "  ".join(f"<span style='color:{colour}'>■</span> {html.escape(name)}" for name, colour in seen.items())

    def cell_rect(self, i: int) -> QRect:
        n = max(len(self.cells), 1)
        w = self.width() / n
        return QRect(int(i * w), 2, max(int((i + 1) * w) - int(i * w) - (1 if w >= 4 else 0), 1), self.height() - 4)

    def index_at(self, pos: QPoint) -> int:
        n = len(self.cells)
        return min(max(int(pos.x() * n / max(self.width(), 1)), 0), n - 1) if n else -1

    def paintEvent(self, event: QPaintEvent) -> None:
        p = QPainter(self)
        for i, cell in enumerate(self.cells):
            p.fillRect(self.cell_rect(i), QColor(cell.colour))
        if self.cells:
            pen = QPen(QColor("#111827"), 2)
            p.setPen(pen)
            r = self.cell_rect(self.current)
            p.drawRect(r.adjusted(0, -1, 0, 1))
        if self.hasFocus():
            p.setPen(QPen(QColor("#2563eb"), 1, Qt.PenStyle.DotLine))
            p.drawRect(self.rect().adjusted(0, 0, -1, -1))
        p.end()

    def mousePressEvent(self, event: QMouseEvent) -> None:
        i = self.index_at(event.position().toPoint())
        if i >= 0:
            self.picked.emit(i)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        step = {Qt.Key.Key_Left: -1, Qt.Key.Key_Right: 1}.get(Qt.Key(event.key()))
        if step is None or not self.cells:
            super().keyPressEvent(event)
            return
        self.picked.emit(min(max(self.current + step, 0), len(self.cells) - 1))

    def event(self, e: QEvent) -> bool:
        if e.type() == QEvent.Type.ToolTip and isinstance(e, QHelpEvent) and self.cells:
            i = self.index_at(e.pos())
            QToolTip.showText(e.globalPos(), self.cells[i].tip + " (click to show it)", self)
            return True
        return super().event(e)
