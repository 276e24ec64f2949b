"""Which tokens an eviction point keeps, a layer and KV head a row over the context's tokens (kept bright, evicted
dark), and the context itself shaded by the share of heads that keep each token: SnapKV keeps what the last lines
ask about, StreamingLLM the start and the end. Reads the point's packed bits (core/models/evict/points.py)."""

from __future__ import annotations

import html
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QTextBrowser, QVBoxLayout, QWidget

from core.models.evict.points import unpack_kept

KEPT, EVICTED = (240, 228, 66), (40, 40, 48)


class KeptStrip(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = QLabel("Click an eviction point on the chart to see the tokens it keeps.")
        self.title.setWordWrap(True)
        self.layer = QComboBox()
        self.layer.setToolTip("Shade the text by the heads of one layer that keep each token, or of every layer")
        self.layer.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.layer.currentIndexChanged.connect(self._shade)
        self.plot = pg.PlotWidget()
        self.plot.setBackground("#1e1e1e")
        self.plot.setMenuEnabled(False)
        self.plot.setMouseEnabled(x=True, y=False)
        self.plot.invertY(True)
        self.plot.hideAxis("left")
        self.plot.setLabel("bottom", "context token (0 = the first)")
        self.plot.setMinimumHeight(90)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.plot.addItem(self.image)
        self.hover = QLabel(" ")
        self.text = QTextBrowser()
        self.text.setMinimumHeight(44)
        self.text.setStyleSheet("QTextBrowser { background: #1e1e1e; color: #cccccc; }")
        self.text.setToolTip("The context, each token shaded by the share of KV heads that keep it (of the layer chosen in "
                             "'shade by', or of every layer)")
        top = QHBoxLayout()
        top.addWidget(self.title, 1)
        top.addWidget(QLabel("shade by"))
        top.addWidget(self.layer)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.plot, 3)
        layout.addWidget(self.hover)
        layout.addWidget(self.text, 2)
        self.kept: np.ndarray | None = None  # (layers, K, C)
        self.tokens: list[str] = []
        self.plot.scene().sigMouseMoved.connect(self._on_moved)

    def show_point(self, point: dict[str, Any] | None, result: dict[str, Any] | None) -> None:
        """An eviction point's kept tokens (anything else clears the strip and says why)."""
        self.hover.setText(" ")
        if point is None or result is None or not point.get("kept_bits"):
            self.kept = None
            self.image.clear()
            self.text.clear()
            if point is not None and point.get("kept_bits") and result is None:
                words = "The tokens this point keeps show once the run ends."
            elif point is not None and point.get("family") == "layer":
                words = (f"{point['label']}: keeps every token of the context, each one changed (pooled, rebuilt or "
                         "rounded); the chart shows what that costs.")
            else:
                words = ("Click an eviction (or window) point on the chart to see the tokens it keeps, a row a layer "
                         "and KV head.")
            self.title.setText(words)
            return
        shape = (int(result["layers"]), int(result["kv_heads"]), int(result["context"]))
        self.kept = unpack_kept(point["kept_bits"], shape)
        self.tokens = list(result["tokens"])
        L, K, C = shape
        rgb = np.where(self.kept.reshape(L * K, C)[..., None], np.array(KEPT, np.uint8),  # (L, K, C) -> (L * K, C, 1)
                       np.array(EVICTED, np.uint8)).astype(np.uint8)  # (L*K, C, 3)
        self.image.setImage(rgb, autoLevels=False)
        self.image.setRect(QRectF(0, 0, C, L * K))
        self.plot.setXRange(0, C, padding=0)
        self.plot.setYRange(0, L * K, padding=0)
        self.title.setText(f"<b>{html.escape(point['label'])}</b>: a row a layer and KV head ({L} x {K}), top to "
                           f"bottom; bright = kept ({point['kept_tokens']:,} of {C:,} a row).")
        current = self.layer.currentIndex()
        self.layer.blockSignals(True)
        self.layer.clear()
        self.layer.addItem("every layer", None)
        for i in range(L):
            self.layer.addItem(f"layer {i}", i)
        self.layer.setCurrentIndex(current if 0 <= current <= L else 0)
        self.layer.blockSignals(False)
        self._shade()

    def share(self) -> np.ndarray | None:
        """(C,) the share of the chosen layer's (or every layer's) KV heads keeping each token."""
        if self.kept is None:
            return None
        layer = self.layer.currentData()
        rows = self.kept if layer is None else self.kept[layer: layer + 1]
        return rows.reshape(-1, rows.shape[-1]).mean(0)  # (layers, K, C) -> (layers * K, C) -> (C,)

    def _shade(self) -> None:
        share = self.share()
        if share is None:
            return
        spans = []
        for token, s in zip(self.tokens, share, strict=True):
            shown = html.escape(token.strip("'") if token in ("'\\n'",) else token).replace("\\n", "<br>")
            spans.append(f'<span style="background: rgba(240, 228, 66, {0.85 * s:.2f}); color: '
                         f'{"#111111" if s > 0.5 else "#cccccc"}">{shown}</span>')
        self.text.setHtml("<div style='font-family: sans-serif; line-height: 140%'>" + "".join(spans) + "</div>")

    def _on_moved(self, pos: QPointF) -> None:
        if self.kept is None:
            return
        at = self.plot.getPlotItem().getViewBox().mapSceneToView(pos)
        L, K, C = self.kept.shape
        row, col = int(at.y()), int(at.x())
        if not (0 <= row < L * K and 0 <= col < C):
            self.hover.setText(" ")
            return
        layer, head = divmod(row, K)
        word = self.tokens[col] if col < len(self.tokens) else ""
        state = "kept" if self.kept[layer, head, col] else "evicted"
        heads = int(self.kept[:, :, col].sum())
        self.hover.setText(f"layer {layer}, KV head {head}, token {col} {word!r}: {state} · kept by {heads} of "
                           f"{L * K} layer heads")
