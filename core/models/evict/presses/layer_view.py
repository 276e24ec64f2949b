"""What a press reads of one layer after its prefill: the attention function's own arguments (queries and keys
after the rotary embedding, as the cache holds the keys) and the model's rotary embedding for other positions.

kvpress's presses read the layer's input hidden states and recompute the queries from them; the queries the
attention function receives are the same tensors (q_proj, the QK norm where there is one, then RoPE), so a press
here reads those and undoes RoPE where it needs the queries before it (Expected Attention)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

RopeAt = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]  # positions (1, P) -> cos, sin (1, P, h)


@dataclass(frozen=True)
class LayerView:
    query: torch.Tensor  # (B, H, T, h), after RoPE
    key: torch.Tensor  # (B, K, T, h), after RoPE: the cached keys
    value: torch.Tensor  # (B, K, T, h)
    scaling: float  # the layer's softmax scale, 1 / sqrt(h)
    rope_at: RopeAt  # the model's rotary embedding at any positions

    @property
    def n_heads(self) -> int:
        return int(self.query.shape[1])

    @property
    def n_kv_heads(self) -> int:
        return int(self.key.shape[1])

    @property
    def group(self) -> int:
        return self.n_heads // self.n_kv_heads

    @property
    def length(self) -> int:
        return int(self.key.shape[2])

    def keys_per_query_head(self) -> torch.Tensor:
        """(B, H, T, h): each KV head's keys repeated for the query heads of its group (transformers' repeat_kv)."""
        return self.key.repeat_interleave(self.group, dim=1)  # (B, K, T, h) -> (B, H, T, h)

    def group_mean(self, scores: torch.Tensor) -> torch.Tensor:
        """(B, H, S) per query head -> (B, K, S), the mean over each KV head's group."""
        B, _H, S = scores.shape
        return scores.view(B, self.n_kv_heads, self.group, S).mean(2)  # (B, K, G, S) -> (B, K, S)

    def window_attention(self, window: int) -> torch.Tensor:
        """kvpress's SnapKVPress.compute_window_attention: the last `window` queries' softmax over every key (causal
        inside the window), float32, then only the keys before the window: (B, H, window, T - window)."""
        T = self.length
        q = self.query[:, :, -window:]  # (B, H, w, h)
        scores = q @ self.keys_per_query_head().transpose(2, 3) * self.scaling  # (B, H, w, T)
        blocked = torch.triu(torch.full((window, T), float("-inf")), diagonal=T - window + 1)  # (w, T)
        probs = (scores + blocked).softmax(-1, dtype=torch.float32).to(self.query.dtype)
        return probs[..., :-window]
