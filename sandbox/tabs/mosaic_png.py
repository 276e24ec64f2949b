"""A headless mosaic image with what a reader needs: a title, each tile's head (and KV group), and a
colour bar with its scale. The CLI writes these (inspect --out); two mosaics drawn with the same
`cols` and `vmax` share one grid and one scale, so before and after compare tile by tile."""

from __future__ import annotations

import os

import numpy as np
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QGuiApplication, QImage, QPainter
from PySide6.QtWidgets import QApplication

from widgets.common.ticks import LABEL_CHARS, spaced_ticks
from widgets.maps.colormaps import lut
from widgets.maps.mosaic import MosaicLayout, plan_layout, render_rgb

PX = 4  # output pixels per mosaic pixel
TOP, RIGHT, MARGIN = 34, 78, 10


_app: QGuiApplication | None = None


def ensure_gui() -> None:
    """Text needs fonts, and fonts need a QGuiApplication: make one (offscreen without a display)."""
    global _app
    if QGuiApplication.instance() is None:
        if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        _app = QApplication([])  # a QApplication, not a QGuiApplication: a later window in this process needs one


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
                    colormap: str = "viridis", tokens: list[str] | None = None, lines: tuple[str, ...] = ()) -> QImage:
    """probs (H, T, T) -> an RGB image: title (and lines under it: the text), tiles titled h<i> · kv<g>, the query
    tokens down the left of each tile row (thinned to fit), axis titles, a colour bar 0 .. vmax with its ticks."""
    ensure_gui()
    lay = grid_for(len(probs), probs.shape[1], group_size, cols)
    rgb = np.ascontiguousarray(render_rgb(probs, lay, lut(colormap), vmax=vmax).repeat(PX, 0).repeat(PX, 1))
    h, w = rgb.shape[:2]  # (h, w, 3)
    mosaic = QImage(rgb.data, w, h, w * 3, QImage.Format.Format_RGB888)
    small = QFont()
    small.setPixelSize(11)
    fm = QFontMetricsF(small)
    labels = [t[:LABEL_CHARS] for t in tokens] if tokens else []
    left = (max((fm.horizontalAdvance(t) for t in labels), default=0.0) + 8 if labels else 0.0) + fm.height() + 6
    top = TOP + len(lines) * (fm.height() + 2)
    bar_w = 14 + 8 + fm.horizontalAdvance(f"{vmax:.3g}") + 8 + fm.height() + 6
    width, height = round(MARGIN + left + w + 14 + bar_w + MARGIN), round(top + h + fm.height() + 8 + MARGIN)
    image = QImage(width, height, QImage.Format.Format_RGB888)
    image.fill(QColor(30, 30, 30))
    x0 = MARGIN + left  # the mosaic's left edge
    p = QPainter(image)
    try:
        font = QFont()
        font.setPixelSize(14)
        font.setBold(True)
        p.setFont(font)
        p.setPen(QColor(230, 230, 230))
        p.drawText(QRectF(MARGIN, 4, width - 2 * MARGIN, TOP - 8), Qt.AlignmentFlag.AlignVCenter, title)
        p.setFont(small)
        p.setPen(QColor(170, 170, 170))
        for i, line in enumerate(lines):
            p.drawText(QRectF(MARGIN, TOP - 4 + i * (fm.height() + 2), width - 2 * MARGIN, fm.height()),
                       Qt.AlignmentFlag.AlignLeft, line)
        p.drawImage(round(x0), top, mosaic)
        for head in range(len(probs)):
            x, y = lay.origin(head)
            draw_tile_label(p, x0 + x * PX, top + y * PX, head, group_size)
        p.setPen(QColor(230, 230, 230))
        if labels:  # each row of tiles: its query tokens on the left, as many as fit without touching
            token_px = lay.upsample * PX  # output pixels per token along a tile
            shown = spaced_ticks(labels, len(labels) * token_px, fm.height())
            rows = sorted({lay.origin(head)[1] for head in range(len(probs))})
            for row_y in rows:  # origin: the tile's first token, inside its frame
                for pos, text in shown:
                    y = top + row_y * PX + pos * token_px
                    p.drawText(QRectF(MARGIN + fm.height() + 6, y - fm.height() / 2, left - fm.height() - 10,
                                      fm.height()), int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter),
                               text)
        p.drawText(QRectF(x0, top + h + 4, w, fm.height() + 4), int(Qt.AlignmentFlag.AlignHCenter),
                   "key token (each tile: queries down, keys across)")
        p.save()
        p.translate(MARGIN, top + h / 2)
        p.rotate(-90)
        p.drawText(QRectF(-h / 2, 0, h, fm.height() + 2), int(Qt.AlignmentFlag.AlignHCenter), "query token")
        p.restore()
        bar_x, bar_h = x0 + w + 14, max(60, min(h, 300))
        table = lut(colormap)
        for i in range(bar_h):  # top = vmax, bottom = 0
            r, g, b = table[int((bar_h - 1 - i) * 255 / max(1, bar_h - 1))]
            p.fillRect(QRectF(bar_x, top + i, 14, 1), QColor(int(r), int(g), int(b)))
        for fraction in (0.0, 0.5, 1.0):
            y = top + (1 - fraction) * (bar_h - 1)
            p.drawLine(round(bar_x + 14), round(y), round(bar_x + 18), round(y))
            p.drawText(QRectF(bar_x + 20, y - fm.height() / 2, bar_w, fm.height()),
                       int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter), f"{fraction * vmax:.3g}")
        p.save()
        p.translate(bar_x + bar_w - fm.height() - 2, top + bar_h / 2)
        p.rotate(-90)
        p.drawText(QRectF(-bar_h / 2 - 40, 0, bar_h + 80, fm.height() + 2), int(Qt.AlignmentFlag.AlignHCenter),
                   "attention weight")
        p.restore()
    finally:
        p.end()
    return image
