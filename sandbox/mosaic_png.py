"""A headless mosaic image with what a reader needs: a title, each tile's head (and KV group), and a
colour bar with its scale. The CLI writes these (inspect --out); two mosaics drawn with the same
`cols` and `vmax` share one grid and one scale, so before and after compare tile by tile."""

from __future__ import annotations

import os

import numpy as np
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFont, QGuiApplication, QImage, QPainter

from widgets.colormaps import lut
from widgets.mosaic import MosaicLayout, plan_layout, render_rgb

PX = 4  # output pixels per mosaic pixel
TOP, RIGHT, MARGIN = 34, 78, 10


_app: QGuiApplication | None = None


def ensure_gui() -> None:
    """Text needs fonts, and fonts need a QGuiApplication: make one (offscreen without a display)."""
    global _app
    if QGuiApplication.instance() is None:
        if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        _app = QGuiApplication([])


def grid_for(n_heads: int, n_tokens: int, group_size: int, cols: int) -> MosaicLayout:
    return plan_layout(n_heads, n_tokens, group_size, cols=cols)


def draw_tile_label(p: QPainter, x: float, y: float, head: int, group_size: int) -> None:
    """A tile's "h<i> · kv<g>" at its top left corner, white on a dark box (the painter's current font)."""
    label = f"h{head}" + (f" · kv{head // group_size}" if group_size > 1 else "")
    fm = p.fontMetrics()
    rect = QRectF(x, y, fm.horizontalAdvance(label) + 6, fm.height() + 2)
    p.fillRect(rect, QColor(0, 0, 0, 170))
    p.setPen(QColor(255, 255, 255))
    p.drawText(rect, Qt.AlignmentFlag.AlignCenter, label)


def labelled_mosaic(probs: np.ndarray, group_size: int, title: str, cols: int, vmax: float,
                    colormap: str = "viridis") -> QImage:
    """probs (H, T, T) -> an RGB image: title, tiles titled h<i> · kv<g>, colour bar 0 .. vmax."""
    ensure_gui()
    lay = grid_for(len(probs), probs.shape[1], group_size, cols)
    rgb = np.ascontiguousarray(render_rgb(probs, lay, lut(colormap), vmax=vmax).repeat(PX, 0).repeat(PX, 1))
    h, w = rgb.shape[:2]  # (h, w, 3)
    mosaic = QImage(rgb.data, w, h, w * 3, QImage.Format.Format_RGB888)
    image = QImage(w + 2 * MARGIN + RIGHT, h + TOP + MARGIN, QImage.Format.Format_RGB888)
    image.fill(QColor(30, 30, 30))
    p = QPainter(image)
    try:
        font = QFont()
        font.setPixelSize(14)
        p.setFont(font)
        p.setPen(QColor(230, 230, 230))
        p.drawText(QRectF(MARGIN, 4, image.width() - 2 * MARGIN, TOP - 8), Qt.AlignmentFlag.AlignVCenter, title)
        p.drawImage(MARGIN, TOP, mosaic)
        font.setPixelSize(11)
        p.setFont(font)
        fm = p.fontMetrics()
        for head in range(len(probs)):
            x, y = lay.origin(head)
            draw_tile_label(p, MARGIN + x * PX, TOP + y * PX, head, group_size)
        bar_x, bar_h = MARGIN + w + 14, max(60, min(h, 300))
        table = lut(colormap)
        for i in range(bar_h):  # top = vmax, bottom = 0
            r, g, b = table[int((bar_h - 1 - i) * 255 / max(1, bar_h - 1))]
            p.fillRect(QRectF(bar_x, TOP + i, 14, 1), QColor(int(r), int(g), int(b)))
        p.setPen(QColor(230, 230, 230))
        p.drawText(QRectF(bar_x + 18, TOP - 2, RIGHT, fm.height()), Qt.AlignmentFlag.AlignLeft, f"{vmax:.3f}")
        p.drawText(QRectF(bar_x + 18, TOP + bar_h - fm.height(), RIGHT, fm.height()), Qt.AlignmentFlag.AlignLeft, "0")
        p.drawText(QRectF(bar_x - 4, TOP + bar_h + 4, RIGHT, fm.height()), Qt.AlignmentFlag.AlignLeft, "weight")
    finally:
        p.end()
    return image
