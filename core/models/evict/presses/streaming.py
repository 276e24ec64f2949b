"""StreamingLLM (Xiao et al., arXiv 2309.17453) as kvpress defines it (kvpress/presses/streaming_llm_press.py,
0.5.5): keep the first n_sink tokens and the most recent ones; the n_pruned = T - n_kept tokens right after the
sinks are evicted. The same tokens in every head."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.models.evict.presses.layer_view import LayerView


@dataclass(frozen=True)
class StreamingLLM:
    n_sink: int = 4
    name: str = "streaming"
    depends_on_kept: bool = True

    def protected(self, length: int) -> int:
        return min(self.n_sink, length)

    def score(self, view: LayerView, n_kept: int) -> torch.Tensor:
        n_pruned = view.length - n_kept
        scores = torch.ones_like(view.key[..., 0])  # (B, K, T)
        scores[:, :, self.n_sink: self.n_sink + n_pruned] = 0
        return scores
