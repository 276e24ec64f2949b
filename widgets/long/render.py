"""A long map's pixels (numpy only): pooled probabilities on a log scale, because a long input spreads attention
thin (a 1,024-token band is about 1e-3 a key, a sink column near 1), with the cells a query never reads apart
from the faintest attention; and every head's map as one mosaic."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from widgets.maps.colormaps import lut

NOT_READ = (38, 38, 38)  # cells no query of the block may read (the causal triangle, beyond a window)
SCALES = {"log, 1e-4 to 1": -4.0, "log, 1e-6 to 1": -6.0, "linear, 0 to max": 0.0}
DEFAULT_SCALE = "log, 1e-4 to 1"
GAP = 2  # pixels between mosaic tiles


def index_image(pooled: np.ndarray, floor_exp: float, vmax: float | None = None) -> np.ndarray:
    """(R, C) probabilities -> (R, C) uint8: 0 where nothing is read (exactly 0), 1..255 on the scale:
    log10(p) from floor_exp to 0 (floor_exp < 0), or linear from 0 to vmax (floor_exp == 0)."""
    p = np.asarray(pooled, dtype=np.float32)
    out = np.zeros(p.shape, dtype=np.uint8)
    read = p > 0
    if floor_exp < 0:
        with np.errstate(divide="ignore"):
            level = (np.log10(np.where(read, p, 1.0)) - floor_exp) / -floor_exp  # 0 at the floor, 1 at p = 1
    else:
        top = float(vmax if vmax is not None else (p.max() if p.size else 1.0)) or 1.0
        level = p / top
    out[read] = (1 + np.clip(level[read], 0.0, 1.0) * 254).astype(np.uint8)
    return out


@lru_cache(maxsize=16)
def colour_table(name: str) -> np.ndarray:
    """(256, 3) uint8: index 0 the not-read grey, 1..255 the colormap."""
    table = np.empty((256, 3), dtype=np.uint8)
    table[0] = NOT_READ
    table[1:] = lut(name)[np.linspace(0, 255, 255).astype(int)]
    return table


@dataclass(frozen=True)
class Tiles:
    cols: int
    rows: int
    tile: int  # pixels a side of one head's tile

    def origin(self, head: int) -> tuple[int, int]:
        r, c = divmod(head, self.cols)
        return c * (self.tile + GAP), r * (self.tile + GAP)

    def locate(self, x: float, y: float) -> int | None:
        """The head whose tile holds pixel (x, y), or None in a gap."""
        c, cx = divmod(int(x), self.tile + GAP)
        r, ry = divmod(int(y), self.tile + GAP)
        head = r * self.cols + c
        if x < 0 or y < 0 or cx >= self.tile or ry >= self.tile or c >= self.cols:
            return None
        return head


def tiles_for(n_heads: int, side: int, aspect: float = 1.5) -> Tiles:
    cols = max(1, min(n_heads, round(math.sqrt(n_heads * aspect))))
    return Tiles(cols, math.ceil(n_heads / cols), side)


def mosaic_index(pooled: np.ndarray, floor_exp: float, max_side: int = 256) -> tuple[np.ndarray, Tiles]:
    """(H, R, C) -> one uint8 image of every head's tile (a tile at most max_side pixels: cells max-pooled down,
    so a one-cell sink column survives), and the tiles' layout. Gaps are index 0."""
    H, R, C = pooled.shape
    step = max(1, math.ceil(max(R, C) / max_side))
    r2, c2 = math.ceil(R / step), math.ceil(C / step)
    padded = np.zeros((H, r2 * step, c2 * step), dtype=np.float32)
    padded[:, :R, :C] = pooled
    small = padded.reshape(H, r2, step, c2, step).max(axis=(2, 4))  # (H, r2, c2)
    top = float(pooled.max()) if floor_exp == 0 and pooled.size else None
    lay = tiles_for(H, max(r2, c2))
    image = np.zeros((lay.rows * (lay.tile + GAP) - GAP, lay.cols * (lay.tile + GAP) - GAP), dtype=np.uint8)
    for h in range(H):
        x, y = lay.origin(h)
        image[y:y + r2, x:x + c2] = index_image(small[h], floor_exp, top)
    return image, lay
