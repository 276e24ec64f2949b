"""Colormaps as 256-entry uint8 lookup tables (pyqtgraph's fast path)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pyqtgraph as pg

# name shown -> pyqtgraph colormap name. viridis and cividis are colour-blind safe; CET-CBL2 is
# Kovesi's colour-blind-safe linear map; CET-L1 is grey.
COLORMAPS = {
    "viridis (colour-blind safe)": "viridis",
    "cividis (colour-blind safe)": "cividis",
    "CET-CBL2 (colour-blind safe)": "CET-CBL2",
    "magma": "magma",
    "inferno": "inferno",
    "greys": "CET-L1",
}
DEFAULT_COLORMAP = "viridis (colour-blind safe)"
DIVERGING = "CET-CBD1"  # colour-blind-safe diverging: blue below zero, yellow above

# Distinct frame colours for KV groups (Okabe-Ito, colour-blind safe), cycled past eight.
GROUP_COLOURS = np.array(
    [[230, 159, 0], [86, 180, 233], [0, 158, 115], [240, 228, 66],
     [0, 114, 178], [213, 94, 0], [204, 121, 167], [160, 160, 160]], dtype=np.uint8,
)


@lru_cache(maxsize=16)
def lut(name: str) -> np.ndarray:
    """(256, 3) uint8 for a name from COLORMAPS (shown name or pyqtgraph name)."""
    cmap = pg.colormap.get(COLORMAPS.get(name, name))
    return np.ascontiguousarray(cmap.getLookupTable(nPts=256, alpha=False, mode="byte"), dtype=np.uint8)


def group_colour(group: int) -> tuple[int, int, int]:
    r, g, b = GROUP_COLOURS[group % len(GROUP_COLOURS)]
    return int(r), int(g), int(b)
