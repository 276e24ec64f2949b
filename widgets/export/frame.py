"""An exported heatmap that stands on its own: the view the user sees, trimmed of its empty margin, under a title
that says what it is (model or configuration, layer, head or all heads, the text) and beside a colour bar with its
scale, with axis titles where the view has none. The same painting serves PNG (at any scale) and SVG."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QPoint, QRect, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QImage, QPainter, QRegion
from PySide6.QtWidgets import QWidget

from widgets.maps.colormaps import lut

MARGIN = 14  # px around everything
GAP = 8  # px between the title block, the view and the colour bar
BAR_W, BAR_MAX_H = 16, 320
TITLE_PX, LINE_PX, TICK_PX = 16, 12, 11
INK, DIM, PAPER = QColor(235, 235, 235), QColor(170, 170, 170), QColor(30, 30, 30)


@dataclass(frozen=True)
class ColourBar:
    colormap: str
    vmax: float  # the scale runs 0 .. vmax
    label: str  # "attention weight, one scale for every head"
    per_head: bool = False  # each tile scaled to its own max: the bar reads 0 .. "each head's max"
    ticks: tuple[tuple[float, str], ...] = ()  # (fraction up the bar, label) for a scale that is not linear


@dataclass(frozen=True)
class Frame:
    title: str  # "SmolLM2-135M · layer 3 · all heads"
    lines: tuple[str, ...] = ()  # the configuration, the text
    bar: ColourBar | None = None  # None: the view draws its own
    x_title: str = ""  # axis titles the view does not draw itself
    y_title: str = ""


def _font(px: int, bold: bool = False) -> QFont:
    font = QFont()
    font.setPixelSize(px)
    font.setBold(bold)
    return font


def content_box(widget: QWidget) -> QRect:
    """The part of widget that holds something: its render at 1x with the rows and columns of plain background
    (or of an axis line alone) at its edges cut away (the mosaic's view is wider than its tiles)."""
    size = widget.size()
    image = QImage(size, QImage.Format.Format_RGB32)
    image.fill(PAPER)
    painter = QPainter(image)
    try:
        QWidget.render(widget, painter, QPoint())
    finally:
        painter.end()
    ptr = image.constBits()
    pixels = np.frombuffer(ptr, dtype=np.uint32, count=image.width() * image.height()).reshape(
        image.height(), image.bytesPerLine() // 4)[:, : image.width()]  # (h, w) packed ARGB
    ink = pixels != pixels[0, 0]
    # An axis line runs the view's whole width: a column (or row) counts only with more than a line's pixel in it.
    rows, cols = np.flatnonzero(ink.sum(axis=1) > 2), np.flatnonzero(ink.sum(axis=0) > 2)
    if not len(rows):
        return QRect(QPoint(0, 0), size)
    pad = 4
    left, top = max(0, int(cols[0]) - pad), max(0, int(rows[0]) - pad)
    right, bottom = min(size.width(), int(cols[-1]) + 1 + pad), min(size.height(), int(rows[-1]) + 1 + pad)
    return QRect(left, top, right - left, bottom - top)


def _wrapped_height(text: str, font: QFont, width: float) -> float:
    fm = QFontMetricsF(font)
    return fm.boundingRect(QRectF(0, 0, width, 10_000), int(Qt.TextFlag.TextWordWrap), text).height()


@dataclass(frozen=True)
class _Plan:
    size: QSize
    header_h: float
    view_at: QPoint
    box: QRect
    bar_at: QRectF | None
    text_w: float


def _plan(widget: QWidget, frame: Frame) -> _Plan:
    box = content_box(widget)
    y_title_w = LINE_PX + GAP if frame.y_title else 0
    bar_w = BAR_W + 8 + _widest_tick(frame.bar) + GAP + LINE_PX + GAP if frame.bar else 0
    width = MARGIN + y_title_w + box.width() + (GAP + bar_w if frame.bar else 0) + MARGIN
    width = max(width, 420)  # a title needs some room even over one small head
    text_w = width - 2 * MARGIN
    header_h = _wrapped_height(frame.title, _font(TITLE_PX, True), text_w) + 4
    for line in frame.lines:
        header_h += _wrapped_height(line, _font(LINE_PX), text_w) + 2
    x_title_h = LINE_PX + GAP if frame.x_title else 0
    view_at = QPoint(MARGIN + y_title_w, round(MARGIN + header_h + GAP))
    height = view_at.y() + box.height() + x_title_h + MARGIN
    bar_at = None
    if frame.bar:
        bar_h = min(box.height() - 2 * TICK_PX, BAR_MAX_H)
        bar_at = QRectF(view_at.x() + box.width() + GAP, view_at.y() + TICK_PX, BAR_W, max(bar_h, 60))
        height = max(height, round(bar_at.bottom() + TICK_PX + MARGIN))
    return _Plan(QSize(round(width), round(height)), header_h, view_at, box, bar_at, text_w)


def _paint(painter: QPainter, widget: QWidget, frame: Frame, plan: _Plan) -> None:
    painter.fillRect(QRectF(0, 0, plan.size.width(), plan.size.height()), PAPER)
    flags = int(Qt.AlignmentFlag.AlignLeft) | int(Qt.TextFlag.TextWordWrap)
    y = float(MARGIN)
    painter.setPen(INK)
    painter.setFont(_font(TITLE_PX, True))
    rect = painter.boundingRect(QRectF(MARGIN, y, plan.text_w, 10_000), flags, frame.title)
    painter.drawText(QRectF(MARGIN, y, plan.text_w, rect.height()), flags, frame.title)
    y += rect.height() + 4
    painter.setPen(DIM)
    painter.setFont(_font(LINE_PX))
    for line in frame.lines:
        rect = painter.boundingRect(QRectF(MARGIN, y, plan.text_w, 10_000), flags, line)
        painter.drawText(QRectF(MARGIN, y, plan.text_w, rect.height()), flags, line)
        y += rect.height() + 2
    box, at = plan.box, plan.view_at
    QWidget.render(widget, painter, at, QRegion(box))  # the view as painted, cut to what it holds
    painter.setPen(INK)
    painter.setFont(_font(LINE_PX))
    if frame.x_title:
        painter.drawText(QRectF(at.x(), at.y() + box.height() + 2, box.width(), LINE_PX + GAP),
                         int(Qt.AlignmentFlag.AlignHCenter), frame.x_title)
    if frame.y_title:
        painter.save()
        painter.translate(MARGIN, at.y() + box.height() / 2)
        painter.rotate(-90)
        painter.drawText(QRectF(-box.height() / 2, 0, box.height(), LINE_PX + 4), int(Qt.AlignmentFlag.AlignHCenter),
                         frame.y_title)
        painter.restore()
    if frame.bar and plan.bar_at is not None:
        _paint_bar(painter, frame.bar, plan.bar_at)


def _bar_ticks(bar: ColourBar) -> list[tuple[float, str]]:
    """(fraction up the bar, label): the bar's own, or 0 .. each head's max, or five linear steps to vmax."""
    return list(bar.ticks) or ([(0.0, "0"), (1.0, "each head's max")] if bar.per_head else [
        (f, f"{f * bar.vmax:.3g}") for f in (0.0, 0.25, 0.5, 0.75, 1.0)])


def _widest_tick(bar: ColourBar) -> float:
    fm = QFontMetricsF(_font(TICK_PX))
    return max(fm.horizontalAdvance(text) for _, text in _bar_ticks(bar))


def _paint_bar(painter: QPainter, bar: ColourBar, at: QRectF) -> None:
    table = lut(bar.colormap)
    steps = max(2, int(at.height()))
    for i in range(steps):  # top = vmax, bottom = 0
        r, g, b = table[int((steps - 1 - i) * 255 / (steps - 1))]
        painter.fillRect(QRectF(at.x(), at.y() + i * at.height() / steps, at.width(), at.height() / steps + 0.5),
                         QColor(int(r), int(g), int(b)))
    painter.setPen(DIM)
    painter.drawRect(at)
    painter.setFont(_font(TICK_PX))
    painter.setPen(INK)
    for fraction, text in _bar_ticks(bar):
        y = at.bottom() - fraction * at.height()
        painter.drawLine(round(at.right()), round(y), round(at.right() + 4), round(y))
        painter.drawText(QRectF(at.right() + 7, y - TICK_PX, 400, 2 * TICK_PX), int(Qt.AlignmentFlag.AlignVCenter),
                         text)
    label_x = at.right() + 8 + _widest_tick(bar) + GAP
    painter.save()
    painter.translate(label_x, at.center().y())
    painter.rotate(-90)
    painter.setFont(_font(LINE_PX))
    painter.drawText(QRectF(-at.height() / 2 - 100, 0, at.height() + 200, LINE_PX + 4),
                     int(Qt.AlignmentFlag.AlignHCenter), bar.label)
    painter.restore()


def framed_image(widget: QWidget, frame: Frame, scale: float) -> QImage:
    """The framed view as pixels, `scale` output pixels per screen pixel."""
    plan = _plan(widget, frame)
    image = QImage(QSize(round(plan.size.width() * scale), round(plan.size.height() * scale)),
                   QImage.Format.Format_ARGB32)
    image.fill(PAPER)
    painter = QPainter(image)
    try:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setRenderHint(QPainter.RenderHint.TextAntialiasing)
        painter.scale(scale, scale)
        _paint(painter, widget, frame, plan)
    finally:
        painter.end()
    return image


def framed_size(widget: QWidget, frame: Frame) -> QSize:
    return _plan(widget, frame).size


def paint_framed(painter: QPainter, widget: QWidget, frame: Frame) -> None:
    """Onto any paint device at 1x (the SVG generator), sized framed_size(widget, frame)."""
    _paint(painter, widget, frame, _plan(widget, frame))
