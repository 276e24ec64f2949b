"""Sliding-window attention imposed on a trained model, with or without attention sinks (StreamingLLM,
Xiao et al. 2023): a query sees the last W keys (itself included) and the first S tokens of the text.

A causal model's query i sees key j when j <= i and (i - j < W or j < S); an encoder's query sees key j
when |i - j| < W or j < S (its window is centred). The cache of a causal layer holds min(T, W + S)
tokens at context T (core/kinds/standard/band.py's cached_tokens with W + S).
"""

from __future__ import annotations

import torch


def window_keep(n_queries: int, n_keys: int, window: int, sinks: int = 0, causal: bool = True) -> torch.Tensor:
    """(T, S) bool: which keys each query may see."""
    if window < 1 or sinks < 0:
        raise ValueError(f"the window must be at least 1 token and sinks at least 0, not W={window}, S={sinks}.")
    i = torch.arange(n_queries)[:, None] + (n_keys - n_queries)  # a query's position among the keys
    j = torch.arange(n_keys)[None, :]
    near = (i - j < window) & (j <= i) if causal else (i - j).abs() < window
    return near | (j < sinks) & (j <= i if causal else torch.ones_like(near))


def windowed_mask(mask: torch.Tensor | None, keep: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """An additive mask (B, 1, T, S) (or None: nothing masked) with every key outside `keep` masked too."""
    blocked = torch.finfo(dtype).min
    window = torch.zeros(keep.shape, dtype=dtype).masked_fill(~keep, blocked)[None, None]  # (1, 1, T, S)
    if mask is None:
        return window
    if mask.dtype == torch.bool:
        mask = torch.zeros(mask.shape, dtype=dtype).masked_fill(~mask, blocked)
    return torch.maximum(mask[..., : keep.shape[-1]] + window, torch.tensor(blocked, dtype=dtype))
