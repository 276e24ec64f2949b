"""Axis ticks that never overlap: every label when they fit, else every n-th, always at the centre
of the cell (token, layer or head) they name."""

from __future__ import annotations

import numpy as np

LABEL_CHARS = 10  # token labels are cut to this many characters
CHAR_PX = 7  # about one character's width at the default font
LINE_PX = 15  # one label's height


def spaced_ticks(tokens: list[str], pixels: float, min_px: float = LINE_PX) -> list[tuple[float, str]]:
    """Every token when they fit, else every n-th, so labels never overlap (min_px: the room one
    label needs along the axis: its height on the vertical axis, its width on the horizontal one)."""
    step = max(1, int(np.ceil(min_px * len(tokens) / max(pixels, 1))))
    return [(i + 0.5, tok[:LABEL_CHARS]) for i, tok in enumerate(tokens) if i % step == 0]


def label_width_px(tokens: list[str]) -> float:
    """The room a horizontal label needs: its longest text plus a gap."""
    return CHAR_PX * max((len(t[:LABEL_CHARS]) for t in tokens), default=1) + 10


def cell_ticks(n: int, pixels: float, min_px: float = LINE_PX) -> list[tuple[float, str]]:
    """Ticks for n cells 0..n-1 of a grid (layers, heads), at cell centres, thinned to fit."""
    return spaced_ticks([str(i) for i in range(n)], pixels, min_px)
