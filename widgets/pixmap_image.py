"""An ImageItem that paints a QPixmap made once per image.

pyqtgraph's ImageItem turns an index image and its colour table into an Indexed8 QImage and hands it
to drawImage, which converts every pixel to the screen's format at every paint: 3 ms of a 4 ms
repaint of the opening mosaic, and again for each hover or zoom repaint. Converted once, the paint is a
scaled blit of a native pixmap. An index image with a 256-colour table becomes its QImage without
ImageItem.render's checks and its colour list built anew each time (0.5 ms a new image).

QPainter draws nothing of an image with a side over MAX_SIDE px (a mosaic of 576 heads can pass it): such an
image is drawn from every k-th pixel (nearest, as an index image must be: the mean of two colour indices is a
third colour), over the whole image's rectangle. pyqtgraph's answer, auto-downsampling, averages the indices
into floats that its own render then refuses (levels are required for float input) and stays on for every later
image: the maps went blank for good."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtGui import QImage, QPainter, QPixmap

MAX_SIDE = 2**15 - 1

@lru_cache(maxsize=16)
def colour_list(table: bytes) -> list[int]:
    """(256, 3) uint8 colours as bytes -> QImage's colour table (opaque 0xAARRGGBB)."""
    rgb = np.frombuffer(table, dtype=np.uint8).reshape(-1, 3).astype(np.uint32)
    return [int(v) for v in 0xFF000000 | rgb[:, 0] << 16 | rgb[:, 1] << 8 | rgb[:, 2]]


class PixmapImageItem(pg.ImageItem):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pixmap: QPixmap | None = None
        self._pixmap_of: QImage | None = None  # the QImage the pixmap was made from
        self._rendered_from: np.ndarray | None = None

    def setImage(self, image: Any = None, *args: Any, **kwargs: Any) -> None:  # noqa: N802 (pyqtgraph's name)
        kwargs.setdefault("autoDownsample", False)  # pyqtgraph turns it on past MAX_SIDE, for good
        super().setImage(image, *args, **kwargs)

    def render(self) -> None:
        img, table = self.image, self.lut
        if not (isinstance(table, np.ndarray) and table.shape == (256, 3) and table.dtype == np.uint8
                and img is not None and img.ndim == 2 and img.dtype == np.uint8 and img.size
                and self.levels is None and not self.autoDownsample):
            super().render()
            return
        ky, kx = (-(-side // MAX_SIDE) for side in img.shape)  # ceil: 1 for any side Qt can draw
        img = np.ascontiguousarray(img[::ky, ::kx])  # (h, w) -> (ceil(h / ky), ceil(w / kx))
        qimage = QImage(img.data, img.shape[1], img.shape[0], img.strides[0], QImage.Format.Format_Indexed8)
        qimage.setColorTable(colour_list(table.tobytes()))
        self._rendered_from = img  # the QImage reads this buffer
        self.qimage = qimage
        self._renderRequired = False
        self._unrenderable = False

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
