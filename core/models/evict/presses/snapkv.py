"""SnapKV (Li et al., arXiv 2404.14469) as kvpress defines it (kvpress/presses/snapkv_press.py, 0.5.5): the last
`window` queries (the observation window) vote with their attention over the earlier keys; the votes, averaged
over the window, are smoothed by an average pool of `kernel` neighbouring positions (zero-padded at the ends) and
averaged over each KV head's group; the window itself is always kept. Per KV head."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from core.models.evict.presses.layer_view import LayerView


@dataclass(frozen=True)
class SnapKV:
    window: int = 64
    kernel: int = 5
    name: str = "snapkv"
    depends_on_kept: bool = False

    def protected(self, length: int) -> int:
        return min(self.window, length)

    def score(self, view: LayerView, n_kept: int) -> torch.Tensor:
        if view.length <= self.window:
            raise ValueError(f"SnapKV's observation window is {self.window} tokens; give a context longer than that "
                             f"(it is {view.length}).")
        votes = view.window_attention(self.window).mean(dim=-2)  # (B, H, T - w)
        votes = F.avg_pool1d(votes, kernel_size=self.kernel, padding=self.kernel // 2, stride=1)  # (B, H, T - w)
        votes = view.group_mean(votes)  # (B, K, T - w)
        return F.pad(votes, (0, self.window), value=votes.max().item() + 1)  # (B, K, T): the window always kept
