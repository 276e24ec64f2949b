"""Lay out and paint every head's attention map as one RGBA image (one ImageItem, not one per head).

Tiles appear in head order; when the group size fits a row, each row holds whole KV groups.
Each tile has a frame in its KV group's colour, so the heads that share a KV head read as one band.
Pure numpy: no Qt, no torch.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from widgets.maps.colormaps import GROUP_COLOURS

BACKGROUND = np.array([30, 30, 30], dtype=np.uint8)
MIN_TILE_PX = 64  # short texts are upsampled to at least this many pixels per tile


@dataclass(frozen=True)
class MosaicLayout:
    n_heads: int
    n_tokens: int
    group_size: int
    cols: int
    rows: int
    frame: int  # frame width in pixels, coloured by KV group
    gap: int  # background pixels between framed tiles
    upsample: int = 1  # pixels per token along each axis, so short texts get crisp thin frames

    @property
    def tile(self) -> int:
        """Pixels of one head's map along each axis."""
        return self.n_tokens * self.upsample

    @property
    def cell(self) -> int:
        """Pixels from one tile's origin to the next."""
        return self.tile + 2 * self.frame + self.gap

    @property
    def width(self) -> int:
        return self.cols * self.cell - self.gap

    @property
    def height(self) -> int:
        return self.rows * self.cell - self.gap

    def origin(self, head: int) -> tuple[int, int]:
        """(x, y) pixel of the top-left token cell of head's tile."""
        r, c = divmod(head, self.cols)
        return c * self.cell + self.frame, r * self.cell + self.frame

    def locate(self, x: float, y: float) -> tuple[int, int, int] | None:
        """Image coordinates -> (head, query, key), or None between tiles."""
        if x < 0 or y < 0:
            return None
        c, xr = divmod(int(x), self.cell)
        r, yr = divmod(int(y), self.cell)
        head = r * self.cols + c
        kx, qy = xr - self.frame, yr - self.frame
        if c >= self.cols or head >= self.n_heads or not (0 <= kx < self.tile and 0 <= qy < self.tile):
            return None
        return head, qy // self.upsample, kx // self.upsample


