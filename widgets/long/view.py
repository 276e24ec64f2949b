"""The long map on screen: one head's overview (or every head as a mosaic), a zoom recomputed at full
resolution laid over it, and a mini-map of where the zoom sits. Plain arrays in (sandbox/jobs/long_types.py's
LongView), signals out: the view asks for a zoom's region, the window computes it on the worker.

Coordinates are token positions: x a key, y a query (downwards), so a zoom's view range is the region to
recompute. The overview's image covers 0..T both ways at block-token cells; a zoom's image its own rectangle."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QGraphicsRectItem,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from widgets.common.elided_combo import ElidedCombo
from widgets.long.render import (
    DEFAULT_SCALE,
    SCALES,
    Tiles,
    colour_table,
    index_image,
    mosaic_index,
)
from widgets.long.tile_labels import TileLabels
from widgets.maps.colormaps import COLORMAPS, DEFAULT_COLORMAP
from widgets.maps.heatmap_view import gradient_pixmap
from widgets.maps.pixmap_image import PixmapImageItem

ZOOM_SETTLE_MS = 250


def cut(text: str, n: int) -> str:
    """A label at most n characters, an ellipsis saying when it was cut."""
    return text if len(text) <= n else text[: n - 1] + "…"  # a zoom or pan is recomputed once the view has rested this long
ALL_HEADS = "every head (mosaic)"


class LongMapView(QWidget):
    region_wanted = Signal(int, int, int, int)  # query rows r0, r1 and key columns c0, c1 to recompute
    head_changed = Signal(int)  # -1: the mosaic
    hovered = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.head = ElidedCombo(chars=14)
        self.head.setToolTip("One head's map (zoom with the wheel, drag to pan; a zoom is recomputed at full "
                             "resolution, down to single tokens) or every head small (click a tile to open it)")
        self.head.currentIndexChanged.connect(self._on_head_changed)
        self.scale = ElidedCombo(chars=10)
        self.scale.addItems(list(SCALES))
        self.scale.setCurrentText(DEFAULT_SCALE)
        self.scale.setToolTip("Log scales show a band of 1e-3 a key beside a sink near 1; grey cells are never read")
        self.colormap = ElidedCombo(chars=8)
        self.colormap.addItems(list(COLORMAPS))
        self.colormap.setCurrentText(DEFAULT_COLORMAP)
        for combo in (self.scale, self.colormap):
            combo.currentTextChanged.connect(self._redraw)
        self.glw = pg.GraphicsLayoutWidget()
        self.glw.setBackground("#1e1e1e")
        self.plot = self.glw.addPlot()
        self.plot.layout.setContentsMargins(4, 4, 24, 4)  # the last key position's label ("1000") is not cut
        self.plot.invertY(True)
        self.plot.setAspectLocked(True)
        self.plot.hideButtons()
        self.plot.setMenuEnabled(False)
        self.plot.setLabel("bottom", "key position")
        self.plot.setLabel("left", "query position")
        for side in ("bottom", "left"):
            self.plot.getAxis(side).enableAutoSIPrefix(False)  # positions are whole tokens: no "(x0.001)"
        # Before the first overview: no axes of positions that do not exist yet (they read -400 .. 400), a line instead.
        self.empty = pg.TextItem("Compute an overview (Ctrl+Enter) to draw the map here.", color="#9ca3af",
                                 anchor=(0.5, 0.5))
        self.plot.addItem(self.empty)
        self._show_empty(True)
        self.image = PixmapImageItem()
        self.detail = PixmapImageItem()  # a zoom's recomputed region, over the overview
        self.detail.setZValue(5)
        self.plot.addItem(self.image)
        self.plot.addItem(self.detail)
        self.mini = pg.GraphicsLayoutWidget()
        self.mini.setBackground("#1e1e1e")
        self.mini.setFixedSize(100, 100)  # small: in a 700 px window every pixel under the map is one the map lacks
        self.mini.setToolTip("Where the view is: the whole map; the white frame is the part shown. Click to go there. "
                             "Grey: keys no "
                             "query of the cell may read (the future, or beyond a window); max pooling keeps a "
                             "one-token column (a sink) visible at any size.")
        self.mini_plot = self.mini.addPlot()
        self.mini_plot.invertY(True)
        self.mini_plot.setAspectLocked(True)
        self.mini_plot.hideAxis("left")
        self.mini_plot.hideAxis("bottom")
        self.mini_plot.setMouseEnabled(False, False)
        self.mini_plot.hideButtons()
        self.mini_plot.setMenuEnabled(False)
        self.mini_image = PixmapImageItem()
        self.mini_plot.addItem(self.mini_image)
        self.frame = QGraphicsRectItem()
        self.frame.setPen(pg.mkPen("#f8fafc", width=1.5, cosmetic=True))
        self.frame.setZValue(10)
        self.mini_plot.addItem(self.frame)
        self.bar = QLabel()
        self.bar_text = QLabel("")
        self.fit_button = QPushButton("Fit")
        self.fit_button.setToolTip("The whole map in view again (Ctrl+0, or double-click the map)")
        self.fit_button.clicked.connect(self.fit)
        self.readout = QLabel("Compute an overview; then hover it to read positions and probabilities.")
        self.readout.setWordWrap(True)
        self.readout.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        top = QHBoxLayout()
        for w in (QLabel("Show"), self.head, self.scale, self.colormap):
            top.addWidget(w)
        top.addStretch(1)
        legend = QHBoxLayout()
        legend.addWidget(self.bar)
        legend.addWidget(self.bar_text, 1)
        legend.addWidget(self.fit_button)
        self.legend_row = legend  # the panel adds its export beside Fit
        self.bar_text.setToolTip("Grey cells: keys no query of the cell may read (the future, or beyond a window)")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addLayout(top)
        lay.addWidget(self.glw, 1)
        lay.addLayout(legend)
        lay.addWidget(self.readout)
        self.tile_labels = TileLabels(self.plot)  # head names on the mosaic's tiles
        self.view: Any = None  # the LongView of the overview shown
        self.zoom: Any = None  # the LongView of the zoom shown over it
        self.tiles: Tiles | None = None  # the mosaic's layout, when every head is shown
        self.settle = QTimer(self)
        self.settle.setSingleShot(True)
        self.settle.setInterval(ZOOM_SETTLE_MS)
        self.settle.timeout.connect(self._ask_region)
        vb = self.plot.getViewBox()
        vb.sigRangeChangedManually.connect(self._on_range_changed_manually)
        vb.sigRangeChanged.connect(self._update_frame)
        self.glw.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.glw.scene().sigMouseClicked.connect(self._on_clicked)
        self.mini.scene().sigMouseClicked.connect(self._on_mini_clicked)
        QShortcut(QKeySequence("Ctrl+0"), self, self.fit)

    # -- data --------------------------------------------------------------------------------------
    def _show_empty(self, empty: bool) -> None:
        self.empty.setVisible(empty)
        for side in ("bottom", "left"):
            self.plot.getAxis(side).setStyle(showValues=not empty)
        if empty:
            self.plot.getViewBox().setRange(xRange=(-1, 1), yRange=(-1, 1), padding=0)
            self.empty.setPos(0, 0)

    def set_overview(self, view: Any) -> None:
        """A new overview: every head listed, the zoom dropped, the view fitted."""
        self._show_empty(False)
        self.view, self.zoom = view, None
        n_heads = view.pooled.shape[0]
        keep = self.head.currentIndex()
        self.head.blockSignals(True)
        self.head.clear()
        self.head.addItem(ALL_HEADS)
        g = n_heads // max(1, view.n_kv_heads)
        self.head.addItems([f"head {h}" + (f" · kv{h // g}" if g > 1 else "") for h in range(n_heads)])
        self.head.setCurrentIndex(keep if 0 <= keep <= n_heads else 0)
        self.head.blockSignals(False)
        self._redraw()
        self.fit()

    def set_region(self, view: Any) -> None:
        """A zoom's recomputed region, drawn over the overview where it lies."""
        if self.view is None or self.current_head() < 0:
            return
        self.zoom = view
        self._draw_detail()

    def current_head(self) -> int:
        return self.head.currentIndex() - 1  # -1: the mosaic

    def floor_exp(self) -> float:
        return SCALES[self.scale.currentText()]

    def fit(self) -> None:
        """The whole map in view; a zoom's recomputed region goes (the overview holds it all)."""
        if self.view is None:
            return
        vb = self.plot.getViewBox()
        if self.current_head() < 0 and self.tiles is not None:
            h, w = self.image.image.shape
        else:
            h = w = self.view.n_tokens
            self.zoom = None
            self._draw_detail()
        # no further out than a few times the map (the aspect lock needs room on the long side), no further in than
        # four tokens; bounds on position would fight the aspect lock and squeeze the view
        side = max(w, h)
        vb.setLimits(maxXRange=8 * side, maxYRange=8 * side, minXRange=4, minYRange=4)
        vb.setRange(QRectF(0, 0, w, h), padding=0.02)

    # -- drawing -----------------------------------------------------------------------------------
    def _redraw(self, *_: object) -> None:
        v = self.view
        if v is None:
            return
        self.readout.setText("Hover the map to read positions and probabilities; the wheel zooms (Ctrl+0 fits).")
        table = colour_table(self.colormap.currentText())
        floor = self.floor_exp()
        head = self.current_head()
        T = v.n_tokens
        mosaic = head < 0
        self.plot.setAspectLocked(True)
        if mosaic:
            image, self.tiles = mosaic_index(v.pooled, floor)
            self.image.setImage(image, autoLevels=False, levels=None, lut=table)
            self.image.setRect(QRectF(0, 0, image.shape[1], image.shape[0]))
            self.detail.hide()
            self.plot.hideAxis("left")  # a tile's pixels are no positions: the tiles say what they are
            self.plot.setLabel("bottom", "each tile one head, the whole input: keys across, queries down (click one)")
            self.plot.getAxis("bottom").setStyle(showValues=False, tickLength=0)  # no positions: no tick marks
        else:
            self.tiles = None
            top = float(v.pooled.max()) if floor == 0 else None
            image = index_image(v.pooled[head], floor, top)
            self.image.setImage(image, autoLevels=False, levels=None, lut=table)
            self.image.setRect(QRectF(0, 0, image.shape[1] * v.block, image.shape[0] * v.block))
            self.plot.showAxis("left")
            self.plot.getAxis("bottom").setStyle(showValues=True, tickLength=-5)  # pyqtgraph's default
            self.plot.setLabel("bottom", "key position")
            self.plot.setLabel("left", "query position")
            self._draw_detail()
        for side in ("bottom", "left"):  # pyqtgraph places an axis title only when the axis resizes: place it now
            self.plot.getAxis(side).resizeEvent()
        self.bar.setPixmap(gradient_pixmap(self.colormap.currentText()))
        self.bar_text.setText(f"1e{floor:g} → 1 (log); grey: never read" if floor < 0 else
                              f"0 → {float(v.pooled.max()):.4g} (the largest cell, linear); grey: never read")
        self._label_tiles()
        mini = index_image(v.pooled[max(head, 0)] if not mosaic else v.pooled.max(axis=0), floor)
        self.mini_image.setImage(mini, autoLevels=False, levels=None, lut=table)
        self.mini_image.setRect(QRectF(0, 0, T, T))
        self.mini_plot.getViewBox().setRange(QRectF(0, 0, T, T), padding=0.0)
        self._update_frame()

    def _draw_detail(self) -> None:
        z, head = self.zoom, self.current_head()
        if z is None or head < 0 or self.view is None:
            self.detail.hide()
            self._token_ticks(None)
            return
        floor = self.floor_exp()
        top = float(self.view.pooled.max()) if floor == 0 else None
        image = index_image(z.pooled[head], floor, top)
        self.detail.setImage(image, autoLevels=False, levels=None, lut=colour_table(self.colormap.currentText()))
        r0, c0 = z.rows[0], z.cols[0]
        self.detail.setRect(QRectF(c0, r0, image.shape[1] * z.block, image.shape[0] * z.block))
        self.detail.show()
        self._token_ticks(z)

    def _token_ticks(self, z: Any) -> None:
        """Token labels on the axes when a zoom shows single tokens, thinned so they never overlap."""
        bottom, left = self.plot.getAxis("bottom"), self.plot.getAxis("left")
        if z is None or z.labels is None:
            bottom.setTicks(None)
            left.setTicks(None)
            return
        (r0, _), (c0, _) = z.rows, z.cols
        px = max(1e-9, self.plot.getViewBox().viewPixelSize()[0])
        every = max(1, int(np.ceil(60 * px)))  # about 60 pixels a label across
        every_y = max(1, int(np.ceil(14 * px)))
        bottom.setTicks([[(c0 + i + 0.5, cut(t, 8)) for i, t in enumerate(z.labels) if i % every == 0], []])
        left.setTicks([[(r0 + i + 0.5, cut(t, 10)) for i, t in enumerate(z.row_labels or []) if i % every_y == 0], []])

    # -- zoom ----------------------------------------------------------------------------------------
    def visible_region(self) -> tuple[int, int, int, int] | None:
        """(r0, r1, c0, c1): the token positions in view, clipped to the input."""
        if self.view is None:
            return None
        (x0, x1), (y0, y1) = self.plot.getViewBox().viewRange()
        T = self.view.n_tokens
        c0, c1 = max(0, int(np.floor(x0))), min(T, int(np.ceil(x1)))
        r0, r1 = max(0, int(np.floor(y0))), min(T, int(np.ceil(y1)))
        if c1 <= c0 or r1 <= r0:
            return None
        return r0, r1, c0, c1

    def _on_range_changed_manually(self, *_: object) -> None:
        """A wheel or a drag: once it rests, the region again; labels of single tokens go at once when the view is
        wider than they were made for (they would crowd), and the zoom goes when the whole map is back in view."""
        region, z = self.visible_region(), self.zoom
        if z is not None and region is not None:
            r0, r1, c0, c1 = region
            if max(r1 - r0, c1 - c0) > 256 and z.labels is not None:
                self._token_ticks(None)
            if self.view is not None and (r1 - r0, c1 - c0) == (self.view.n_tokens, self.view.n_tokens):
                self.zoom = None
                self._draw_detail()
        self.settle.start()

    def _label_tiles(self) -> None:
        """Each mosaic tile's head, at its corner (as the Heatmaps tab titles its tiles)."""
        n = self.view.pooled.shape[0] if self.view is not None else 0
        g = max(1, n // max(1, self.view.n_kv_heads)) if self.view is not None else 1
        self.tile_labels.show(self.tiles if n else None, [f"h{h}" + (f" · kv{h // g}" if g > 1 else "")
                                                          for h in range(n)])

    def _ask_region(self) -> None:
        """Once a zoom or pan rests: the region again at full resolution, if the overview's cells are coarser."""
        region = self.visible_region()
        if region is None or self.current_head() < 0 or self.view is None:
            return
        r0, r1, c0, c1 = region
        if self.view.block == 1 or (r1 - r0, c1 - c0) == (self.view.n_tokens, self.view.n_tokens):
            return  # every token already has its own cell
        self.region_wanted.emit(r0, r1, c0, c1)

    def _update_frame(self, *_: object) -> None:
        region = self.visible_region() if self.current_head() >= 0 else None
        if region is None:
            self.frame.hide()
            return
        r0, r1, c0, c1 = region
        self.frame.setRect(QRectF(c0, r0, c1 - c0, r1 - r0))
        self.frame.show()

    # -- mouse ---------------------------------------------------------------------------------------
    def describe(self, x: float, y: float) -> str:
        v = self.view
        if v is None:
            return ""
        if self.tiles is not None:
            head = self.tiles.locate(x, y)
            return f"head {head}: click to open it" if head is not None and head < v.pooled.shape[0] else ""
        head = self.current_head()
        z = self.zoom
        for src in ((z,) if z is not None else ()) + (v,):
            (r0, r1), (c0, c1) = src.rows, src.cols
            if r0 <= y < r1 and c0 <= x < c1:
                i, j = int((y - r0) // src.block), int((x - c0) // src.block)
                p = float(src.pooled[head, i, j])
                if src.block == 1:
                    q_tok = f" '{src.row_labels[i]}'" if src.row_labels and not src.row_labels[i].startswith("#") else ""
                    k_tok = f" '{src.labels[j]}'" if src.labels and not src.labels[j].startswith("#") else ""
                    what = f"weight {p:.5f}" if p > 0 else "not read (masked)"
                    return f"head {head} · query #{r0 + i}{q_tok} → key #{c0 + j}{k_tok} · {what}"
                what = "max" if src.pool == "max" else "mean"
                if p == 0:
                    return (f"head {head} · queries {r0 + i * src.block:,}– → keys {c0 + j * src.block:,}–: "
                            "no query of this cell may read these keys")
                return (f"head {head} · queries {r0 + i * src.block:,}–{min(r1, r0 + (i + 1) * src.block) - 1:,} → "
                        f"keys {c0 + j * src.block:,}–{min(c1, c0 + (j + 1) * src.block) - 1:,} · {what} {p:.5f}")
        return ""

    def _on_mouse_moved(self, pos: Any) -> None:
        p = self.plot.getViewBox().mapSceneToView(pos)
        text = self.describe(p.x(), p.y())
        if text:
            self.readout.setText(text)
            self.hovered.emit(text)

    def _on_clicked(self, event: Any) -> None:
        if event.double():
            self.fit()
            return
        if self.tiles is None or self.view is None:
            return
        p = self.plot.getViewBox().mapSceneToView(event.scenePos())
        head = self.tiles.locate(p.x(), p.y())
        if head is not None and head < self.view.pooled.shape[0]:
            self.head.setCurrentIndex(head + 1)

    def _on_mini_clicked(self, event: Any) -> None:
        if self.view is None or self.current_head() < 0:
            return
        p = self.mini_plot.getViewBox().mapSceneToView(event.scenePos())
        vb = self.plot.getViewBox()
        (x0, x1), (y0, y1) = vb.viewRange()
        w, h = x1 - x0, y1 - y0
        vb.setRange(QRectF(p.x() - w / 2, p.y() - h / 2, w, h), padding=0.0)
        self.settle.start()

    def _on_head_changed(self, index: int) -> None:
        self._redraw()
        self.fit()
        self.head_changed.emit(index - 1)
