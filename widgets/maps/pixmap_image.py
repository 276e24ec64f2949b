"""An ImageItem that paints a QPixmap made once per image.

pyqtgraph's ImageItem turns an index image and its colour table into an Indexed8 QImage and hands it
to drawImage, which converts every pixel to the screen's format at every paint: 3 ms of a 4 ms
repaint of the opening mosaic, and again for each hover or zoom repaint. Converted once, the paint is a
scaled blit of a native pixmap. An index image with a 256-colour table becomes its QImage without
ImageItem.render's checks and its colour list built anew each time (0.5 ms a new image).

QPainter draws nothing of an image with a side over MAX_SIDE px (a mosaic of 576 heads can pass it). Such an image
is drawn, whole, from every k-th pixel (nearest, as an index image must be: the mean of two colour indices is a
third colour; or, for a strip whose single bright key must not vanish, the block's largest index: reduce="max").
Zoomed in, the part on screen is drawn from the full image at the step the screen can show (1 when a pixel
covers a device pixel or more): the rows a zoomed tile shows are its own, and hover reads what is drawn.
pyqtgraph's own answer, auto-downsampling, averages the indices into floats that its own render then refuses
(levels are required for float input) and stays on for every later image: the maps went blank for good."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtGui import QImage, QPainter, QPixmap
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem

MAX_SIDE = 2**15 - 1


@lru_cache(maxsize=16)
def colour_list(table: bytes) -> list[int]:
    """(256, 3) uint8 colours as bytes -> QImage's colour table (opaque 0xAARRGGBB)."""
    rgb = np.frombuffer(table, dtype=np.uint8).reshape(-1, 3).astype(np.uint32)
    return [int(v) for v in 0xFF000000 | rgb[:, 0] << 16 | rgb[:, 1] << 8 | rgb[:, 2]]


def reduce_image(img: np.ndarray, ky: int, kx: int, how: str = "nearest") -> np.ndarray:
    """(h, w) uint8 indices -> (ceil(h / ky), ceil(w / kx)): every k-th pixel, or each block's largest."""
    if how == "max" and (ky > 1 or kx > 1):
        h, w = img.shape
        padded = np.zeros((-(-h // ky) * ky, -(-w // kx) * kx), dtype=img.dtype)  # 0: the lowest index
        padded[:h, :w] = img
        return padded.reshape(padded.shape[0] // ky, ky, padded.shape[1] // kx, kx).max(axis=(1, 3))
    return np.ascontiguousarray(img[::ky, ::kx])


def indexed_image(img: np.ndarray, table: np.ndarray) -> QImage:
    """(h, w) uint8 indices, contiguous, and their (256, 3) colours -> a QImage that reads img's buffer."""
    qimage = QImage(img.data, img.shape[1], img.shape[0], img.strides[0], QImage.Format.Format_Indexed8)
    qimage.setColorTable(colour_list(table.tobytes()))
    return qimage


class PixmapImageItem(pg.ImageItem):
    def __init__(self, *args: Any, reduce: str = "nearest", **kwargs: Any) -> None:
        """reduce: how an image past MAX_SIDE is drawn whole: "nearest" (every k-th pixel) or "max"."""
        super().__init__(*args, **kwargs)
        self.reduce = reduce
        self._pixmap: QPixmap | None = None
        self._pixmap_of: QImage | None = None  # the QImage the pixmap was made from
        self._rendered_from: np.ndarray | None = None
        self._step = (1, 1)  # the whole image's drawing step (ky, kx): over 1 past MAX_SIDE
        self._region: tuple[tuple[int, ...], QPixmap] | None = None  # a zoomed part of a reduced image, drawn
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemUsesExtendedStyleOption)  # exposedRect: the part to paint

    def setImage(self, image: Any = None, *args: Any, **kwargs: Any) -> None:  # noqa: N802 (pyqtgraph's name)
        kwargs.setdefault("autoDownsample", False)  # pyqtgraph turns it on past MAX_SIDE, for good
        super().setImage(image, *args, **kwargs)

    def render(self) -> None:
        img, table = self.image, self.lut
        self._step, self._region = (1, 1), None
        if not (isinstance(table, np.ndarray) and table.shape == (256, 3) and table.dtype == np.uint8
                and img is not None and img.ndim == 2 and img.dtype == np.uint8 and img.size
                and self.levels is None and not self.autoDownsample):
            super().render()
            return
        ky, kx = (-(-side // MAX_SIDE) for side in img.shape)  # ceil: 1 for any side Qt can draw
        img = reduce_image(img, ky, kx, self.reduce)  # (h, w) -> (ceil(h / ky), ceil(w / kx))
        self._step = (ky, kx)
        self._rendered_from = img  # the QImage reads this buffer
        self.qimage = indexed_image(img, table)
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
        option = args[0] if args and isinstance(args[0], QStyleOptionGraphicsItem) else None
        if (self._step != (1, 1) or self.reduce == "max") and option is not None \
                and self._draw_region(painter, option.exposedRect):
            return
        painter.drawPixmap(QRectF(0, 0, w, h), self._pixmap, QRectF(self._pixmap.rect()))

    def _draw_region(self, painter: QPainter, exposed: QRectF) -> bool:
        """The exposed part drawn from the full image at the finest step the screen shows (and Qt can draw): a reduced
        image zoomed in; and with reduce="max", any image the screen shows fewer pixels of than it has (Qt's own
        scaling would skip pixels, a lone peak among them). False: the whole image's pixmap draws the same."""
        h, w = self.image.shape[:2]
        t = painter.worldTransform()  # item -> device pixels
        scales = (math.hypot(t.m12(), t.m22()), math.hypot(t.m11(), t.m21()))  # device px per image pixel (y, x)
        y0, y1 = max(0, math.floor(exposed.top())), min(h, math.ceil(exposed.bottom()))
        x0, x1 = max(0, math.floor(exposed.left())), min(w, math.ceil(exposed.right()))
        if y1 <= y0 or x1 <= x0:
            return True  # nothing of the image is exposed
        if min(scales) <= 0:
            return False
        steps = []
        for lo, hi, scale in ((y0, y1, scales[0]), (x0, x1, scales[1])):
            # nearest: a device pixel shows one of every `fit` pixels (floor: none skipped that Qt would draw);
            # max: blocks of a device pixel or more (ceil), so Qt's own scaling never skips a block's peak
            fit = 1 if scale >= 1 else (math.ceil if self.reduce == "max" else math.floor)(1 / scale)
            steps.append(max(fit, -(-(hi - lo) // (MAX_SIDE - 1))))  # - 1: room for the step grid's start below
        sy, sx = steps
        if self.reduce == "max":
            whole_is_same = min(scales) >= 1 and self._step == (1, 1)
        else:
            whole_is_same = sy >= self._step[0] and sx >= self._step[1]
        if whole_is_same:
            return False
        y0, x0 = y0 - y0 % sy, x0 - x0 % sx  # on the whole image's grid of steps
        key = (id(self._rendered_from), y0, y1, x0, x1, sy, sx)
        if self._region is None or self._region[0] != key:
            part = reduce_image(self.image[y0:y1, x0:x1], sy, sx, self.reduce)
            self._region = (key, QPixmap.fromImage(indexed_image(part, self.lut)))
        pixmap = self._region[1]
        painter.drawPixmap(QRectF(x0, y0, pixmap.width() * sx, pixmap.height() * sy), pixmap, QRectF(pixmap.rect()))
        return True
