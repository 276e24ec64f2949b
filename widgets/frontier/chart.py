"""The KV frontier as one chart: x = KV-cache bytes per token (log), y = what the change costs (loss change,
or 1 - cosine for an encoder), one line per method with its own colour and marker (Okabe-Ito, colour-blind
safe), the unchanged model as a star. Hover names the nearest point and every figure; a click selects it.
Reads plain dicts (FrontierPoint.to_json); no torch."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from widgets.common.cached_axis import CachedAxis

# method -> (colour, marker, name): Okabe-Ito's palette, one marker each so print and colour-blind eyes tell them apart
STYLE = {
    "heads": ("#E69F00", "o", "fewer KV heads (pooled)", "●"),
    "latent_pca": ("#0072B2", "s", "latent KV (PCA)", "■"),
    "latent_svd": ("#56B4E9", "d", "latent KV (SVD)", "◆"),
    "window": ("#D55E00", "t", "sliding window", "▼"),
    "window_sinks": ("#009E73", "t1", "window + 4 sinks", "▲"),
    "quant": ("#CC79A7", "p", "quantised KV", "⬟"),
    # the eviction presses (compress protocol): dashed lines, markers of their own, colours of Paul Tol's muted
    # palette (colour-blind safe, and none of Okabe-Ito's above)
    "streaming": ("#CC6677", "x", "StreamingLLM", "✕"),
    "snapkv": ("#88CCEE", "h", "SnapKV", "⬢"),
    "h2o": ("#DDCC77", "t2", "H2O (observed)", "▶"),
    "tova": ("#AA4499", "t3", "TOVA", "◀"),
    "knorm": ("#999933", "+", "Knorm", "✚"),
    "expected": ("#44AA99", "s", "Expected Attention", "■"),
}
DASHED = {"streaming", "snapkv", "h2o", "tova", "knorm", "expected"}
X_LABELS = {"kv_bytes_per_token": "KV cache bytes per token, whole model (16-bit K and V unless a format says; log)",
            "kv_bytes": "KV cache of one sequence, whole model (bf16 K and V unless a format says; log)"}
BASELINE_COLOUR = "#F0E442"
HOVER_PX = 14  # a point within this many pixels of the pointer is the one hovered


def describe_point(p: dict[str, Any], kind: str) -> str:
    """Every figure of one point, in one line."""
    if p.get("protocol") == "compress":
        return " · ".join([p["label"], f"{byte_label(p['kv_bytes'])} a sequence ({p['kv_fraction']:.3f} of the cache)",
                           f"loss {p['loss']:.4f} ({p['loss_change']:+.4f} nats)"])
    bits = [p["label"], f"{p['kv_bytes_per_token']:,.0f} B/token ({p['kv_fraction']:.3f} of the model's own)"]
    if kind == "causal" and p.get("loss") is not None:
        bits.append(f"loss {p['loss']:.4f} ({p['loss_change']:+.4f}), perplexity {math.exp(p['loss']):.2f}")
    if p.get("embedding_cosine") is not None:
        bits.append(f"embedding cosine {p['embedding_cosine']:.5f}")
    bits.append(f"attention JS {p['js_mean']:.4f} bits, layer-output error {p['output_rel_error']:.3f}")
    return " · ".join(bits)


def byte_label(n: float) -> str:
    for unit, size in (("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            v = n / size
            return f"{v:.0f} {unit}" if v >= 10 or v == int(v) else f"{v:.1f} {unit}"
    return f"{n:.0f} B"


def byte_ticks(values: list[float]) -> list[list[tuple[float, str]]]:
    """Log-axis ticks at the powers of two across the values (256 B, 512 B, 1 KiB, …: evenly spaced on a log
    axis, and the sizes caches come in), labelled in bytes; the axis's own labels (10^2.7) crowd at every
    minor tick. [major, minor] as AxisItem.setTicks takes them."""
    if not values:
        return [[], []]
    lo, hi = math.floor(math.log2(min(values) / 1.2)), math.ceil(math.log2(max(values) * 1.2))
    return [[(math.log10(2.0**k), byte_label(2.0**k)) for k in range(lo, hi + 1)], []]


class FrontierChart(QWidget):
    point_clicked = Signal(object)  # the point's dict
    hovered = Signal(str)  # the hovered point's figures, or '' off the points

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.plot = pg.PlotWidget(axisItems={"bottom": CachedAxis("bottom"), "left": CachedAxis("left")})
        self.plot.setBackground("#1e1e1e")
        self.plot.setLogMode(x=True, y=False)
        self.plot.showGrid(x=True, y=True, alpha=0.25)
        self.plot.setMenuEnabled(False)
        self.plot.setLabel("bottom", "KV cache bytes per token, whole model (16-bit K and V unless a format says; log)")
        self.key = QLabel()  # the legend, under the chart: inside it, it covered points
        self.key.setWordWrap(True)
        self.key.setTextFormat(Qt.TextFormat.RichText)
        self.empty = pg.TextItem("Run the frontier to draw it.", color="#888", anchor=(0.5, 0.5))
        self.budget_line = pg.InfiniteLine(angle=90, movable=False,
                                           pen=pg.mkPen("#bbbbbb", width=1, style=Qt.PenStyle.DashLine))
        for side in ("bottom", "left"):
            self.plot.getAxis(side).enableAutoSIPrefix(False)  # no "(x0.001)": the values are read as they are
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot)
        self.points: list[dict[str, Any]] = []
        self.kind = "causal"
        self.x_key = "kv_bytes_per_token"  # the window protocol's x; the compress protocol's is "kv_bytes"
        self.selected: dict[str, Any] | None = None
        self._marker = pg.PlotDataItem([], [], pen=None, symbol="o", symbolSize=18, symbolBrush=None,
                                       symbolPen=pg.mkPen("w", width=2))  # the selected point's ring
        self._marker.setZValue(10)
        self.plot.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.plot.scene().sigMouseClicked.connect(self._on_mouse_clicked)

    def set_points(self, points: list[dict[str, Any]], kind: str, title: str = "",
                   x_key: str = "kv_bytes_per_token") -> None:
        """points: the unchanged model's (method 'baseline') and every method's, as FrontierPoint.to_json (x_key
        'kv_bytes_per_token') or CompressPoint.to_json ('kv_bytes'): one protocol's points, never both."""
        self.x_key = x_key
        self.plot.setLabel("bottom", X_LABELS[x_key])
        self.points = [p for p in points if p.get("cost") is not None and (p.get(x_key) or 0) > 0]
        self.kind = kind
        self.selected = None
        self.plot.clear()
        self.plot.setTitle(title or None)
        if not self.points:
            self.plot.setLabel("left", "")  # no points: no quality axis of a model that is no longer shown
            self.plot.addItem(self.empty)
            self.empty.setPos(0.5, 0.5)
            self.plot.getAxis("bottom").setTicks([[], []])
            self.plot.getPlotItem().setRange(xRange=(0, 1), yRange=(0, 1))
            self.key.setText("")
            return
        shown = []
        self.plot.setLabel("left", "loss change (nats / token)" if kind == "causal" else "1 - cosine of the embedding")
        base = [p for p in self.points if p["method"] == "baseline"]
        for method, (colour, symbol, name, glyph) in STYLE.items():
            line = [p for p in self.points if p["method"] == method]
            if not line:
                continue
            shown.append(f'<span style="color:{colour}">{glyph}&nbsp;{name.replace(" ", "&nbsp;")}</span>')
            line = sorted(base + line, key=lambda p: p[self.x_key])  # from the unchanged model leftwards
            xs = [p[self.x_key] for p in line]
            ys = [p["cost"] for p in line]
            style = Qt.PenStyle.DashLine if method in DASHED else Qt.PenStyle.SolidLine
            self.plot.plot(xs, ys, pen=pg.mkPen(colour, width=2, style=style), symbol=symbol, symbolSize=9,
                           symbolBrush=colour, symbolPen=pg.mkPen("#1e1e1e"), name=name)
        if base:
            b = base[0]
            self.plot.plot([b[self.x_key]], [b["cost"]], pen=None, symbol="star", symbolSize=18,
                           symbolBrush=BASELINE_COLOUR, symbolPen=pg.mkPen("#1e1e1e"), name="unchanged model")
            shown.append(f'<span style="color:{BASELINE_COLOUR}">★&nbsp;unchanged&nbsp;model</span>')
        shown.append('<span style="color:#bbbbbb">┆&nbsp;the&nbsp;KV&nbsp;budget</span>')  # an entry never splits
        self.key.setText(" &nbsp; ".join(shown))
        self.plot.addItem(self.budget_line)
        self.plot.addItem(self._marker, ignoreBounds=True)  # selecting a point never re-ranges the axes
        self._marker.setData([], [])
        self.plot.getAxis("bottom").setTicks(byte_ticks([p[self.x_key] for p in self.points]))
        self.plot.getPlotItem().enableAutoRange()

    def zoom_cheap(self, on: bool) -> None:
        """y from the cheapest point to a tenth of the costliest (at most 1): the points that lose little, which
        a pooled point at +6 nats squeezes into the bottom of the chart; off: every point in view."""
        costs = [p["cost"] for p in self.points]
        vb = self.plot.getPlotItem().getViewBox()
        if not on or not costs:
            vb.enableAutoRange(axis="y")
            return
        top = min(1.0, max(costs) / 10) if max(costs) > 0 else 1.0
        top = max(top, sorted(costs)[len(costs) // 2] * 1.1)  # never fewer than half the points in view
        vb.setYRange(min(0.0, min(costs)), top, padding=0.05)

    def set_budget(self, kv_bytes: float | None) -> None:
        """The dashed line at the budget's bytes (per token, or a sequence's: the x axis's) (None: no line)."""
        self.budget_line.setVisible(kv_bytes is not None and bool(self.points))
        if kv_bytes:
            self.budget_line.setValue(math.log10(kv_bytes))  # the line sits in the log axis's own coordinates

    @contextmanager
    def vector_markers(self) -> Iterator[None]:
        """Markers drawn as paths while exporting: cached as pixmaps, an SVG holds them as bitmaps."""
        items = [item.scatter for item in self.plot.getPlotItem().listDataItems()]
        before = [item.opts["useCache"] for item in items]
        for item in items:
            item.opts["useCache"] = False
        try:
            yield
        finally:
            for item, was in zip(items, before, strict=True):
                item.opts["useCache"] = was

    def points_at(self, scene_pos: QPointF) -> list[dict[str, Any]]:
        """The points within HOVER_PX pixels of scene_pos, nearest first (several where lines meet)."""
        vb = self.plot.getPlotItem().getViewBox()
        near = []
        for p in self.points:
            at = vb.mapViewToScene(QPointF(math.log10(p[self.x_key]), p["cost"]))
            d = math.hypot(at.x() - scene_pos.x(), at.y() - scene_pos.y())
            if d <= HOVER_PX:
                near.append((d, p))
        return [p for _d, p in sorted(near, key=lambda dp: dp[0])]

    def point_at(self, scene_pos: QPointF) -> dict[str, Any] | None:
        """The point nearest scene_pos within HOVER_PX pixels, or None."""
        near = self.points_at(scene_pos)
        return near[0] if near else None

    @contextmanager
    def exported_legend(self) -> Iterator[None]:
        """The legend drawn inside the plot while it is exported (on screen it sits under the chart)."""
        item = self.plot.getPlotItem()
        named = [data for data in item.listDataItems() if data.name()]
        columns = 1 if len(named) <= 7 else 3  # the compress protocol's 13 lines in three short columns
        legend = pg.LegendItem(offset=(-10, 10), labelTextColor="#dddddd", brush=pg.mkBrush(30, 30, 30, 220),
                               colCount=columns)
        legend.setParentItem(item.getViewBox())
        for data in named:
            legend.addItem(data, data.name())
        try:
            yield
        finally:
            legend.scene().removeItem(legend) if legend.scene() is not None else None

    def select(self, point: dict[str, Any] | None) -> None:
        self.selected = point
        if point is None:
            self._marker.setData([], [])
        else:
            self._marker.setData([point[self.x_key]], [point["cost"]])  # the plot's log mode maps x

    def _on_mouse_moved(self, pos: QPointF) -> None:
        near = self.points_at(pos)
        if len(near) > 1:  # where lines meet: every point here named, a click steps through them
            others = "; ".join(p["label"] for p in near[1:])
            self.hovered.emit(f"{describe_point(near[0], self.kind)}\n{len(near)} points here (click again for the "
                              f"next; the wheel zooms): also {others}")
        else:
            self.hovered.emit(describe_point(near[0], self.kind) if near else "")

    def _on_mouse_clicked(self, event: Any) -> None:
        near = self.points_at(event.scenePos())
        if not near:
            return
        p = near[0]
        if self.selected in near:  # a second click on overlapping points selects the next one
            p = near[(near.index(self.selected) + 1) % len(near)]
        self.select(p)
        self.point_clicked.emit(p)
