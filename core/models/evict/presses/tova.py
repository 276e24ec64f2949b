"""TOVA (Oren et al., arXiv 2401.06104) as kvpress defines it (kvpress/presses/tova_press.py, 0.5.5): the last
query's attention over the earlier keys, averaged over all heads, so every KV head of a layer keeps the same
tokens; the last token itself is always kept. One set a layer, not a head."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from core.models.evict.presses.layer_view import LayerView


@dataclass(frozen=True)
class TOVA:
    name: str = "tova"
    depends_on_kept: bool = False

    def protected(self, length: int) -> int:
        return min(1, length)

    def score(self, view: LayerView, n_kept: int) -> torch.Tensor:
        last = view.window_attention(1)  # (B, H, 1, T - 1)
        scores = last.mean(1).repeat(1, view.n_kv_heads, 1)  # (B, 1, T - 1) -> (B, K, T - 1)
        return F.pad(scores, (0, 1), value=scores.max().item() + 1)  # (B, K, T): the last token always kept
