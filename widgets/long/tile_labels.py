"""The head names on the Long tab's mosaic tiles, in the longest form every tile has room for at the zoom on screen
("h3 · kv1", "h3", "3" or none, as the Heatmaps tab's titles): full names over 40 px tiles ran over the next tile's
(12 heads in a 1024 x 700 window)."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QFontMetrics

from widgets.long.render import Tiles
from widgets.maps.tile_titles import uniform_titles


class TileLabels:
    def __init__(self, plot: pg.PlotItem) -> None:
        self.plot = plot
        self.items: list[pg.TextItem] = []
        self.titles: list[str] = []  # in full
        self.tiles: Tiles | None = None
        vb = plot.getViewBox()
        vb.sigRangeChanged.connect(self.fit)
        vb.sigResized.connect(self.fit)

    def show(self, tiles: Tiles | None, titles: list[str]) -> None:
        """One label per tile at its corner (tiles None: none)."""
        for item in self.items:
            self.plot.removeItem(item)
        self.items, self.titles, self.tiles = [], titles if tiles is not None else [], tiles
        for h in range(len(self.titles)):
            item = pg.TextItem("", color="#f8fafc", fill="#000000aa", anchor=(0, 0))
            item.setPos(*tiles.origin(h))
            item.setZValue(20)
            self.plot.addItem(item)
            self.items.append(item)
        self.fit()

    def fit(self, *_: object) -> None:
        if not self.items or self.tiles is None:
            return
        px_per_cell = 1.0 / max(1e-12, self.plot.getViewBox().viewPixelSize()[0])
        texts = uniform_titles(QFontMetrics(self.items[0].textItem.font()), self.titles, self.tiles.tile * px_per_cell)
        for item, text in zip(self.items, texts, strict=True):
            if item.textItem.toPlainText() != text:
                item.setText(text)
            item.setVisible(bool(text))