def plan_layout(n_heads: int, n_tokens: int, group_size: int = 1, aspect: float = 1.6,
                cols: int | None = None) -> MosaicLayout:
    """A grid about `aspect` times wider than tall, rows made of whole KV groups when they fit
    (or exactly `cols` columns: one row per layer in the overview)."""
    fixed = cols is not None
    cols = max(1, min(n_heads, cols or round(math.sqrt(n_heads * aspect))))
    if not fixed and 1 < group_size <= n_heads:
        if group_size <= cols:
            cols = group_size * max(1, round(cols / group_size))
        elif group_size <= 1.5 * cols:
            cols = group_size  # one whole group per row, a little wider than planned
    rows = math.ceil(n_heads / cols)
    upsample = max(1, math.ceil(MIN_TILE_PX / max(1, n_tokens)))
    tile = n_tokens * upsample
    frame = max(1, tile // 40)
    gap = max(2, tile // 10)
    return MosaicLayout(n_heads, n_tokens, group_size, cols, rows, frame, gap, upsample)


# One uint8 image indexes one 256-entry colour table: the colormap's levels, then the background, the colour of a
# key a sparse layer skipped, then one frame colour per KV group. Qt draws an indexed image without a per-pixel
# numpy pass.
LEVELS = 246
BACKGROUND_INDEX = LEVELS
SKIPPED_INDEX = LEVELS + 1
GROUP_INDEX = LEVELS + 2
SKIPPED = np.array([118, 118, 118], dtype=np.uint8)  # mid grey: no colormap here has it, nor the background
TOP_LEVEL = (LEVELS - 1) * (1 + 1e-6)  # a weight at the scale's top reaches the last level despite float32 rounding
# (0.35 x (245 / 0.35) is 244.99998 in float32, truncated to 244); the other levels move by a millionth


def colour_table(colormap_lut: np.ndarray) -> np.ndarray:
    """(256, 3) uint8: LEVELS samples of the colormap, the background, a skipped key's grey, the group colours."""
    pick = np.linspace(0, len(colormap_lut) - 1, LEVELS).round().astype(int)
    return np.ascontiguousarray(np.vstack([colormap_lut[pick], BACKGROUND[None], SKIPPED[None], GROUP_COLOURS]),
                                dtype=np.uint8)


def head_tops(probs: np.ndarray) -> np.ndarray:
    """probs (H, T, T) -> each head's largest weight (H,), over the queries that had more than one key to read:
    a query with one (the first under a causal mask) always weighs it 1.0, which made every head's own scale the
    shared one. A head with no other query keeps its 1.0."""
    rows = probs.max(axis=2) if probs.size else np.ones((len(probs), 1), np.float32)  # (H, T): each query's top
    spread = np.where(rows < 1.0 - 1e-6, rows, -1.0)  # (H, T): a single key's 1.0 left out
    top = spread.max(axis=1)  # (H,)
    return np.where(top > 0, top, rows.max(axis=1)).astype(np.float32)


def scale_to_index(probs: np.ndarray, per_head: bool, vmax: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """probs (H, T, T) -> colormap levels 0..LEVELS-1 as uint8 (H, T, T), and the top of the scale per head (H,).
    vmax fixes the top of a shared scale (two mosaics on one scale)."""
    if vmax is not None:
        vmax = np.full(len(probs), vmax)
    elif per_head:
        vmax = head_tops(probs)  # (H,)
    else:
        vmax = np.full(len(probs), probs.max() if probs.size else 1.0)
    vmax = np.where(vmax > 0, vmax, 1.0).astype(np.float32)
    idx = probs * (TOP_LEVEL / vmax)[:, None, None]  # (H, T, T)
    np.clip(idx, 0, LEVELS - 1, out=idx)
    return idx.astype(np.uint8), vmax


def diverging_index(diff: np.ndarray) -> tuple[np.ndarray, float]:
    """diff (H, T, T) in [-m, m] -> levels (H, T, T) uint8 with 0 at the middle level, and m (0.0: no difference)."""
    diff = np.nan_to_num(diff, nan=0.0)  # an undefined weight (a row with nothing to read) differs by nothing
    m = float(np.abs(diff).max()) if diff.size else 0.0
    idx = (diff / (m if m > 0 else 1.0) + 1.0) * ((LEVELS - 1) / 2.0)  # (H, T, T)
    np.clip(idx, 0, LEVELS - 1, out=idx)
    return np.rint(idx).astype(np.uint8), m


def diverging_caption(m: float, first: str, second: str) -> str:
    """The difference scale's words: its ends, or that there is no difference to scale (two identical pins)."""
    if m == 0:
        return f"0 everywhere: {first} and {second} attend exactly alike"
    end = f"{m:.3f}" if m >= 0.01 else f"{m:.2e}"  # a difference of 1e-9 is not "0.000": its cells are full colour
    return f"-{end} ({second} larger) → 0 → +{end} ({first} larger)"


def render_mosaic(probs: np.ndarray, layout: MosaicLayout, per_head: bool = False,
                  vmax: float | None = None) -> np.ndarray:
    """probs (H, T, T) -> index image (height, width) uint8 into colour_table(), C-contiguous."""
    return render_probs(probs, layout, per_head, vmax)[0]


def render_probs(probs: np.ndarray, layout: MosaicLayout, per_head: bool = False,
                 vmax: float | None = None, skipped: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """probs (H, T, T) -> the framed mosaic index image (height, width) and the top of the scale per head (H,),
    as render_index(scale_to_index(...)) gives them, in one pass: each level is computed straight into its
    tile (no (H, T, T) float and uint8 copies between): 1.3 ms instead of 4 for 64 heads of 128 tokens.
    skipped (T, T) bool: the causal keys a sparse layer did not read, drawn grey in every tile."""
    image, top = _render_probs(probs, layout, per_head, vmax)
    if skipped is not None and skipped.any():
        mask = _paint_tiles(np.broadcast_to(skipped, probs.shape), layout, None, blank=0)
        image[mask == 1] = SKIPPED_INDEX
    return image, top


def _render_probs(probs: np.ndarray, layout: MosaicLayout, per_head: bool,
                  vmax: float | None) -> tuple[np.ndarray, np.ndarray]:
    if vmax is not None:
        top = np.full(len(probs), vmax, dtype=np.float32)
    elif per_head:
        top = head_tops(probs)  # (H,)
    else:
        top = np.full(len(probs), probs.max() if probs.size else 1.0, dtype=np.float32)
    top = np.where(top > 0, top, 1.0).astype(np.float32)
    scale = (TOP_LEVEL / top).astype(np.float32)  # (H,)
    if vmax is not None or per_head:  # larger values are clipped to the top (a float pass only in these cases)
        probs = np.minimum(probs, top[:, None, None])
    return _paint_tiles(probs, layout, scale), top


def render_index(idx: np.ndarray, layout: MosaicLayout) -> np.ndarray:
    """Colormap levels (H, T, T) uint8 -> the framed mosaic index image (height, width)."""
    return _paint_tiles(idx, layout, None)


FRAMES_KEPT_BYTES = 4 * 2**20  # a frames image kept for its layout's next result: a 64-head mosaic of 128-token tiles
# is 1.3 MiB; a 3,104-head one, 25 MiB, stayed in the cache of 8 layouts after the view moved on (a soak's RSS)


def _frames(layout: MosaicLayout) -> np.ndarray:
    """The background and every tile's frame in its KV group's colour, (rows * cell, cols * cell) uint8 and
    read-only: kept for the layouts of the last few views, drawn anew when larger than FRAMES_KEPT_BYTES."""
    if layout.rows * layout.cell * layout.cols * layout.cell > FRAMES_KEPT_BYTES:
        return _draw_frames(layout)
    return _kept_frames(layout)


def _draw_frames(layout: MosaicLayout) -> np.ndarray:
    """The whole grid of cells, so that its tiles are one strided view (the image is its top-left crop)."""
    img = np.full((layout.rows * layout.cell, layout.cols * layout.cell), BACKGROUND_INDEX, dtype=np.uint8)
    n, f = layout.tile, layout.frame
    for head in range(layout.n_heads):
        x, y = layout.origin(head)
        if layout.group_size > 1:
            img[y - f: y + n + f, x - f: x + n + f] = GROUP_INDEX + (head // layout.group_size) % len(GROUP_COLOURS)
        else:  # MHA: no head shares a KV head, so no frame colour may suggest a group
            img[y - f: y + n + f, x - f: x + n + f] = GROUP_INDEX + len(GROUP_COLOURS) - 1
    img.flags.writeable = False
    return img


_kept_frames = functools.lru_cache(maxsize=8)(_draw_frames)


def _paint_tiles(values: np.ndarray, layout: MosaicLayout, scale: np.ndarray | None,
                 blank: int | None = None) -> np.ndarray:
    """The framed mosaic with head h's tile set to values[h] * scale[h] (or values[h], when scale is None),
    truncated to uint8 as astype does, each token drawn as upsample x upsample pixels; blank: a value for every pixel
    outside the tiles instead of the frames (a mask of the tiles)."""
    lay = layout
    grid = _frames(lay).copy() if blank is None else np.full((lay.rows * lay.cell, lay.cols * lay.cell), blank,
                                                             dtype=np.uint8)
    t, u, c, f, n = lay.n_tokens, lay.upsample, lay.cell, lay.frame, lay.tile
    # (rows * cell, cols * cell) -> (rows, cols, T, u, T, u): tile (r, c)'s token (q, k) pixel (i, j), a view
    tiles = grid.reshape(lay.rows, c, lay.cols, c)[:, f: f + n, :, f: f + n]  # (rows, n, cols, n)
    tiles = tiles.reshape(lay.rows, t, u, lay.cols, t, u).transpose(0, 3, 1, 2, 4, 5)
    full, rem = divmod(lay.n_heads, lay.cols)
    for first, dst, count in ((0, tiles[:full], full * lay.cols), (full * lay.cols, tiles[full:full + 1, :rem], rem)):
        if count == 0:
            continue
        r, k = dst.shape[:2]
        src = values[first: first + count].reshape(r, k, t, 1, t, 1)  # (H', T, T) -> (r, k, T, 1, T, 1)
        if scale is None:
            np.copyto(dst, src, casting="unsafe")
        else:
            np.multiply(src, scale[first: first + count].reshape(r, k, 1, 1, 1, 1), out=dst, casting="unsafe")
    return np.ascontiguousarray(grid[: lay.height, : lay.width])


def render_rgb(probs: np.ndarray, layout: MosaicLayout, colormap_lut: np.ndarray, per_head: bool = False,
               vmax: float | None = None, skipped: np.ndarray | None = None) -> np.ndarray:
    """The mosaic as an RGB array (height, width, 3), for export and tests (skipped keys grey, as on screen)."""
    return colour_table(colormap_lut)[render_probs(probs, layout, per_head, vmax, skipped)[0]]
