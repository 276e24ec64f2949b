"""What a layer's heatmaps may hold, checked before anything is computed: the display weights of any kind, and the
maps of one view with the mosaic drawn from them (a ValueError that says what to change)."""

from __future__ import annotations

import torch

from core.device import free_memory_bytes
from core.format import format_bytes

DISPLAY_MAX_BYTES = 6 * 2**30  # never hold more than this for one layer's display weights
MAPS_MAX_BYTES = 2 * 2**30  # the attention maps of one view, and the mosaic drawn from them
MIN_TILE_PX = 64  # the mosaic draws a tile at least this many pixels wide (widgets/maps/mosaic.py)


def display_map_bytes(n_heads: int, n_tokens: int) -> int:
    """Peak bytes to show n_heads maps of n_tokens: the float32 scores, their masked copy and softmax,
    the array handed to the window, and the mosaic image (a byte per pixel, drawn and copied once)."""
    maps = n_heads * n_tokens * n_tokens * 4
    tile = max(n_tokens, MIN_TILE_PX) * 1.15  # with its frame and gap
    return 4 * maps + int(2 * n_heads * tile * tile)


def guard_display_maps(n_heads: int, n_tokens: int) -> None:
    """Refuse, before computing anything, heatmaps that would not fit (a ValueError that says what to change)."""
    need = display_map_bytes(n_heads, n_tokens)
    limit = min(MAPS_MAX_BYTES, int(free_memory_bytes(torch.device("cpu")) * 0.8))
    if need > limit:
        raise ValueError(f"the heatmaps of {n_heads:,} heads x {n_tokens:,} tokens need about {format_bytes(need)}, "
                         f"more than the {format_bytes(limit)} the display may use; shorten the text or use fewer "
                         "heads (the counts and the timing do not need them).")


def check_display_bytes(need: int, what: str, fix: str) -> None:
    """Refuse display weights of need bytes beyond what the display may hold: what names the layer, fix what to lower
    besides d_model and the heads."""
    limit = min(DISPLAY_MAX_BYTES, int(free_memory_bytes(torch.device("cpu")) * 0.8))
    if need > limit:
        raise ValueError(f"the heatmaps of {what} need {format_bytes(need)} of weights, more than {format_bytes(limit)} "
                         f"the display may use; lower d_model, the heads or {fix}.")
