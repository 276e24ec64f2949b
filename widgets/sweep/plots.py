"""The sweep's plots: parameters, FLOPs, KV cache, measured time with its spread, TFLOP/s."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Signal

from core.study.sweep import AXIS_LABELS, SweepResult, joined, sweep_x, timing_series
from widgets.common.plot_ticks import spaced_values
from widgets.common.readable_axis import ReadableAxis
from widgets.common.wrapping_title import install as install_title

PLOTS = [
    ("params", "Parameters / layer"),
    ("flops", "FLOPs / layer forward"),
    ("kv", "KV cache"),
    ("time", "Measured time, ms (p25–p75 bars)"),
    ("tflops", "Achieved TFLOP/s"),
]
KINDS = {"params": "count", "flops": "count", "kv": "bytes", "time": "ms", "tflops": "rate"}
UNITS = {"params": "parameters", "flops": "FLOPs", "kv": "bytes", "time": "ms", "tflops": "TFLOP/s"}
MIN_PLOT_W, MIN_PLOT_H = 250, 200  # below this a plot's numbers and titles no longer fit: the pane scrolls
PENS = {"a": "#f59e0b", "b": "#38bdf8", "c": "#34d399", "d": "#f472b6", "e": "#a78bfa"}


def window_series(rows: list) -> list[tuple[str, list[float | None], str]]:
    """A sweep of a model with local layers: its KV cache split into local and global layers, and the same
    model with every layer global (every token cached by every layer); none for a model without a window."""
    kinds = [r.report.get("layer_kinds") or [] for r in rows]
    if not any(k["window"] is not None for ks in kinds for k in ks):
        return []
    local = [sum(k["kv_bytes_total"] for k in ks if k["window"] is not None) for ks in kinds]
    glob = [sum(k["kv_bytes_total"] for k in ks if k["window"] is None) for ks in kinds]
    every = [r.report["kv_cache"]["bytes_per_token"] * r.report["config"]["seq_len"] * r.report["config"]["batch_size"]
             for r in rows]
    return [("local layers", local, "b"), ("global layers", glob, "c"), ("every layer global", every, "e")]


def wants_log(values: list[float]) -> bool:
    pos = [v for v in values if v > 0]
    return len(pos) >= 2 and max(pos) / min(pos) > 16


def pin_labels(marks: list[tuple[float, str]]) -> list[tuple[float, str]]:
    """One label per position ('pin A', or 'pins A, D' where pins share a value), in value order; the
    plots stagger their heights so neighbouring labels do not overprint."""
    by_x: dict[int, list[str]] = {}
    for x, name in marks:
        by_x.setdefault(x, []).append(name)
    return [(x, ("pin " if len(names) == 1 else "pins ") + ", ".join(names)) for x, names in sorted(by_x.items())]


class SweepPlots(pg.GraphicsLayoutWidget):
    hovered = Signal(str)

    def __init__(self) -> None:
        super().__init__()
        self.setBackground("#1e1e1e")
        self.plots: dict[str, pg.PlotItem] = {}
        for i, (key, title) in enumerate(PLOTS):
            if i in (2, 4):
                self.nextRow()
            p = self.addPlot(axisItems={"left": ReadableAxis("left", KINDS[key])})
            install_title(p, title)
            p.setLabel("left", UNITS[key])
            p.showGrid(x=True, y=True, alpha=0.25)
            p.setMenuEnabled(False)  # the legend is in the title: it never covers a curve
            self.plots[key] = p
        # Two columns of equal share, whatever their titles hold; three rows of plots that keep their numbers.
        for column in (0, 1):
            self.ci.layout.setColumnStretchFactor(column, 1)
        self.setMinimumSize(2 * MIN_PLOT_W, 3 * MIN_PLOT_H)
        self.titles = dict(PLOTS)
        self.result: SweepResult | None = None
        self.xs: list[float] = []  # where each swept value sits on the x axis
        self.x_text: dict[float, str] = {}  # its label there ("4,096", or "q8_0" for a KV format)
        self._row_xs: list[float] = []
        self._untimed: set[int] = set()  # plots left empty by a counts-only sweep
        self._logx = False
        for p in self.plots.values():
            p.getViewBox().sigResized.connect(self._update_x_ticks)
        self.scene().sigMouseMoved.connect(self._on_scene_mouse_moved)

    def clear_all(self, note: str = "") -> None:
        """Empty plots with no stale ticks or ranges (a sweep is starting, or none finished)."""
        self.result, self.xs = None, []
        self._untimed = set()
        for key, p in self.plots.items():
            p.clear()
            p.enableAutoRange()  # a counts-only sweep fixed the empty plots' ranges
            p.titleLabel.setText(f"{self.titles[key]}<br><span style='font-size:8pt'>{note}</span>" if note
                                 else self.titles[key])
            p.setLogMode(x=False, y=False)
            for side in ("bottom", "left"):
                p.getAxis(side).setTicks(None)
            p.setLabel("bottom", "")

    def _not_timed(self, p: pg.PlotItem, xs: list[float], logx: bool) -> None:
        """A counts-only sweep: say so in the middle of an empty plot, with no ticks to misread."""
        for side in ("left", "bottom"):
            p.getAxis(side).setTicks([[], []])
        pos = [float(np.log10(x)) if logx else x for x in xs if x > 0 or not logx]
        lo, hi = (min(pos), max(pos)) if pos else (0.0, 1.0)
        p.setXRange(lo, hi if hi > lo else lo + 1, padding=0.05)
        p.setYRange(0, 1)
        text = pg.TextItem("not timed: counts only", color="#9ca3af", anchor=(0.5, 0.5))
        p.addItem(text)
        text.setPos((lo + hi) / 2, 0.5)
        self._untimed.add(id(p))

    def _update_x_ticks(self, *_: object) -> None:
        """The swept values, thinned to the plot's width now (it changes as the window resizes)."""
        if not self.xs:
            return
        for p in self.plots.values():
            if id(p) in self._untimed:
                continue  # an empty, untimed plot keeps no ticks
            shown = spaced_values(self.xs, max(p.getViewBox().width(), 120.0), self._logx, label=self.x_text.get)
            p.getAxis("bottom").setTicks([[(np.log10(v) if self._logx else v, self.x_text[v]) for v in shown], []])

    def show_result(self, result: SweepResult, knob: str, marks: list[tuple[int | str, str]],
                    plan: tuple[str, list[float | None], float] | None = None) -> None:
        """plan: (name, per-GPU memory of each ok row, a GPU's capacity) when the Plan tab plans the swept model."""
        rows = result.ok_rows()
        self.clear_all()
        self.result = result
        xs = [sweep_x(knob, r.value) for r in rows]
        self.xs = list(dict.fromkeys(xs))
        self._row_xs = xs  # one a row, for the hover
        self.x_text = {}
        for x, r in zip(xs, rows, strict=True):  # two KV formats of one size share a place: "bfloat16/float16"
            text = f"{r.value:,}" if isinstance(r.value, int) else str(r.value)
            self.x_text[x] = f"{self.x_text[x]}/{text}" if x in self.x_text else text
        marks = [(sweep_x(knob, v), name) for v, name in marks]
        for p in self.plots.values():
            p.setLabel("bottom", AXIS_LABELS.get(knob, knob))
            p.getAxis("bottom").resizeEvent()  # pyqtgraph places an axis title only when the axis resizes
        if not rows:
            return
        logx = self._logx = wants_log(xs)

        def line(key: str, ys: list[float | None], name: str, pen: str) -> bool:
            pts = [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None and (y > 0 or not logy[key])]
            if pts:
                trend = joined(knob)  # a set of layer kinds is not a trend: points only
                self.plots[key].plot([p[0] for p in pts], [p[1] for p in pts],
                                     pen=pg.mkPen(pen, width=2) if trend else None, symbol="o",
                                     symbolSize=6 if trend else 10, symbolBrush=pen, name=name)
            return bool(pts)

        get = lambda sec, k: [r.report[sec][k] for r in rows]  # noqa: E731
        timing = [r.report["timing"] for r in rows]
        series = {
            # a layer without W_k, W_v (keys and values rebuilt from a latent): no point on that line
            "params": [("total", get("params", "total"), "a"),
                       ("W_k + W_v", [p["k"] + p["v"] if "k" in p else None for p in (r.report["params"] for r in rows)],
                        "b")],
            "flops": [("total", get("flops", "total"), "a"), ("core", get("flops", "attention"), "b"), ("projections", get("flops", "projections"), "c")],
            "kv": [("KV cache", get("kv_cache", "bytes_total"), "a"), ("if MHA", get("kv_cache", "bytes_total_mha"), "d")]
            + window_series(rows) + ([(plan[0], plan[1], "e")] if plan else []),
            # The layer's own line is the prefill or the decode line itself: drawn once, named for both.
            "time": [("prefill (the layer timed)" if rows[0].report["config"]["phase"] == "prefill" else "prefill",
                      [t["prefill_ms"] if t else None for t in timing], "b"),
                     ("decode" if rows[0].report["config"]["phase"] == "prefill" else "decode (the layer timed)",
                      [t["decode_ms"] if t else None for t in timing], "c")] + timing_series(timing),
            "tflops": [("layer", [t["tflops"] if t else None for t in timing], "a"),
                       ("core", [t["core_tflops"] if t else None for t in timing], "b")],
        }
        logy = {k: wants_log([y for _, ys, _ in v for y in ys if y is not None]) for k, v in series.items()}
        for key, lines in series.items():
            p = self.plots[key]
            p.setLogMode(x=logx, y=logy[key])
            drawn = [(name, pen) for name, ys, pen in lines if line(key, ys, name, PENS[pen])]
            legend = "  ".join(f"<span style='color:{PENS[pen]}'>━ {name}</span>" for name, pen in drawn)
            p.titleLabel.setText(f"{self.titles[key]}<br><span style='font-size:8pt'>{legend}</span>"
                                 if len(drawn) > 1 else self.titles[key])
            finite = [y for _, ys, _ in lines for y in ys if y is not None]
            if finite and not logy[key] and max(finite) == min(finite):
                p.setYRange(0, max(finite) * 1.5 or 1.0)  # a flat line reads as flat, not as noise
            else:
                p.enableAutoRange(axis="y")
            if key in ("time", "tflops") and not drawn:
                self._not_timed(p, xs, logx)
        if plan is not None:  # the capacity the plan line must stay under
            cap = float(np.log10(plan[2])) if logy["kv"] else plan[2]
            self.plots["kv"].addItem(pg.InfiniteLine(pos=cap, angle=0, pen=pg.mkPen(PENS["e"], style=pg.QtCore.Qt.PenStyle.DashLine)))
        self._update_x_ticks()  # the swept values themselves, thinned so that no two labels touch
        timed = [(x, t) for x, t in zip(xs, timing, strict=True) if t]
        if timed:
            tx = np.array([x for x, _ in timed])
            med = np.array([t["median_ms"] for _, t in timed])
            lo = med - np.array([t["p25_ms"] for _, t in timed])
            hi = np.array([t["p75_ms"] for _, t in timed]) - med
            if logx:
                tx = np.log10(tx)
            if logy["time"]:
                lo, hi = np.log10(med) - np.log10(np.maximum(med - lo, 1e-9)), np.log10(med + hi) - np.log10(med)
                med = np.log10(med)
            self.plots["time"].addItem(pg.ErrorBarItem(x=tx, y=med, top=hi, bottom=lo, beam=0.0, pen="#f59e0b"))
        for i, (x, label) in enumerate(pin_labels(marks)):  # pinned configurations on this sweep's line
            line_x = np.log10(x) if logx and x > 0 else x
            for p in self.plots.values():
                p.addItem(pg.InfiniteLine(pos=line_x, angle=90, pen=pg.mkPen("#e5e7eb", style=pg.QtCore.Qt.PenStyle.DashLine),
                                          label=label, labelOpts={"position": 0.92 - 0.14 * (i % 4),
                                                                  "color": "#e5e7eb", "fill": (30, 30, 30, 200)}))

    def describe(self, index: int) -> str:
        assert self.result is not None
        row = self.result.ok_rows()[index]
        rep = row.report
        t = rep["timing"]
        text = (f"{row.value}: params {rep['params']['total']:,} · FLOPs {rep['flops']['total']:,} · "
                f"KV cache {rep['kv_cache']['bytes_total']:,} B")
        if t:
            text += f" · layer {t['median_ms']:.4g} ms (p25 {t['p25_ms']:.4g}, p75 {t['p75_ms']:.4g}) · {t['tflops']:.3g} TFLOP/s"
        return text

    def _on_scene_mouse_moved(self, pos: QPointF) -> None:
        if not self.xs:
            return
        for p in self.plots.values():
            if p.sceneBoundingRect().contains(pos):
                x = p.vb.mapSceneToView(pos).x()
                logx = p.ctrl.logXCheck.isChecked() if hasattr(p, "ctrl") else False
                target = 10 ** x if logx else x
                i = int(np.argmin([abs(v - target) for v in self._row_xs]))
                self.hovered.emit(self.describe(i))
                return
