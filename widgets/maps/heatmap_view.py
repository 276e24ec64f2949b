"""Every head's attention as one mosaic: one ImageItem, titled tiles, KV-group frames, hover, click."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QFontMetrics, QImage, QPixmap
from PySide6.QtWidgets import (
    QCheckBox,
    QGraphicsRectItem,
    QHBoxLayout,
    QLabel,
    QVBoxLayout,
    QWidget,
)

from core.format import format_noun
from core.kinds.selection import KeySelection
from widgets.common.cached_axis import CachedAxis
from widgets.common.steady import LayoutFirewall, SteadyLabel
from widgets.common.wheel import FocusCombo
from widgets.maps.colormaps import COLORMAPS, DEFAULT_COLORMAP, DIVERGING, group_colour, lut
from widgets.maps.hover_readout import HoverReadout
from widgets.maps.maps_view import MapsView
from widgets.maps.mosaic import (
    MosaicLayout,
    colour_table,
    diverging_caption,
    diverging_index,
    plan_layout,
    render_index,
    render_probs,
)
from widgets.maps.pixmap_image import PixmapImageItem
from widgets.maps.tile_titles import TileTitles, clip

pg.setConfigOptions(antialias=False, imageAxisOrder="row-major")

AXES = ("left", "bottom")  # the tokens' axes (the queries down the left, the keys along the bottom)
MIN_TICK_PX = 11  # token labels appear when each token gets at least this many pixels
CHAR_PX = 7  # a tick label's width per character, at the default font


@functools.lru_cache(maxsize=16)
def mosaic_table(name: str) -> np.ndarray:
    """The colour table of a colormap's mosaics, made once (0.1 ms a result, each drag step, otherwise)."""
    table = colour_table(lut(name))
    table.setflags(write=False)  # shared by every mosaic
    return table


def gradient_pixmap(name: str, width: int = 120, height: int = 12) -> QPixmap:
    row = np.ascontiguousarray(np.repeat(lut(name)[None, :, :], height, axis=0))  # (h, 256, 3)
    img = QImage(row.data, 256, height, 256 * 3, QImage.Format.Format_RGB888).copy()
    return QPixmap.fromImage(img).scaled(width, height)


