"""Labels and widgets whose changes do not move their neighbours.

A label whose text changes asks its layout to run again, and a label that is shown, hidden or wraps to
another line count moves every widget after it, which then repaints: during a slider drag that was a
relayout and repaint of most of the window at every step (bench/live_latency.py's stall). These
helpers give such widgets a room that does not change with their content."""

from __future__ import annotations

import math
import time
import weakref

from PySide6.QtCore import QEvent, QRect, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QResizeEvent, QShowEvent
from PySide6.QtWidgets import QLabel, QToolTip, QWidget
from shiboken6 import isValid as shiboken_valid

SETTLE_MS = 400  # the texts have settled: no label has taken a text this long


def keep_room(widget: QWidget) -> None:
    """Hidden, the widget keeps its place: showing or hiding it moves nothing."""
    policy = widget.sizePolicy()
    policy.setRetainSizeWhenHidden(True)
    widget.setSizePolicy(policy)


def reserve_lines(label: QLabel, lines: int) -> None:
    """At least `lines` lines of height, so that a text of fewer lines leaves its neighbours where they are."""
    margins = label.contentsMargins()
    label.setMinimumHeight(lines * label.fontMetrics().lineSpacing() + margins.top() + margins.bottom())


class WholeLabel(QLabel):
    """A word-wrapped label that is never cut: its minimum height is what its text needs at the width it has now
    (and never under `lines` lines). A height-for-width alone was not enough beside a scroll area: the layouts
    above asked for the height at the width without the scroll bar, and a third line was cut top and bottom."""

    def __init__(self, text: str = "", lines: int = 1, parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self.setWordWrap(True)
        self._lines = lines
        self._fit()

    def _fit(self) -> None:
        margins = self.contentsMargins()
        fm = self.fontMetrics()
        floor = self._lines * fm.lineSpacing() + margins.top() + margins.bottom()
        width = self.contentsRect().width() - 2 * max(0, self.margin())
        # the text's own height at this width (QLabel's heightForWidth counts the minimum height set here too)
        text = fm.boundingRect(QRect(0, 0, max(1, width), 100_000), int(Qt.TextFlag.TextWordWrap), self.text())
        need = max(floor, text.height() + margins.top() + margins.bottom() + 2 * max(0, self.margin()))
        if self.width() > 0 and need != self.minimumHeight():
            self.setMinimumHeight(need)

    def setText(self, text: str) -> None:  # noqa: N802 (Qt's name)
        super().setText(text)
        self._fit()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt's name)
        super().resizeEvent(event)
        self._fit()


class SteadyLabel(QLabel):
    """A one-line label for a figure that changes at every slider step, at the least cost a step can have:

    - its room grows at once and shrinks only once the texts have settled: QLabel.setText asks its layout to run
      again unless the label's size is fixed, and the costs grid's 27 rows of figures relaid the grid at every step
      (4 ms within the longest stalls of bench/live_latency.py's drag). Its size is fixed, and widened when a text
      needs more. A label with room to spare gives it back SETTLE_MS after the last text any such label took (one
      relayout at rest, not one a step): rooms that only grew kept each row at its widest over a session, and the
      sum passed a 1024 px screen. The width needed is the text's advance plus what the label adds around it,
      learnt from one sizeHint (which lays out the text: up to 0.13 ms, for 80 labels a step);
    - its tooltip is kept here and shown when asked for: QWidget.setToolTip sends an event per call;
    - its colour is set with widgets.common.style.set_colour, the palette's, not a style sheet's."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._tip = ""
        self._around: tuple[int, int] | None = None  # (width the label adds to the text's advance, height)
        self.setFixedSize(0, 0)
        self.setText(text)

    def setText(self, text: str) -> None:  # noqa: N802 (Qt's name)
        if text != self.text():
            super().setText(text)  # fixed size: no layout request
            self._fit()

    def setToolTip(self, tip: str) -> None:  # noqa: N802 (Qt's name)
        self._tip = tip

    def toolTip(self) -> str:  # noqa: N802 (Qt's name)
        return self._tip

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip:
            if self._tip:
                QToolTip.showText(event.globalPos(), self._tip, self)
            else:
                QToolTip.hideText()
                event.ignore()
            return True
        return super().event(event)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt's name)
        super().changeEvent(event)
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):  # a style sheet's font, once polished
            self._around = None
            self._fit()

    def _fit(self, shrink: bool = False) -> None:
        text = self.text()
        if not text:
            return
        advance = self.fontMetrics().horizontalAdvance(text)
        if self._around is None:
            hint = super().sizeHint()
            self._around = (hint.width() - advance, hint.height())
        width, height = advance + self._around[0], self._around[1]
        if shrink:
            if (width, height) != (self.minimumWidth(), self.minimumHeight()):
                self.setFixedSize(width, height)
        elif width > self.minimumWidth() or height > self.minimumHeight():
            self.setFixedSize(max(width, self.minimumWidth()), max(height, self.minimumHeight()))
        elif width < self.minimumWidth():
            _SETTLE.later(self)


class _Settle:
    """One timer for every SteadyLabel with room to spare: SETTLE_MS after the last text such a label took, each
    gives its room back. Restarted by a timestamp, not per text (80 labels take a text at each step of a drag)."""

    def __init__(self) -> None:
        self.labels: weakref.WeakSet[SteadyLabel] = weakref.WeakSet()
        self.last = 0.0
        self.timer: QTimer | None = None  # made with the first label: a QTimer needs the application

    def later(self, label: SteadyLabel) -> None:
        self.labels.add(label)
        self.last = time.perf_counter()
        if self.timer is None or not shiboken_valid(self.timer):  # a new QApplication (tests) deleted the old one
            self.timer = QTimer()
            self.timer.setSingleShot(True)
            self.timer.timeout.connect(self._fire)
        if not self.timer.isActive():
            self.timer.start(SETTLE_MS)

    def _fire(self) -> None:
        left_ms = SETTLE_MS - (time.perf_counter() - self.last) * 1e3
        if left_ms > 1 and self.timer is not None:
            self.timer.start(math.ceil(left_ms))  # a text came since: wait for the texts to settle
            return
        labels, self.labels = list(self.labels), weakref.WeakSet()
        for label in labels:
            if shiboken_valid(label):
                label._fit(shrink=True)


_SETTLE = _Settle()


class LayoutFirewall(QWidget):
    """Holds one widget and passes its layout requests up only when its size hints changed.

    Qt's QLayout::activate calls updateGeometry on its widget after every run ("ideally only if
    sizeHint() or sizePolicy() has changed", says its source), so a label's new text anywhere inside a
    tab reaches the QTabWidget, which answers every layout request by repainting all of itself: the
    whole right pane at every slider step. Between the two this widget asks the content's hints and
    stops the request when they are what they were.

    sized_by_host: the widget above gives this one its size whatever it prefers (a tab page): only a new minimum,
    maximum or policy needs the layouts above, not a preferred size or a wrapped line (the Heatmaps tab's legend
    wrapping to another line at a new head count repainted the whole tab widget at that step).

    wraps: the content is a word-wrapped text given the width of its row: only its height at that width (a line
    more or less) and its limits need the layouts above, not the preferred width a new text brings (a summary, the
    view's line or the frame legend, new at every step of a drag, ran the layouts of the side panel or the tab)."""

    hints_changed = Signal()  # the content needs other room (a host that sizes it by hand refits then)

    def __init__(self, content: QWidget, parent: QWidget | None = None, sized_by_host: bool = False,
                 wraps: bool = False) -> None:
        super().__init__(parent)
        self.content = content
        self.sized_by_host = sized_by_host
        self.wraps = wraps
        content.setParent(self)
        # QScrollArea asks the policy (or a layout), not hasHeightForWidth(), whether the height follows the
        # width: without this its rows of wrapped text were squeezed instead of scrolled.
        policy = self.sizePolicy()
        policy.setHeightForWidth(content.hasHeightForWidth())
        self.setSizePolicy(policy)
        self._hints = self._current_hints()

    def _current_hints(self) -> tuple[object, ...]:
        c = self.content
        if self.sized_by_host:
            return (c.minimumSizeHint(), c.minimumSize(), c.maximumSize(), c.sizePolicy())
        if self.wraps:  # the height a layout gives it: its lines, within its limits (a notice reserving two lines)
            height = min(max(c.heightForWidth(max(1, self.width())), c.minimumHeight()), c.maximumHeight())
            return (height, c.minimumSize(), c.maximumSize(), c.sizePolicy(), c.isHidden())
        # A word-wrapped label that takes another line changes heightForWidth, not the size hints.
        height_for_width = c.heightForWidth(max(1, self.width())) if c.hasHeightForWidth() else -1
        return (c.sizeHint(), c.minimumSizeHint(), c.minimumSize(), c.maximumSize(), c.sizePolicy(), height_for_width)

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        return self.content.sizeHint()

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        return self.content.minimumSizeHint()

    def hasHeightForWidth(self) -> bool:  # noqa: N802 (Qt's name)
        return self.content.hasHeightForWidth()

    def heightForWidth(self, width: int) -> int:  # noqa: N802 (Qt's name)
        return self.content.heightForWidth(width)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt's name)
        super().resizeEvent(event)
        self.content.setGeometry(0, 0, self.width(), self.height())

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 (Qt's name)
        """Shown again (its tab in front): its hints once more, up the layouts. A text set while it was hidden asked
        no visible layout to run, and a header that took a second line stayed one line high, clipped."""
        super().showEvent(event)
        hints = self._current_hints()
        changed, self._hints = hints != self._hints, hints
        self.updateGeometry()
        if changed:
            self.hints_changed.emit()

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.LayoutRequest:
            hints = self._current_hints()
            if hints != self._hints:
                self._hints = hints
                self.updateGeometry()  # the content needs other room: tell the layouts above, once
                self.hints_changed.emit()
            return True
        return super().event(event)
