"""One head large, with every token on both axes, a colour bar and a hover readout."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Signal
from PySide6.QtGui import QFontMetricsF
from PySide6.QtWidgets import QDialog, QHBoxLayout, QPushButton, QVBoxLayout, QWidget

from widgets.common.ticks import LABEL_CHARS, label_width_px, spaced_ticks
from widgets.maps.colormaps import COLORMAPS, lut
from widgets.maps.hover_readout import HoverReadout
from widgets.maps.mosaic import SKIPPED


class HeadView(QDialog):
    export_requested = Signal(int)  # head

    def __init__(self, probs: np.ndarray, tokens: list[str], head: int, group_size: int,
                 colormap: str, parent: QWidget | None = None, layer: int | None = None,
                 model_name: str = "", skipped: np.ndarray | None = None) -> None:
        """probs (T, T) for one head; layer and model_name for a real model's head; skipped (T, T) bool: the causal
        keys a sparse layer did not read, drawn grey as the mosaic draws them."""
        super().__init__(parent)
        self.head, self.probs, self.tokens, self.skipped = head, probs, tokens, skipped
        group = f" · KV group {head // group_size} (shared with {group_size - 1} other heads)" if group_size > 1 else ""
        where = f"{model_name} · layer {layer} · " if layer is not None else ""
        self.setWindowTitle(f"{where}head {head}{group}" if where else f"Head {head}{group}")
        self.plot = pg.PlotWidget(background="#1e1e1e")
        self.plot.invertY(True)
        self.plot.setAspectLocked(True)
        self.plot.setLabel("left", "query token")
        self.plot.setLabel("bottom", "key token")
        self.plot.hideButtons()
        self.image = pg.ImageItem(probs, axisOrder="row-major")
        self.image.setLookupTable(lut(colormap))
        vmax = float(probs.max()) if probs.size else 1.0
        self.image.setLevels((0.0, vmax))
        self.image.setRect(QRectF(0, 0, probs.shape[1], probs.shape[0]))
        self.plot.addItem(self.image)
        if skipped is not None and skipped.any():  # grey over the skipped cells, clear elsewhere
            rgba = np.zeros((*skipped.shape, 4), dtype=np.uint8)  # (T, T, 4)
            rgba[skipped] = (*SKIPPED, 255)
            self.skipped_image = pg.ImageItem(rgba, axisOrder="row-major")
            self.skipped_image.setRect(QRectF(0, 0, probs.shape[1], probs.shape[0]))
            self.plot.addItem(self.skipped_image)
        cmap = pg.colormap.get(COLORMAPS.get(colormap, colormap))
        self.colorbar = pg.ColorBarItem(values=(0.0, vmax), colorMap=cmap, interactive=False, label="weight")
        self.colorbar.setImageItem(self.image, insert_in=self.plot.getPlotItem())
        self._fit_axes()
        self.readout = HoverReadout("Hover a cell: query → key and its weight.")
        self.readout.watch(self.plot)
        export = QPushButton("Export this head…")
        export.setToolTip("PNG, SVG, .npy or .csv of this head, with a JSON manifest (Ctrl+E)")
        export.clicked.connect(lambda: self.export_requested.emit(self.head))
        close = QPushButton("Close")
        close.clicked.connect(self.close)
        row = QHBoxLayout()
        row.addWidget(self.readout, 1)
        row.addWidget(export)
        row.addWidget(close)
        lay = QVBoxLayout(self)
        lay.addWidget(self.plot, 1)
        lay.addLayout(row)
        self.resize(760, 680)
        self.plot.scene().sigMouseMoved.connect(self._on_scene_mouse_moved)
        self.plot.getViewBox().sigResized.connect(self._update_ticks)
        self._update_ticks()

    def bare(self) -> None:
        """The map and its token ticks alone, for an export without decorations: no colour bar, no axis titles."""
        self.plot.getPlotItem().layout.removeItem(self.colorbar)
        self.colorbar.hide()
        for side in ("left", "bottom"):
            self.plot.getAxis(side).showLabel(False)

    def _fit_axes(self) -> None:
        """Room for every label before the first paint: the left axis as wide as its longest token (pyqtgraph
        widens it only after a paint, and drops the labels that did not fit then: "Lucknow", and "query token"
        drawn over "trained"), and a margin above and below for the colour bar's end labels ("1.0")."""
        left = self.plot.getAxis("left")
        font = left.style.get("tickFont") or left.font()
        widest = max((QFontMetricsF(font).horizontalAdvance(t[:LABEL_CHARS]) for t in self.tokens), default=0.0)
        title_px = QFontMetricsF(left.label.font()).height()
        left.setWidth(int(widest + max(0, left.style["tickLength"]) + left.style["tickTextOffset"][0] + title_px + 12))
        self.plot.getPlotItem().layout.setContentsMargins(4, 14, 8, 4)

    def _update_ticks(self, *_: object) -> None:
        vb = self.plot.getViewBox()
        w, h = vb.width(), vb.height()
        self.plot.getAxis("bottom").setTicks([spaced_ticks(self.tokens, w, label_width_px(self.tokens)), []])
        self.plot.getAxis("left").setTicks([spaced_ticks(self.tokens, h), []])

    def _on_scene_mouse_moved(self, pos: QPointF) -> None:
        p = self.plot.getViewBox().mapSceneToView(pos)
        q, k = int(np.floor(p.y())), int(np.floor(p.x()))
        n = len(self.tokens)
        if 0 <= q < n and 0 <= k < n:
            skipped = self.skipped is not None and bool(self.skipped[q, k])
            self.readout.setText(
                f"query #{q} '{self.tokens[q]}' → key #{k} '{self.tokens[k]}' · weight {self.probs[q, k]:.4f}"
                + (" · skipped: this query does not read it" if skipped else "")
            )
        else:
            self.readout.reset()