class HeatmapMosaic(QWidget):
    """Call set_data(probs (H, T, T), tokens, group_size). Emits head_clicked(head) on a tile click."""

    head_clicked = Signal(int)
    hovered = Signal(str)
    painted = Signal()  # the maps' viewport has painted (the costs follow it; the latency bench times it)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.glw = MapsView()
        self.glw.painted = self.painted
        self.glw.setBackground("#1e1e1e")
        # Tokens on the left and bottom only: pyqtgraph shows every axis it is given, and top and right ones would number
        # the mosaic's pixels, meaningless, at two more axis paints a repaint.
        self.plot = self.glw.addPlot(axisItems={side: CachedAxis(side) for side in AXES})
        self.plot.invertY(True)
        self.plot.setAspectLocked(True)
        self.plot.hideButtons()
        self.plot.setMenuEnabled(False)
        self.plot.getAxis("bottom").setStyle(tickTextOffset=2)
        for side in ("left", "bottom", "top", "right"):  # token ticks: an SI prefix never applies, and finding it
            self.plot.getAxis(side).enableAutoSIPrefix(False)  # re-set each axis label's HTML at every range change
            # (the hidden top and right axes too: 0.15 ms a result)
        self.image = PixmapImageItem()
        self.plot.addItem(self.image)
        self.titles = TileTitles()
        self.plot.addItem(self.titles)
        self.colormap = FocusCombo()
        self.colormap.addItems(list(COLORMAPS))
        self.colormap.setCurrentText(DEFAULT_COLORMAP)
        self.colormap.setToolTip("Colormap. viridis, cividis and CET-CBL2 read the same for colour-blind eyes.")
        for combo in (self.colormap,):
            combo.setSizeAdjustPolicy(FocusCombo.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(16)  # a long name is elided rather than widening the window
        self.scale = FocusCombo()
        self.scale.addItems(["shared scale", "per-head scale"])
        self.scale.setToolTip("Shared: every tile on one 0-to-max scale, so heads compare. "
                              "Per head: each tile stretched to its own maximum, to see faint structure (a query "
                              "with one key to read, the first under a causal mask, weighs it 1.0: left out).")
        self.dense = QCheckBox("dense")  # shown for a sparse layer: its maps with every causal key read
        self.dense.setToolTip("A sparse layer reads only the keys it selects (DSA: its indexer's top-k; DeepSeek-V4: "
                              "its window and the compressed entries it reads); the grey cells are the causal keys it "
                              "skipped. Tick to see the same layer, same weights, reading every causal key: what the "
                              "selection changes.")
        self.dense.hide()
        self.bar = QLabel()
        self.bar_text = SteadyLabel()  # a new scale's figure at every result: no layout request
        self.bar_text.setToolTip(self.scale.toolTip())
        self.legend = QLabel()
        self.legend.setWordWrap(True)
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.readout = HoverReadout("Hover a tile to read head, tokens and weight; click it to open the head large.")
        self.readout.watch(self.glw)
        self.controls = QWidget()
        top = QHBoxLayout(self.controls)
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.colormap)
        top.addWidget(self.scale)
        top.addWidget(self.bar)
        top.addWidget(self.bar_text)
        top.addWidget(self.dense)
        top.addStretch(1)
        self.title = QLabel("")  # names the side when two mosaics stand side by side
        self.title.setStyleSheet("font-weight: bold;")
        self.title.setWordWrap(True)
        self.title.hide()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.title)
        lay.addWidget(self.controls)
        lay.addWidget(self.glw, 1)
        lay.addWidget(LayoutFirewall(self.legend, wraps=True))  # new at each head count: no relayout of the mosaic
        self.roles_legend = QLabel("")
        self.roles_legend.setWordWrap(True)
        self.roles_legend.setTextFormat(Qt.TextFormat.RichText)
        self.roles_legend.hide()
        lay.addWidget(self.roles_legend)
        lay.addWidget(self.readout)
        self.probs: np.ndarray | None = None
        self.sink_share: np.ndarray | None = None  # (H, T): each row's mass given to its head's sink
        self.selection: KeySelection | None = None  # a sparse layer's keys read, their scores, its dense maps
        self.tokens: list[str] = []
        self.layout_: MosaicLayout | None = None
        self._fixed_cols: int | None = None  # the cols the caller fixed, if any
        self.group_size = 1
        self.sharing = ""  # how heads get K and V when it is neither their own nor a group's (MLA's latent)
        self.diverging = False  # True: showing a difference of two pins, or a signed implicit attention
        self.signed_caption = ""  # a signed map's own legend ('': the pins' difference)
        self.diff_names = ("A", "B")  # the diff shows first minus second
        self.hover_prefix = ""  # side by side: "as trained · " or "changed · ", so a reading names its side
        self.custom_titles: list[str] | None = None
        self.badges: list[tuple[str, str] | None] = []
        self.vmax = np.ones(1, dtype=np.float32)
        self.grid_axes: tuple[list[str], list[str]] | None = None  # names of columns and rows (the overview)
        self._ticks: dict[str, tuple[list[tuple[float, str]], bool]] = {}  # side -> the ticks last set, shown
        self.column_mark = QGraphicsRectItem()  # frames one column: the overview's current layer
        self.column_mark.setPen(pg.mkPen("#f8fafc", width=2, style=Qt.PenStyle.DashLine, cosmetic=True))
        self.column_mark.setZValue(10)
        self.column_mark.hide()
        self.plot.addItem(self.column_mark)
        self.glw.scene().sigMouseMoved.connect(self._on_scene_mouse_moved)
        self.glw.scene().sigMouseClicked.connect(self._on_scene_mouse_clicked)
        self.plot.getViewBox().sigResized.connect(self._update_ticks)
        # Fitted views stay fitted as the widget resizes, until the user zooms or pans.
        self.auto_fit = True
        self.on_fit: Callable[[], None] = self.fit  # a linked pair fits both sides at once
        self.plot.getViewBox().sigResized.connect(self._on_viewbox_resized)
        self.plot.getViewBox().sigRangeChangedManually.connect(self._on_viewbox_range_changed_manually)
        self.plot.getViewBox().sigRangeChanged.connect(self._update_ticks)
        self.colormap.currentTextChanged.connect(self._on_style_changed)
        self.scale.currentTextChanged.connect(self._on_style_changed)
        self.dense.toggled.connect(self._on_style_changed)
        self.dense.toggled.connect(lambda _on: self._update_legend())
        self._on_style_changed()

    # -- data ------------------------------------------------------------------------------
    @property
    def per_head(self) -> bool:
        return self.scale.currentIndex() == 1

    def set_data(self, probs: np.ndarray, tokens: list[str], group_size: int, cols: int | None = None,
                 titles: list[str] | None = None) -> bool:
        """probs (H, T, T) float32, rows summing to 1; cols fixes the grid's width (one row per layer).
        Returns whether the grid was laid out anew (and the view fitted to it)."""
        n_heads, n_tokens = probs.shape[0], probs.shape[1]
        if tokens != self.tokens:
            self.readout.reset()  # another text or tokenizer: the last reading named tokens no longer shown
        if tokens != self.tokens and self.grid_axes is None:
            self._keep_axis_room([clip(t, 10) for t in tokens])
        self.probs, self.tokens, self.group_size = probs, tokens, group_size
        if self.selection is not None and self.selection.read.shape[-2:] != probs.shape[1:]:
            self.selection = None  # another view's selection: not these maps'
        if self.dense.isHidden() != (self.selection is None):
            self.dense.setVisible(self.selection is not None)
        relayout = self.layout_ is None or (self.layout_.n_heads, self.layout_.n_tokens, self.layout_.group_size) != (
            n_heads, n_tokens, group_size) or cols != self._fixed_cols
        self._fixed_cols = cols
        if relayout:
            self.layout_ = plan_layout(n_heads, n_tokens, group_size, self._aspect(), cols)
        self._paint_image()
        self.custom_titles = titles
        if titles is None:
            titles = [f"h{h}" + (f" · kv{h // group_size}" if group_size > 1 else "") for h in range(n_heads)]
        assert self.layout_ is not None
        self.titles.set_tiles(self.layout_, titles)
        if relayout:
            self.on_fit()
        self._update_legend()
        self._update_ticks()
        self.glw.paint_later()
        return relayout

    def fit(self) -> None:
        """Every tile in view."""
        if self.layout_ is not None:
            self.plot.getViewBox().setRange(QRectF(0, 0, self.layout_.width, self.layout_.height), padding=0.01)
        self.auto_fit = True

    def _aspect(self) -> float:
        w, h = self.glw.width(), self.glw.height()
        return min(3.0, max(0.6, w / h)) if w > 50 and h > 50 else 1.6

    def _on_viewbox_resized(self, *_: object) -> None:
        lay = self.layout_
        if lay is None or self.probs is None:
            return
        if self._fixed_cols is None:  # a free grid follows the widget's shape: wide views get more columns
            best = plan_layout(lay.n_heads, lay.n_tokens, lay.group_size, self._aspect())
            if best.cols != lay.cols:
                self.layout_ = best
                self._paint_image()
                self.titles.set_tiles(best, self.titles.titles)
                self._update_ticks()
                self.on_fit()
                return
        if self.auto_fit:
            self.on_fit()

    def _on_viewbox_range_changed_manually(self, *_: object) -> None:
        self.auto_fit = False

    def set_title(self, text: str) -> None:
        if text != self.title.text():
            self.title.setText(text)
            self.title.setVisible(bool(text))

    def set_diff(self, diff: np.ndarray, tokens: list[str], group_size: int, first: str = "A",
                 second: str = "B") -> None:
        """first minus second (H, T, T) on a colour-blind-safe diverging map with a symmetric shared
        scale; the legend and the hover name the two pins, positive where `first` is larger."""
        self.diverging = True
        self.diff_names = (first, second)
        self.colormap.hide()
        self.scale.hide()
        self.set_data(diff, tokens, group_size)

    def set_signed(self, values: np.ndarray, tokens: list[str], group_size: int, caption: str,
                   cols: int | None = None, tag: str = "kv") -> bool:
        """Signed maps (H, T, T) (a recurrent layer's implicit attention: rows need not sum to one and can be
        negative) on the diverging map, 0 at its middle, with caption as its legend; the colormap choice does not
        apply, the shared or per-head scale does. tag names a head's group in its title ('k': key head, 'g': group)."""
        self.diverging, self.signed_caption = True, caption
        self.colormap.hide()
        self.scale.show()
        titles = [f"h{h}" + (f" · {tag}{h // group_size}" if group_size > 1 else "") for h in range(len(values))]
        return self.set_data(values, tokens, group_size, cols, titles)

    def set_probabilities(self) -> None:
        """Back to probabilities after signed maps: the colormap and its scale again."""
        if self.signed_caption:
            self.diverging, self.signed_caption = False, ""
            self.colormap.show()
            self.scale.show()
            self.bar.setPixmap(gradient_pixmap(self.colormap.currentText()))

    def _paint_image(self) -> None:
        if self.probs is None or self.layout_ is None:
            return
        rect = QRectF(0, 0, self.layout_.width, self.layout_.height)
        if self.diverging:
            shown = self.probs
            if self.signed_caption and self.per_head:  # each head on its own symmetric scale: -its max to +its max
                top = np.abs(self.probs).reshape(len(self.probs), -1).max(axis=1)  # (H,)
                shown = self.probs / np.where(top > 0, top, 1.0)[:, None, None]
            idx, m = diverging_index(shown)
            self.image.setImage(render_index(idx, self.layout_), autoLevels=False, levels=None,
                                lut=mosaic_table(DIVERGING))
            self.image.setRect(rect)
            self.bar.setPixmap(gradient_pixmap(DIVERGING))
            end = f"{m:.3f}" if m >= 0.01 else f"{m:.2e}"
            signed_text = "-max → 0 → +max (each head)" if self.per_head else f"-{end} → 0 → +{end}"
            self.bar_text.setText(signed_text if self.signed_caption else diverging_caption(m, *self.diff_names))
            self.bar_text.setToolTip(self.signed_caption)
            return
        sel = self.selection
        dense = sel is not None and self.dense.isChecked()
        shown = sel.dense if sel is not None and dense else self.probs
        skipped = sel.skipped() if sel is not None and not dense else None
        index, self.vmax = render_probs(shown, self.layout_, self.per_head, skipped=skipped)  # the max found once
        self.image.setImage(index, autoLevels=False, levels=None, lut=mosaic_table(self.colormap.currentText()))
        self.image.setRect(rect)
        self.bar_text.setText(f"0 → {'max' if self.per_head else f'{float(self.vmax[0]):.3f}'}")  # fits 1024 px

    def set_badges(self, badges: list[tuple[str, str] | None], legend: str, tooltip: str = "") -> None:
        """One (text, colour) or None per tile, and the legend that explains them."""
        self.badges = badges
        self.titles.set_badges(badges)
        if legend != self.roles_legend.text():  # rich-text relayout is costly mid-drag: only on change
            self.roles_legend.setText(legend)
            self.roles_legend.setToolTip(tooltip)
            self.roles_legend.setVisible(bool(legend))

    def _update_legend(self) -> None:
        if self.probs is None:
            return
        n_heads = len(self.probs)
        g = self.group_size
        if self.sharing:
            text = self.sharing
        elif g == 1:
            text = f"{format_noun(n_heads, 'head')}, each with its own K and V (MHA): grey frames, no groups."
        else:
            n_groups = n_heads // g
            swatches = " ".join(
                f"<span style='color:rgb{group_colour(i)}'>■</span>kv{i} h{i * g}–{i * g + g - 1}"
                for i in range(min(n_groups, 8))
            ) + (" …" if n_groups > 8 else "")
            text = f"Frame = KV group, {g} heads to each of {format_noun(n_groups, 'K/V head')}: {swatches}"
        if self.selection is not None and self.dense.isChecked():
            text += " Dense: the same layer reading every causal key (untick to see its selection)."
        elif self.selection is not None:
            text += f" Grey: causal keys this layer does not read ({self.selection.rule})."
        if text != self.legend.text():
            self.legend.setText(text)

    # -- view ------------------------------------------------------------------------------
    def _on_style_changed(self, *_: object) -> None:
        if not self.diverging:
            self.bar.setPixmap(gradient_pixmap(self.colormap.currentText()))
        self._paint_image()

    def set_grid_axes(self, x_title: str, x_names: list[str], y_title: str, y_names: list[str]) -> None:
        """Name the grid's columns and rows (the overview: layers and heads) instead of the tokens."""
        self.grid_axes = (x_names, y_names)
        self.plot.setLabel("bottom", x_title)
        self.plot.setLabel("left", y_title)
        self._keep_axis_room(y_names)
        self._update_ticks()

    def mark_column(self, col: int | None) -> None:
        """Frame one column of tiles (None: no frame)."""
        lay = self.layout_
        if col is None or lay is None or not 0 <= col < lay.cols:
            self.column_mark.hide()
            return
        x = lay.origin(col)[0] - lay.frame - lay.gap / 2
        self.column_mark.setRect(QRectF(x, -lay.gap / 2, lay.cell, lay.height + lay.gap))
        self.column_mark.show()

    def _update_grid_ticks(self, lay: MosaicLayout) -> None:
        assert self.grid_axes is not None
        x_names, y_names = self.grid_axes
        px = self.plot.getViewBox().viewPixelSize()[0]
        cell_px = lay.cell / px if px > 0 else 0.0
        x_step = max(1, int(np.ceil((CHAR_PX * max(map(len, x_names), default=1) + 10) / max(cell_px, 1e-9))))
        y_step = max(1, int(np.ceil(MIN_TICK_PX / max(cell_px, 1e-9))))
        half = lay.tile / 2
        xs = [(lay.origin(c)[0] + half, x_names[c]) for c in range(min(lay.cols, len(x_names))) if c % x_step == 0]
        ys = [(lay.origin(r * lay.cols)[1] + half, y_names[r]) for r in range(min(lay.rows, len(y_names)))
              if r % y_step == 0]
        self._set_ticks("bottom", xs, True)
        self._set_ticks("left", ys, True)

    def _keep_axis_room(self, left_labels: list[str]) -> None:
        """Fixed room for each axis, sized for the labels it may show (the left one for these tokens), whether or not
        they fit the tiles now. pyqtgraph sizes an axis to the labels it drew, during the paint: a drag that showed or
        hid token labels relaid the plot and painted the maps twice for one result (bench/live_latency.py's stall)."""
        metrics = QFontMetrics(self.glw.font())
        for side in AXES:
            axis = self.plot.getAxis(side)
            offset = axis.style["tickTextOffset"][0 if side == "left" else 1] + max(0, axis.style["tickLength"])
            title = axis.label.boundingRect().height() * 0.8 if axis.label.isVisible() else 0.0
            if side == "left":
                widest = max((metrics.horizontalAdvance(t) for t in left_labels), default=0)
                axis.setWidth(int(widest + offset + title + 2))
            else:
                axis.setHeight(int(metrics.height() + offset + title))

    def _set_ticks(self, side: str, ticks: list[tuple[float, str]], show: bool) -> None:
        """Only a change of ticks: pyqtgraph redraws an axis's picture (2 ms a paint) after any setTicks."""
        if self._ticks.get(side) == (ticks, show):
            return
        self._ticks[side] = (ticks, show)
        axis = self.plot.getAxis(side)
        axis.setTicks([ticks, []])
        axis.setStyle(showValues=show)

    def _update_ticks(self, *_: object) -> None:
        lay = self.layout_
        if lay is not None and self.grid_axes is not None:
            self._update_grid_ticks(lay)
            return
        if lay is None or not self.tokens:
            return
        px = self.plot.getViewBox().viewPixelSize()[0]
        token_px = lay.upsample / px if px > 0 else 0.0
        longest = max(len(clip(t, 8)) for t in self.tokens)
        # Every token whose label fits beside the last one shown (every n-th when they crowd), never none: a mosaic
        # of small tiles keeps some labels in the room it keeps for them.
        x_step = max(1, math.ceil(max(MIN_TICK_PX, CHAR_PX * longest + 4) / max(token_px, 1e-9)))
        y_step = max(1, math.ceil(MIN_TICK_PX / max(token_px, 1e-9)))
        fits_x = token_px > 0 and x_step <= len(self.tokens)
        fits_y = token_px > 0 and y_step <= len(self.tokens)
        u = lay.upsample
        last = len(self.tokens) - (x_step if x_step > 1 else 1)  # thinned: the next tile's first label needs room too
        xs = [(lay.origin(c)[0] + (i + 0.5) * u, clip(tok, 8)) for c in range(lay.cols)
              for i, tok in enumerate(self.tokens) if i % x_step == 0 and i <= last] if fits_x else []
        ys = [(lay.origin(r * lay.cols)[1] + (i + 0.5) * u, clip(tok, 10)) for r in range(lay.rows)
              for i, tok in enumerate(self.tokens) if i % y_step == 0] if fits_y else []
        self._set_ticks("bottom", xs, fits_x)
        self._set_ticks("left", ys, fits_y)

    def describe(self, head: int, query: int, key: int) -> str:
        assert self.probs is not None
        w = float(self.probs[head, query, key])
        group = f" · KV group {head // self.group_size}" if self.group_size > 1 else ""
        if self.custom_titles is not None:
            return (f"{self.custom_titles[head]} · query #{query} '{self.tokens[query]}' → key #{key} "
                    f"'{self.tokens[key]}' · weight {w:.4f}")
        q_tok, k_tok = self.tokens[query], self.tokens[key]
        where = self.hover_prefix
        if self.diverging and self.signed_caption:
            what = f"weight {w:+.4f} (implicit attention: signed, rows need not sum to one)"
        elif self.diverging:
            first, second = self.diff_names
            larger = first if w > 0 else second if w < 0 else "neither"
            what = f"{first} − {second} {w:+.4f} ({larger} larger)"
        else:
            what = f"weight {w:.4f}"
        sel = self.selection
        if sel is not None and not self.diverging and key <= query:
            read, score = sel.at(head, query, key)
            dense = float(sel.dense[head, query, key])
            if self.dense.isChecked():
                what = f"dense weight {dense:.4f} (sparse: {w:.4f})"
            state = "read" if read else "skipped: this query does not read it"
            what += f" · {state}" + (f" · {sel.score_name} {score:.4g}" if sel.score_name else "")
        if self.sink_share is not None and self.sink_share.shape == self.probs.shape[:2]:
            s = float(self.sink_share[head, query])
            what += f" · the sink takes {s:.1%} of this row (its keys sum to {1 - s:.3f})"
        return f"{where}head {head}{group} · query #{query} '{q_tok}' → key #{key} '{k_tok}' · {what}"

    def _locate_scene(self, scene_pos: QPointF) -> tuple[int, int, int] | None:
        if self.layout_ is None or self.probs is None:
            return None
        p = self.plot.getViewBox().mapSceneToView(scene_pos)
        return self.layout_.locate(p.x(), p.y())

    def _on_scene_mouse_moved(self, pos: QPointF) -> None:
        hit = self._locate_scene(pos)
        if hit is None:
            self.readout.reset()  # between tiles or off the map: no stale reading
            return
        text = self.describe(*hit)
        self.readout.setText(text)
        self.hovered.emit(text)

    def _on_scene_mouse_clicked(self, event: object) -> None:
        hit = self._locate_scene(event.scenePos())  # type: ignore[attr-defined]
        if hit is not None:
            self.head_clicked.emit(hit[0])
