"""Two mosaics of one grid seen as one: a shared zoom, and one fit that shows every tile on both."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QRectF

if TYPE_CHECKING:
    from widgets.maps.heatmap_view import HeatmapMosaic


def link_zoom(a: HeatmapMosaic, b: HeatmapMosaic) -> None:
    """One zoom for two mosaics of one grid: the same scale (so tiles are the same size on screen) and
    the same top-left corner, whatever each widget's size. pyqtgraph's setXLink/setYLink copy ranges,
    which two aspect-locked views of different sizes then fight over."""
    busy = [False]

    def follow(source: HeatmapMosaic, target: HeatmapMosaic) -> None:
        if busy[0] or not (source.isVisible() and target.isVisible()):  # a hidden side never drives
            return
        busy[0] = True
        try:
            sx, sy = source.plot.getViewBox().viewPixelSize()
            top_left = source.plot.getViewBox().viewRect().topLeft()
            vb = target.plot.getViewBox()
            vb.setRange(QRectF(top_left.x(), top_left.y(), vb.width() * sx, vb.height() * sy), padding=0)
        finally:
            busy[0] = False

    a.plot.getViewBox().sigRangeChanged.connect(lambda *_: follow(a, b))
    b.plot.getViewBox().sigRangeChanged.connect(lambda *_: follow(b, a))


def fit_together(*mosaics: HeatmapMosaic) -> None:
    """Every tile of every visible mosaic in view, at one scale that fits the larger grid into the
    smaller view; the first mosaic is set and the linked others follow it."""
    shown = [m for m in mosaics if m.isVisible() and m.layout_ is not None]
    if not shown:
        return
    width = max(m.layout_.width for m in shown)  # type: ignore[union-attr]
    height = max(m.layout_.height for m in shown)  # type: ignore[union-attr]
    views = [m.plot.getViewBox() for m in shown]
    scale = 1.02 * max(max(width / max(1.0, v.width()), height / max(1.0, v.height())) for v in views)
    # Every side shares this top-left corner, so centre the grid in the smallest view.
    small_w = min(v.width() for v in views) * scale
    small_h = min(v.height() for v in views) * scale
    vb = mosaics[0].plot.getViewBox()
    vb.setRange(QRectF((width - small_w) / 2, (height - small_h) / 2, vb.width() * scale, vb.height() * scale),
                padding=0)
    for m in mosaics:
        m.auto_fit = True
