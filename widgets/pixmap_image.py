"""An ImageItem that paints a QPixmap made once per image.

pyqtgraph's ImageItem turns an index image and its colour table into an Indexed8 QImage and hands it
to drawImage, which converts every pixel to the screen's format at every paint: 3 ms of a 4 ms
repaint of the opening mosaic, and again for each hover or zoom repaint. Converted once, the paint is a
scaled blit of a native pixmap."""

from __future__ import annotations

from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtGui import QImage, QPainter, QPixmap


class PixmapImageItem(pg.ImageItem):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pixmap: QPixmap | None = None
        self._pixmap_of: QImage | None = None  # the QImage the pixmap was made from

    def paint(self, painter: QPainter, *args: Any) -> None:
        if self.image is None:
            return
        # Render on paint, as ImageItem.paint does it (0.14 flags it; 0.13 clears qimage instead).
        if getattr(self, "_renderRequired", self.qimage is None):
            self.render()
            if getattr(self, "_unrenderable", False) or self.qimage is None:
                return
        if self.qimage is not self._pixmap_of:  # render() makes a new QImage for every new image or colour table
            self._pixmap = QPixmap.fromImage(self.qimage)
            self._pixmap_of = self.qimage
        assert self._pixmap is not None
        h, w = self.image.shape[:2]  # row-major (pg.setConfigOptions in heatmap_view)
        painter.drawPixmap(QRectF(0, 0, w, h), self._pixmap, QRectF(self._pixmap.rect()))
