"""H2O-style observed attention (Zhang et al., arXiv 2306.14048) as kvpress defines it
(kvpress/presses/observed_attention_press.py, 0.5.5): a key's score is the attention every query of the prefill
paid it, summed and divided by the number of queries that could see it (T - j for key j), averaged over each KV
head's group. kvpress's version keeps no recent window of its own (H2O's paper adds one): the recent tokens stay
because few queries could see them, so their mean is high. Per KV head."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.models.evict.presses.layer_view import LayerView


@dataclass(frozen=True)
class ObservedAttention:
    name: str = "h2o"
    depends_on_kept: bool = False

    def protected(self, length: int) -> int:
        return 0

    def score(self, view: LayerView, n_kept: int) -> torch.Tensor:
        T = view.length
        scores = view.query @ view.keys_per_query_head().transpose(2, 3) * view.scaling  # (B, H, T, T)
        causal = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)  # (T, T)
        probs = (scores + causal).softmax(-1, dtype=torch.float32).to(view.query.dtype)  # eager's weights
        seen_by = torch.arange(T, 0, -1, dtype=probs.dtype)  # (T,): queries at or after each key
        return view.group_mean(probs.sum(2) / seen_by)  # (B, H, T) -> (B, K, T)
