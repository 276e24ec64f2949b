"""The Plan tab's three charts, drawn from plain dicts (core/plan/report.py's JSON): a stacked bar of memory
per GPU against its capacity, memory against context with the capacity line, and the roofline of one
layer (the chosen GPU's roof and points, this machine's measured roof and timed points)."""

from __future__ import annotations

import html
import math
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

# Okabe-Ito, colour-blind safe: the parts of a GPU's memory
PARTS = (("weights", "weights", "#0072B2"), ("kv_cache", "KV cache", "#E69F00"),
         ("reserve", "allowance", "#999999"), ("free", "free", "#009E73"))
CAPACITY_PEN = pg.mkPen("#D55E00", width=2, style=Qt.PenStyle.DashLine)
MAX_BARS = 32
GIB = 2**30  # bars and lines in GiB, as the driver and the engines count memory


def _plot(title: str, x: str, y: str) -> pg.PlotWidget:
    w = pg.PlotWidget()
    w.setBackground("#1e1e1e")
    w.setMenuEnabled(False)
    w.showGrid(x=True, y=True, alpha=0.25)
    w.setTitle(title)
    w.setLabel("bottom", x)
    w.setLabel("left", y)
    for side in ("bottom", "left"):
        w.getAxis(side).enableAutoSIPrefix(False)
    w.setMinimumHeight(190)
    return w


def key_html(entries: list[tuple[str, str]]) -> str:
    # short names kept whole; a long one (a measured machine's) may wrap, so a narrow tab never overflows
    return " &nbsp; ".join(f'<span style="color:{c}">■&nbsp;'
                           f'{html.escape(n).replace(" ", "&nbsp;") if len(n) <= 24 else html.escape(n)}</span>'
                           for n, c in entries)


class Chart(QWidget):
    """A plot with its legend under it (inside, it covered the bars)."""

    def __init__(self, title: str, x: str, y: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.plot = _plot(title, x, y)
        self.key = QLabel()
        self.key.setWordWrap(True)
        self.key.setTextFormat(Qt.TextFormat.RichText)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.plot, 1)
        lay.addWidget(self.key)


class StackedBars(Chart):
    def stack(self, labels: list[str], columns: dict[str, list[float]], capacity: float, x_label: str) -> None:
        """columns: part -> bytes per bar (PARTS' keys); drawn in GiB against the capacity line."""
        self.plot.clear()
        xs = list(range(len(labels)))
        bottom = [0.0] * len(labels)
        for part, name, colour in PARTS:
            heights = [b / GIB for b in columns[part]]
            self.plot.addItem(pg.BarGraphItem(x=xs, height=heights, y0=bottom, width=0.7, brush=colour,
                                              pen=pg.mkPen("#1e1e1e"), name=name))
            bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
        self.plot.addItem(pg.InfiniteLine(capacity / GIB, angle=0, pen=CAPACITY_PEN))
        self.plot.setLabel("bottom", x_label)
        every = max(1, math.ceil(len(xs) / 10))  # at most ten labels: 16 GPUs' "10111213" ran together
        self.plot.getAxis("bottom").setTicks([[(x, t) for x, t in zip(xs, labels, strict=True) if x % every == 0], []])
        self.plot.getPlotItem().enableAutoRange()
        self.key.setText(key_html([(n, c) for _p, n, c in PARTS] + [("capacity", "#D55E00")]))


class MemoryBars(StackedBars):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Memory per GPU", "GPU", "GiB", parent)

    def show_plan(self, j: dict[str, Any]) -> None:
        """One stacked bar per GPU (per pipeline stage when there are more than 32 GPUs)."""
        per, stages, tp = j["per_gpu"], j["stage_kv_cache"], j["inputs"]["tp"]
        bars = [kv for kv in stages for _ in range(tp)] if len(stages) * tp <= MAX_BARS else stages
        room = per["capacity"] - per["weights"] - per["reserve"]
        columns = {"weights": [per["weights"]] * len(bars), "kv_cache": bars, "reserve": [per["reserve"]] * len(bars),
                   "free": [max(0, room - kv) for kv in bars]}
        label = "GPU" if len(bars) == len(stages) * tp else "pipeline stage (each its TP group's GPUs)"
        self.stack([str(i) for i in range(len(bars))], columns, per["capacity"], label)


class TpBars(StackedBars):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Memory vs TP degree", "TP degree", "GiB", parent)

    def show_plan(self, j: dict[str, Any]) -> None:
        """Every TP degree the heads allow, the pipeline stages kept: where the KV cache stops shrinking."""
        sweep, cap = j["tp_sweep"], j["per_gpu"]["capacity"]
        columns = {k: [r[k] for r in sweep] for k in ("weights", "kv_cache", "reserve")}
        columns["free"] = [max(0, cap - r["weights"] - r["kv_cache"] - r["reserve"]) for r in sweep]
        now = j["inputs"]["tp"]
        self.stack([f"[{r['tp']}]" if r["tp"] == now else str(r["tp"]) for r in sweep], columns, cap,
                   "TP degree ([ ] the plan's)")


