"""A plot title whose legend wraps to the plot's width instead of widening the plot's column.

pyqtgraph's title is a LabelItem whose minimum width is its text's width, in a row fixed at 30 px: a long legend
in it widened its column past the pane (and cut the next column off screen and off an export), and a second line
overlapped the plot. This one asks for no width at all, wraps its text to the width the layout gives it, and
asks for the height its lines take.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt


class WrappingTitle(pg.LabelItem):
    def __init__(self, text: str = " ", **opts: object) -> None:
        super().__init__(text, **opts)
        option = self.item.document().defaultTextOption()
        option.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        self.item.document().setDefaultTextOption(option)

    def updateMin(self) -> None:  # noqa: N802 (pyqtgraph's name)
        height = self.itemRect().height()
        self.setMinimumWidth(0)
        self.setMinimumHeight(height)
        self.setMaximumHeight(height)
        self._sizeHint = {
            Qt.SizeHint.MinimumSize: (0, height),
            Qt.SizeHint.PreferredSize: (0, height),
            Qt.SizeHint.MaximumSize: (-1, height),
            Qt.SizeHint.MinimumDescent: (0, 0),
        }
        self.updateGeometry()

    def resizeEvent(self, ev: object) -> None:  # noqa: N802
        width = self.rect().width()
        if width > 1 and abs(self.item.textWidth() - width) > 0.5:
            self.item.setTextWidth(width)  # the lines wrap here; updateMin (below) asks for their height
        super().resizeEvent(ev)


def install(plot: pg.PlotItem, text: str = "") -> WrappingTitle:
    """Put a wrapping title in place of plot's own (set its text with setText, not plot.setTitle)."""
    plot.layout.removeItem(plot.titleLabel)
    plot.titleLabel.hide()
    title = WrappingTitle(text or " ", size="11pt", parent=plot)
    plot.layout.addItem(title, 0, 1)
    plot.layout.setRowMinimumHeight(0, 0)
    plot.layout.setRowMaximumHeight(0, 1000)
    plot.titleLabel = title
    return title
