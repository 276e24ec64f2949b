"""The heatmaps' projections: only W_q and W_k of AttentionLayer(cfg, seed), drawn from the same
seeded stream, so the heatmaps equal the full layer's display path at a fraction of its memory
(2*d^2 instead of 4*d^2 floats under MHA, none of W_v and W_o kept)."""

from __future__ import annotations

import math

import torch

from core.attention import MAX_DISPLAY_TOKENS, repeat_kv
from core.config import AttentionConfig
from core.counts import format_bytes
from core.device import free_memory_bytes

CHUNK_ELEMENTS = 2**24  # draw skipped parts of the stream in pieces of this many numbers
DISPLAY_MAX_BYTES = 6 * 2**30  # never hold more than this for one layer's display weights


MAPS_MAX_BYTES = 2 * 2**30  # the attention maps of one view, and the mosaic drawn from them
MIN_TILE_PX = 64  # the mosaic draws a tile at least this many pixels wide (widgets/mosaic.py)


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


def display_bytes(cfg: AttentionConfig) -> int:
    return (cfg.n_heads + cfg.kv_heads) * cfg.head_dim * (cfg.d_model + 1) * 4


def _skip(gen: torch.Generator, n: int) -> None:
    """Advance the generator past n uniform draws without keeping them."""
    while n > 0:
        k = min(n, CHUNK_ELEMENTS)
        torch.empty(k).uniform_(generator=gen)
        n -= k


class DisplayProjector:
    def __init__(self, cfg: AttentionConfig, seed: int = 0) -> None:
        need = display_bytes(cfg)
        limit = min(DISPLAY_MAX_BYTES, int(free_memory_bytes(torch.device("cpu")) * 0.8))
        if need > limit:
            raise ValueError(f"the heatmaps of d_model {cfg.d_model} need {format_bytes(need)} of weights, more than "
                             f"{format_bytes(limit)} the display may use; lower d_model.")
        self.cfg = cfg
        d, h = cfg.d_model, cfg.head_dim
        qk, v = (cfg.n_heads + cfg.kv_heads) * h, cfg.kv_heads * h
        bound = 1.0 / math.sqrt(d)
        gen = torch.Generator().manual_seed(seed)
        # AttentionLayer draws wqkv.weight (q rows, k rows, v rows), then wqkv.bias, in one stream.
        self.weight = torch.empty(qk, d).uniform_(-bound, bound, generator=gen)  # (H*h + K*h, d)
        self.bias = None
        if cfg.bias:
            _skip(gen, v * d)
            self.bias = torch.empty(qk).uniform_(-bound, bound, generator=gen)  # (H*h + K*h,)

    def probs(self, x: torch.Tensor) -> torch.Tensor:
        """x (B, T, d) float32 with T <= MAX_DISPLAY_TOKENS -> per-head probabilities (B, H, T, T)."""
        cfg = self.cfg
        B, T, _ = x.shape
        if T > MAX_DISPLAY_TOKENS:
            raise ValueError(f"the display path shows at most {MAX_DISPLAY_TOKENS} tokens, not {T}; shorten the text.")
        qk = torch.nn.functional.linear(x, self.weight, self.bias)  # (B, T, (H+K)*h)
        q, k = qk.split([cfg.n_heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim], dim=-1)
        q = q.view(B, T, cfg.n_heads, cfg.head_dim).transpose(1, 2)  # (B, H, T, h)
        k = k.view(B, T, cfg.kv_heads, cfg.head_dim).transpose(1, 2)  # (B, K, T, h)
        k = repeat_kv(k, cfg.group_size)  # (B, H, T, h)
        scores = q @ k.transpose(-2, -1) / math.sqrt(cfg.head_dim)  # (B, H, T, T)
        if cfg.causal:
            scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        return scores.softmax(dim=-1)
