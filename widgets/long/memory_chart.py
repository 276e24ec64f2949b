"""Memory vs context: one sequence's cache against T on log axes (the KV that grows, the recurrent state that stays
flat, their sum, a pure-attention baseline), the crossover marked, and the sentence core computed. Draws what
core/long/memory_curve.py computed; the baseline is the user's choice of preset."""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from core.format import format_bytes, format_count, format_tokens
from core.long.memory_curve import MemoryCurve

COLOURS = {"kv": "#2563eb", "state": "#16a34a", "total": "#111827", "baseline": "#6b7280"}


class MemoryChart(QWidget):
    baseline_changed = Signal(str)  # the baseline preset's name
    shown = Signal()  # the tab came on screen (its chart is drawn only while seen)

    def __init__(self, baselines: list[str], default: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.plot = pg.PlotWidget(background="w")
        self.plot.setLogMode(x=True, y=True)
        self.plot.setLabel("bottom", "context T, tokens (log)")
        self.plot.setLabel("left", "cache a sequence (log)")
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.plot.setMouseEnabled(x=False, y=False)
        self.legend = self.plot.addLegend(offset=(10, 10))
        self.baseline = QComboBox()
        self.baseline.addItems(baselines)
        self.baseline.setCurrentText(default)
        self.baseline.setToolTip("The pure-attention model drawn beside this one (its whole cache a sequence, in the "
                                 "same formats)")
        self.baseline.currentTextChanged.connect(self.baseline_changed)
        self.measure = QComboBox()
        self.measure.addItems(["cache kept", "bytes a decode step reads", "FLOPs a decode step runs"])
        self.measure.setToolTip("What the chart draws against T: the cache a sequence keeps, or the bytes one decode "
                                "step reads of it (a sparse layer its selection, a window its tokens, a recurrent "
                                "state read and written)")
        self.measure.currentIndexChanged.connect(lambda _i: self._redraw())
        self.last: tuple[MemoryCurve, str, str] | None = None
        self.sentence = QLabel("")
        self.sentence.setWordWrap(True)
        self.sentence.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        top = QHBoxLayout()
        top.addWidget(QLabel("Baseline"))
        top.addWidget(self.baseline)
        top.addWidget(QLabel("Show"))
        top.addWidget(self.measure)
        top.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.sentence)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.shown.emit()

    def show_curve(self, curve: MemoryCurve, name: str, baseline: str) -> None:
        self.last = (curve, name, baseline)
        self._redraw()

    def _redraw(self) -> None:
        if self.last is None:
            return
        curve, name, baseline = self.last
        self.plot.clear()
        self.legend.clear()
        xs = list(curve.contexts)
        if self.measure.currentIndex() == 2 and curve.flops:
            self.plot.setLabel("left", "attention-core FLOPs of one decode step (log)")
            names = {"attention": f"{name}: attention", "indexer": f"{name}: its indexers (every token)"}
            keys = {"attention": "total", "indexer": "kv"}
            self._lines(xs, (*((ys, keys.get(part, "state"), names.get(part, part), False)
                               for part, ys in curve.flops.items()), (curve.baseline_flops, "baseline", baseline, True)))
            if curve.indexer_passes is not None and xs[0] <= curve.indexer_passes <= xs[-1]:
                self.plot.addItem(pg.InfiniteLine(pos=math.log10(curve.indexer_passes), angle=90,
                                                  pen=pg.mkPen("#dc2626", style=Qt.PenStyle.DotLine),
                                                  label=f"indexer = attention: T {format_tokens(curve.indexer_passes)}",
                                                  labelOpts={"position": 0.12, "color": "#dc2626"}))
            values = [v for ys in (*curve.flops.values(), curve.baseline_flops) for v in ys if v > 0]
            self._axes(xs, values, unit="FLOP")
            self.sentence.setText(curve.sentence)
            return
        if self.measure.currentIndex() == 1 and curve.reads:
            self.plot.setLabel("left", "bytes a decode step reads (log)")
            self._lines(xs, ((curve.reads, "total", f"{name}: one decode step", False),
                             (curve.baseline_reads, "baseline", baseline, True)))
            self._axes(xs, [v for v in (*curve.reads, *curve.baseline_reads) if v > 0])
            self.sentence.setText(curve.sentence)
            return
        self.plot.setLabel("left", "cache a sequence (log)")

        series = [(curve.total, "total", f"{name}: all of it", False),
                  (curve.kv, "kv", "its attention layers' KV (grows)", False)]
        series += [((curve.state,) * len(xs), "state", "its recurrent state (flat)", False)] if curve.state else []
        self._lines(xs, (*series, (curve.baseline, "baseline", baseline, True)))
        marks = ((curve.crossover_memory, "state = KV", 0.12), (curve.crossover_read, "state read = KV read", 0.04))
        for t, what, where in marks:
            if t is not None and xs[0] <= t <= xs[-1]:
                mark = pg.InfiniteLine(pos=math.log10(t), angle=90, pen=pg.mkPen("#dc2626", style=Qt.PenStyle.DotLine),
                                       label=f"{what}: T {format_tokens(t)}",
                                       labelOpts={"position": where, "color": "#dc2626"})
                self.plot.addItem(mark)
        self._axes(xs, [v for v in (*curve.total, *curve.baseline, curve.state) if v > 0])
        self.sentence.setText(curve.sentence)

    def _lines(self, xs: list[int], series: tuple[tuple[tuple[int, ...], str, str, bool], ...]) -> None:
        for ys, key, label, dashed in series:
            pen = pg.mkPen(COLOURS[key], width=3 if key == "total" else 2,
                           style=Qt.PenStyle.DashLine if dashed else Qt.PenStyle.SolidLine)
            pts = [(x, y) for x, y in zip(xs, ys, strict=True) if y > 0]  # a log axis has no zero
            if pts:
                self.plot.plot([p[0] for p in pts], [p[1] for p in pts], pen=pen, name=label)

    def _axes(self, xs: list[int], values: list[int], unit: str = "B") -> None:
        """Ticks at powers of two (at most seven: bytes, or FLOPs) and token ticks at every other context."""
        values = values or [1]
        if unit != "B":  # counts read best at powers of ten
            lo, hi = math.floor(math.log10(min(values))), math.ceil(math.log10(max(values)))
            self.plot.getAxis("left").enableAutoSIPrefix(False)
            self.plot.getAxis("left").setTicks([[(k, format_count(10**k)) for k in range(lo, hi + 1)], []])
            self.plot.getAxis("bottom").setTicks([[(math.log10(x), format_tokens(x)) for x in xs[::2]], []])
            return
        lo, hi = math.floor(math.log2(min(values))), math.ceil(math.log2(max(values)))
        step = max(1, math.ceil((hi - lo) / 6))  # at most seven labels, each a power of two in bytes
        axis = self.plot.getAxis("left")
        axis.enableAutoSIPrefix(False)
        axis.setTicks([[(k * math.log10(2), format_bytes(2**k)) for k in range(lo, hi + 1, step)], []])
        self.plot.getAxis("bottom").setTicks([[(math.log10(x), format_tokens(x)) for x in xs[::2]], []])
