"""The Long tab's tile labels fit their tiles at the zoom on screen (widgets/long/tile_labels.py)."""

import pyqtgraph as pg
from PySide6.QtGui import QFontMetrics

from widgets.long.render import Tiles
from widgets.long.tile_labels import TileLabels


def test_tile_labels_take_the_longest_form_that_fits_and_follow_the_zoom(qtbot):
    view = pg.GraphicsLayoutWidget()
    qtbot.addWidget(view)
    view.resize(400, 300)
    plot = view.addPlot()
    tiles = Tiles(cols=4, rows=3, tile=512)  # 12 heads of 512 cells
    labels = TileLabels(plot)
    titles = [f"h{h} · kv{h // 3}" for h in range(12)]
    labels.show(tiles, titles)
    view.show()
    fm = QFontMetrics(labels.items[0].textItem.font())

    def room() -> float:  # a tile's width on screen, in pixels
        return tiles.tile / plot.getViewBox().viewPixelSize()[0]

    plot.setRange(xRange=(0, 10 * 520), yRange=(0, 3 * 520), padding=0)  # tiles of about 38 px, as in a 700 px window
    qtbot.waitUntil(lambda: room() < 45)
    assert fm.horizontalAdvance("h10") + 6 <= room() < fm.horizontalAdvance("h10 · kv3") + 6
    shown = [item.textItem.toPlainText() for item in labels.items]
    assert shown == [f"h{h}" for h in range(12)]  # one form for all: none runs over the next tile
    plot.setRange(xRange=(0, 520), yRange=(0, 520), padding=0)  # one tile fills the view: the full title
    qtbot.waitUntil(lambda: labels.items[0].textItem.toPlainText() == "h0 · kv0")
    plot.setRange(xRange=(0, 40 * 520), yRange=(0, 30 * 520), padding=0)  # tiles of a few pixels: no titles
    qtbot.waitUntil(lambda: not any(item.isVisible() for item in labels.items))
    labels.show(None, [])  # a single head: no tile labels
    assert labels.items == []
