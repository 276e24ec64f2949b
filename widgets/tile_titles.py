"""Each tile's title (h3 · kv1) and role badge, all drawn by one item in one paint call (64 TextItems
paint far slower), shortened or left out when a tile is too small for them."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QPainter

from widgets.mosaic import MosaicLayout

MIN_TITLE_PX = 26  # tile titles appear when a tile is at least this many pixels wide


def fitted(fm: object, candidates: list[str], room_px: float) -> str:
    """The first text that fits in room_px (with its padding), or '' when none does."""
    for text in candidates:
        if fm.horizontalAdvance(text) + 6 <= room_px:  # type: ignore[attr-defined]
            return text
    return ""


class TileTitles(pg.GraphicsObject):
    """All tile titles drawn by one item in one paint call (64 TextItems paint far slower)."""

    def __init__(self) -> None:
        super().__init__()
        self._layout: MosaicLayout | None = None
        self._titles: list[str] = []
        self._badges: list[tuple[str, str] | None] = []  # (text, colour) under each title
        self._font = QFont()
        self._font.setPointSize(8)

    def set_tiles(self, layout: MosaicLayout, titles: list[str]) -> None:
        self.prepareGeometryChange()
        self._layout, self._titles = layout, titles
        self.update()

    @property
    def titles(self) -> list[str]:
        return self._titles

    def set_badges(self, badges: list[tuple[str, str] | None]) -> None:
        self._badges = badges
        self.update()

    def boundingRect(self) -> QRectF:  # noqa: N802 (Qt's name)
        if self._layout is None:
            return QRectF()
        return QRectF(0, 0, self._layout.width, self._layout.height)

    def paint(self, p: QPainter, *args: object) -> None:
        lay = self._layout
        if lay is None:
            return
        t = p.transform()
        tile_px = t.map(QPointF(lay.tile, 0)).x() - t.map(QPointF(0, 0)).x()
        if tile_px < MIN_TITLE_PX:
            return
        p.save()
        p.resetTransform()
        p.setFont(self._font)
        fm = p.fontMetrics()
        for head, title in enumerate(self._titles):
            x, y = lay.origin(head)
            pt = t.map(QPointF(x, y))
            short = title.split(" · ")[0]
            title = fitted(fm, [title, short, short.lstrip("h")], tile_px)  # "h3 · kv1", else "h3", else "103"
            if not title:
                continue
            rect = QRectF(pt.x(), pt.y(), fm.horizontalAdvance(title) + 6, fm.height() + 2)
            p.fillRect(rect, QColor(0, 0, 0, 160))
            p.setPen(QColor(255, 255, 255))
            p.drawText(rect, Qt.AlignmentFlag.AlignCenter, title)
            badge = self._badges[head] if head < len(self._badges) else None
            if badge is not None:
                text, colour = badge
                text = fitted(fm, [text, text.split(" ")[0]], tile_px)  # "ind 0.91", else "ind"
                if not text:
                    continue
                brect = QRectF(pt.x(), rect.bottom(), fm.horizontalAdvance(text) + 6, fm.height() + 2)
                p.fillRect(brect, QColor(colour))
                p.setPen(QColor(0, 0, 0))
                p.drawText(brect, Qt.AlignmentFlag.AlignCenter, text)
        p.restore()
