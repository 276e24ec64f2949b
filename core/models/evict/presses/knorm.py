"""Key norm (Devoto et al., arXiv 2406.11430) as kvpress defines it (kvpress/presses/knorm_press.py, 0.5.5): keep
the keys of smallest L2 norm (a low-norm key draws high attention), in float32 at least. Per KV head."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.models.evict.presses.layer_view import LayerView


@dataclass(frozen=True)
class Knorm:
    name: str = "knorm"
    depends_on_kept: bool = False

    def protected(self, length: int) -> int:
        return 0

    def score(self, view: LayerView, n_kept: int) -> torch.Tensor:
        dtype = torch.promote_types(view.key.dtype, torch.float32)
        return -torch.linalg.vector_norm(view.key, dim=-1, dtype=dtype)  # (B, K, T)