class ContextCurve(Chart):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Memory vs context", "context (tokens, log)", "GiB", parent)
        self.plot.setLogMode(x=True, y=False)

    def show_plan(self, j: dict[str, Any]) -> None:
        self.plot.clear()
        xs = [c for c, _m in j["memory_curve"]]
        ys = [m / GIB for _c, m in j["memory_curve"]]
        self.plot.plot(xs, ys, pen=pg.mkPen("#56B4E9", width=2), symbol="o", symbolSize=5, symbolBrush="#56B4E9")
        self.plot.addItem(pg.InfiniteLine(j["per_gpu"]["capacity"] / GIB, angle=0, pen=CAPACITY_PEN))
        self.plot.addItem(pg.InfiniteLine(math.log10(j["inputs"]["context"]), angle=90,
                                          pen=pg.mkPen("#bbbbbb", style=Qt.PenStyle.DashLine)))
        entries = [("weights + KV + allowance", "#56B4E9"), ("capacity", "#D55E00"), ("the plan's context", "#bbbbbb")]
        if j["max_context"]:
            self.plot.plot([j["max_context"]], [(j["per_gpu"]["capacity"]) / GIB], pen=None, symbol="t",
                           symbolSize=12, symbolBrush="#F0E442")
            entries.append((f"longest context that fits: {j['max_context']:,}", "#F0E442"))
        self.plot.getPlotItem().enableAutoRange()
        self.key.setText(key_html(entries))


def decade_ticks(lo: float, hi: float) -> list[list[tuple[float, str]]]:
    """A log axis labelled at its powers of ten only (its minor labels pile up): 0.01, 1, 100, 10^4…"""
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    step = max(1, math.ceil((b - a) / 5))  # at most six labels: a narrow chart's ran together
    label = lambda k: f"{10.0**k:g}" if -3 <= k <= 4 else f"1e{k}"  # noqa: E731
    return [[(k, label(k)) for k in range(a, b + 1, step)], []]


class Roofline(Chart):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Roofline of one layer", "FLOP per byte moved (log)",
                         "TFLOP/s (log)", parent)
        self.plot.setLogMode(x=True, y=True)

    def show_roofs(self, roofs: list[dict[str, Any]]) -> None:
        """roofs: {name, peak_flops, bandwidth, colour, dashed, points: [{label, intensity, flops_s, symbol}]};
        a roof whose peak_flops is None draws its points alone."""
        self.plot.clear()
        intensities = [p["intensity"] for r in roofs for p in r["points"]] + [r["peak_flops"] / r["bandwidth"]
                                                                             for r in roofs if r["peak_flops"]]
        intensities = [x for x in intensities if 1e-6 <= x <= 1e9] or [1.0]  # a damaged roof draws no wild range
        lo = 10 ** math.floor(math.log10(max(1e-3, min(intensities)) / 10))
        hi = 10 ** math.ceil(math.log10(max(intensities) * 10))
        xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
        entries = []
        for r in roofs:
            style = Qt.PenStyle.DashLine if r.get("dashed") else Qt.PenStyle.SolidLine
            if r["peak_flops"]:
                ys = [min(r["peak_flops"], x * r["bandwidth"]) / 1e12 for x in xs]
                self.plot.plot(xs, ys, pen=pg.mkPen(r["colour"], width=2, style=style))
            entries.append((r["name"], r["colour"]))
            for p in r["points"]:
                self.plot.plot([p["intensity"]], [p["flops_s"] / 1e12], pen=None, symbol=p["symbol"], symbolSize=11,
                               symbolBrush=r["colour"], symbolPen=pg.mkPen("w"))
                ax, ay = p.get("anchor", (0, 1))
                where = (math.log10(p["intensity"]) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
                ax = 0 if where < 0.35 else 1 if where > 0.65 else ax  # a label near an edge reads inwards
                text = pg.TextItem(p["label"], color=r["colour"], anchor=(ax, ay))
                text.setPos(math.log10(p["intensity"]), math.log10(p["flops_s"] / 1e12))
                self.plot.addItem(text)
        ys = [min(r["peak_flops"], x * r["bandwidth"]) for r in roofs if r["peak_flops"] for x in (lo, hi)]
        ys += [p["flops_s"] for r in roofs for p in r["points"]]
        self.plot.getAxis("bottom").setTicks(decade_ticks(lo, hi))
        self.plot.getAxis("left").setTicks(decade_ticks(max(1e-3, min(ys)) / 1e12, max(ys) / 1e12))
        self.plot.getPlotItem().enableAutoRange()
        self.key.setText(key_html(entries))
