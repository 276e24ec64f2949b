"""Which tokens a press keeps: kvpress's ScorerPress.compress (kvpress/presses/scorer_press.py, 0.5.5) keeps each
KV head's n_kept highest scores, n_kept = max(1, int(T * (1 - ratio))) (kvpress/utils.py compute_n_kept)."""

from __future__ import annotations

import torch

from core.models.evict.ratio import n_kept

__all__ = ["gather_tokens", "kept_indices", "n_kept"]


def kept_indices(scores: torch.Tensor, kept: int) -> torch.Tensor:
    """(B, K, T) scores -> (B, K, kept) positions of the highest, in ascending order (the set is what counts:
    attention over a cache does not depend on its order)."""
    return scores.topk(kept, dim=-1).indices.sort(dim=-1).values


def gather_tokens(x: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
    """x (B, K, T, h), indices (B, K, n) -> (B, K, n, h): each KV head's kept tokens."""
    return x.gather(2, indices.unsqueeze(-1).expand(-1, -1, -1, x.shape[-1])).contiguous()  # (B, K, n, 1) -> (B, K, n, h)
