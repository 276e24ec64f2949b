"""Each tile's title (h3 · kv1) and role badge, all drawn by one item in one paint call (64 TextItems
paint far slower), shortened or left out when a tile is too small for them; and a token cut to fit an axis."""

from __future__ import annotations

from collections import OrderedDict

import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QStaticText

from widgets.maps.mosaic import MosaicLayout

MIN_TITLE_PX = 26  # tile titles appear when a tile is at least this many pixels wide
KEPT_PLANS = 8


def fitted(fm: object, candidates: list[str], room_px: float) -> str:
    """The first text that fits in room_px (with its padding), or '' when none does."""
    for text in candidates:
        if fm.horizontalAdvance(text) + 6 <= room_px:  # type: ignore[attr-defined]
            return text
    return ""


def clip(token: str, chars: int) -> str:
    """A token's axis label: whole when it fits in `chars`, else cut with an ellipsis, so a cut never reads as
    the whole token (the hover and the head view give it in full)."""
    return token if len(token) <= chars else token[: chars - 1] + "…"


def uniform_titles(fm: object, titles: list[str], room_px: float) -> list[str]:
    """Every tile's title in the longest form that fits all of them ("h3 · kv1", else "h3", else "3"), or none:
    one form for the whole grid, so h10 and up do not lose the "· kv" that h0-h9 keep."""
    forms = (lambda t: t, lambda t: t.split(" · ")[0], lambda t: t.split(" · ")[0].lstrip("h"))
    for form in forms:
        texts = [form(t) for t in titles]
        if all(fm.horizontalAdvance(t) + 6 <= room_px for t in texts):  # type: ignore[attr-defined]
            return texts
    return [""] * len(titles)


Planned = tuple[float, float, QStaticText, int, QStaticText | None, int, QColor]


def static_text(text: str, font: QFont) -> QStaticText:
    """A text laid out once: drawStaticText paints 64 titles in half drawText's time."""
    st = QStaticText(text)
    st.setTextFormat(Qt.TextFormat.PlainText)
    st.prepare(font=font)
    return st


class TileTitles(pg.GraphicsObject):
    """All tile titles drawn by one item in one paint call (64 TextItems paint far slower)."""

    def __init__(self) -> None:
        super().__init__()
        self._layout: MosaicLayout | None = None
        self._titles: list[str] = []
        self._badges: list[tuple[str, str] | None] = []  # (text, colour) under each title
        self._font = QFont()
        self._font.setPointSize(8)
        self._plans: OrderedDict[tuple, list[Planned]] = OrderedDict()  # (grid, titles, badges, tile px) -> plan

    def set_tiles(self, layout: MosaicLayout, titles: list[str]) -> None:
        if (layout, titles) != (self._layout, self._titles):  # new data on the same grid keeps the plans
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

    def _plan(self, fm: QFontMetrics, tile_px: int) -> list[Planned]:
        """Per tile that shows a title, at this tile width: its origin, title, title width, badge, badge
        width and colour. The last few plans are kept, since a drag goes back and forth between a few grids
        and a hover repaints the same tiles (measuring 64 titles' candidates at every paint was half of a
        64-head mosaic's paint)."""
        key = (self._layout, tuple(self._titles), tuple(self._badges), tile_px)
        plan = self._plans.get(key)
        if plan is not None:
            self._plans.move_to_end(key)
            return plan
        assert self._layout is not None
        plan = []
        for head, title in enumerate(uniform_titles(fm, self._titles, tile_px)):
            if not title:
                continue
            badge = self._badges[head] if head < len(self._badges) else None
            text, colour = badge if badge is not None else ("", "")
            text = fitted(fm, [text, text.split(" ")[0]], tile_px) if text else ""  # "ind 0.91", else "ind"
            x, y = self._layout.origin(head)
            plan.append((x, y, static_text(title, self._font), fm.horizontalAdvance(title) + 6,
                         static_text(text, self._font) if text else None,
                         fm.horizontalAdvance(text) + 6 if text else 0, QColor(colour)))
        self._plans[key] = plan
        while len(self._plans) > KEPT_PLANS:
            self._plans.popitem(last=False)
        return plan

    def paint(self, p: QPainter, *args: object) -> None:
        lay = self._layout
        if lay is None:
            return
        t = p.transform()  # a scale and a shift: the view neither rotates nor shears
        tile_px = int(t.m11() * lay.tile)
        if tile_px < MIN_TITLE_PX:
            return
        p.save()
        p.resetTransform()
        p.setFont(self._font)
        fm = p.fontMetrics()
        height = fm.height() + 2
        shade, white, black = QColor(0, 0, 0, 160), QColor(255, 255, 255), QColor(0, 0, 0)
        sx, sy, dx, dy = t.m11(), t.m22(), t.dx(), t.dy()
        for x, y, title, width, badge, badge_width, colour in self._plan(fm, tile_px):
            px, py = sx * x + dx, sy * y + dy
            p.fillRect(QRectF(px, py, width, height), shade)
            p.setPen(white)
            p.drawStaticText(QPointF(px + 3, py + 1), title)  # centred: 3 px of the 6 padding, 1 of the 2
            if badge is not None:
                p.fillRect(QRectF(px, py + height, badge_width, height), colour)
                p.setPen(black)
                p.drawStaticText(QPointF(px + 3, py + height + 1), badge)
        p.restore()
