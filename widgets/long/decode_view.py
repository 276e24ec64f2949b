"""A decode run on screen: per step the KV cache's size, the step's measured time and the new token's
attention row over everything before it (a strip that grows a row a step); for random weights, one decode step's
time against the tokens it reads, with the least-squares line whose slope is the cache read's bandwidth."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from core.format import format_bytes
from core.long.decode_words import curve_sentence
from widgets.common.readable_axis import ReadableAxis
from widgets.long.render import colour_table, index_image
from widgets.maps.colormaps import DEFAULT_COLORMAP
from widgets.maps.pixmap_image import PixmapImageItem

MEAN = "mean of the heads"


class DecodeView(QWidget):
    hovered = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.glw = pg.GraphicsLayoutWidget()
        self.glw.setBackground("#1e1e1e")
        self.kv = self.glw.addPlot(title="KV cache, whole model", axisItems={"left": ReadableAxis("left", "bytes")})
        self.time = self.glw.addPlot(title="Step time, ms (measured)")
        self.glw.nextRow()
        self.strip = self.glw.addPlot(title="Each new token's attention over every earlier token", colspan=2)
        self.strip.invertY(True)
        self.strip.setLabel("bottom", "key position")
        self.strip.setLabel("left", "step")
        for p in (self.kv, self.time):
            p.showGrid(x=True, y=True, alpha=0.25)
            p.setMenuEnabled(False)
        self.strip.setMenuEnabled(False)
        self.strip_image = PixmapImageItem(reduce="max")  # past 32,767 keys a lone peak stays drawn
        self.strip.addItem(self.strip_image)
        self.head = QComboBox()
        self.head.setToolTip("Whose attention the strip shows: one head, or the mean of the layer's heads")
        self.head.currentIndexChanged.connect(lambda _i: self._draw_strip())
        self.head.setMinimumContentsLength(16)
        self.head.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.summary = QLabel("")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        top = QHBoxLayout()
        top.addWidget(QLabel("Strip shows"))
        top.addWidget(self.head)
        top.addStretch(1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addLayout(top)
        lay.addWidget(self.glw, 1)
        lay.addWidget(self.summary)
        self.glw.hide()  # no empty axes before a run: the summary says what to do
        self.summary.setText("Run decode: a real model generates tokens one at a time, each step timed, its cache "
                             "counted and its attention drawn; random weights time one decode step at growing contexts.")
        self.steps: list[Any] = []  # DecodeStepView, in order
        self.points: list[dict] = []  # a random-weight curve's points
        self.glw.scene().sigMouseMoved.connect(self._on_mouse_moved)

    def clear(self, n_heads: int = 0) -> None:
        self.steps, self.points = [], []
        for p in (self.kv, self.time):
            p.clear()
        self.strip_image.clear()
        self.strip.setVisible(n_heads > 0)  # a random-weight curve has no tokens to attend to
        self.head.setEnabled(n_heads > 0)
        self.summary.setText("")
        self.head.blockSignals(True)
        self.head.clear()
        self.head.addItems([MEAN] + [f"head {h}" for h in range(n_heads)])
        self.head.blockSignals(False)

    # -- a real model's run ------------------------------------------------------------------------
    def add_step(self, step: Any) -> None:
        self.glw.show()
        if not self.steps and self.head.count() <= 1:
            self.clear(step.row.shape[0])
        self.steps.append(step)
        self._draw_model()

    def _draw_model(self) -> None:
        s = self.steps
        if not s:
            return
        x = np.array([t.step for t in s], dtype=float)
        self.kv.setTitle("KV cache, all layers, bytes")
        self.kv.setLabel("bottom", "step (0: the prompt)")
        self.kv.clear()
        self.kv.plot(x, [t.kv_bytes for t in s], pen=pg.mkPen("#38bdf8", width=2), symbol="o", symbolSize=4)
        self.time.setTitle("Step time, ms (measured)")
        self.time.setLabel("bottom", "step (0: the prompt's prefill)")
        self.time.clear()
        self.time.plot(x, [t.step_ms for t in s], pen=pg.mkPen("#f59e0b", width=1.5), symbol="o", symbolSize=4)
        self._draw_strip()
        last = s[-1]
        later = [t.step_ms for t in s[1:]]
        typical = f"median step {np.median(later):.1f} ms" if later else "the prompt only"
        self.summary.setText(f"{len(s)} token{'s' * (len(s) > 1)} generated after the prompt's {s[0].n_cached:,}: "
                             f"after the last step the cache holds {last.n_cached:,} tokens, {format_bytes(last.kv_bytes)} "
                             f"({last.kv_bytes:,} B); {typical}; the prompt's prefill {s[0].step_ms:.0f} ms. Newest "
                             f"token: '{last.token}'.")

    def _draw_strip(self) -> None:
        s = self.steps
        if not s:
            return
        width = s[-1].n_cached
        head = self.head.currentIndex() - 1
        rows = np.zeros((len(s), width), dtype=np.float32)  # (steps, keys): a step's row over the keys before it
        for i, t in enumerate(s):
            row = t.row.mean(axis=0) if head < 0 else t.row[min(head, t.row.shape[0] - 1)]
            rows[i, : row.shape[0]] = row
        image = index_image(rows, -4.0)
        self.strip_image.setImage(image, autoLevels=False, levels=None, lut=colour_table(DEFAULT_COLORMAP))
        self.strip_image.setRect(QRectF(0, -0.5, width, len(s)))
        rows_px = max(1.0, self.strip.getViewBox().height())
        every = max(1, math.ceil(len(s) * 15 / rows_px))  # the tokens made, thinned so labels never overlap
        self.strip.getAxis("left").setTicks([[(t.step, f"{t.step} {t.token.strip()[:8]!r}") for t in s
                                               if t.step % every == 0], []])

    # -- a random-weight layer's curve ---------------------------------------------------------------
    def add_point(self, point: dict) -> None:
        self.glw.show()
        self.points.append(point)
        self._draw_curve(None)

    def show_curve(self, curve: dict, meta: dict) -> None:
        self.glw.show()
        self.points = list(curve["points"])
        self._draw_curve(curve, meta)

    def _draw_curve(self, curve: dict | None, meta: dict | None = None) -> None:
        pts = self.points
        ctx = np.array([p["context"] for p in pts], dtype=float)
        cached = np.array([p["cached"] for p in pts], dtype=float)
        med = np.array([p["median_ms"] for p in pts])
        self.strip.setVisible(False)
        self.kv.clear()
        self.kv.setTitle("KV cache read per step, B")  # short: two titles side by side fit a 1024 px window
        self.kv.setLabel("bottom", "tokens of context")
        self.kv.plot(ctx, [p["kv_bytes"] for p in pts], pen=pg.mkPen("#38bdf8", width=2), symbol="o", symbolSize=5)
        self.time.clear()
        self.time.setTitle("Step time, ms (p25–p75)")
        self.time.setLabel("bottom", "tokens of context")
        self.time.plot(ctx, med, pen=None, symbol="o", symbolSize=6, symbolBrush="#f59e0b")
        self.time.addItem(pg.ErrorBarItem(x=ctx, y=med, top=np.array([p["p75_ms"] for p in pts]) - med,
                                          bottom=med - np.array([p["p25_ms"] for p in pts]), beam=0.0, pen="#f59e0b"))
        if curve is None:
            self.summary.setText(f"timed {len(pts)} context lengths…")
            return
        slope, icpt = curve.get("slope_ms_per_1k_tokens"), curve.get("intercept_ms")
        if slope is not None and icpt is not None:  # the line over the tokens each step reads (a window caps them)
            self.time.plot(ctx, icpt + slope * cached / 1000, pen=pg.mkPen("#e5e7eb", width=1, style=Qt.PenStyle.DashLine))
        self.summary.setText(curve_sentence(curve, meta or {}, cached))

    def _on_mouse_moved(self, pos: Any) -> None:
        for plot, kind in ((self.time, "time"), (self.kv, "kv"), (self.strip, "strip")):
            if plot.sceneBoundingRect().contains(pos):
                p = plot.getViewBox().mapSceneToView(pos)
                text = self._describe(kind, p.x(), p.y())
                if text:
                    self.summary.setToolTip(text)
                    self.hovered.emit(text)
                return

    def _describe(self, kind: str, x: float, y: float) -> str:
        if kind == "strip" and self.steps:
            i = int(round(y))
            if 0 <= i < len(self.steps) and 0 <= x < self.steps[i].n_cached:
                t = self.steps[i]
                head = self.head.currentIndex() - 1
                row = t.row.mean(axis=0) if head < 0 else t.row[head]
                return f"step {t.step} ('{t.token}') → key #{int(x)}: {float(row[int(x)]):.5f}"
            return ""
        if self.steps:
            i = int(round(x))
            if 0 <= i < len(self.steps):
                t = self.steps[i]
                return f"step {t.step}: {t.n_cached:,} cached tokens, {format_bytes(t.kv_bytes)}, {t.step_ms:.2f} ms"
        return ""
