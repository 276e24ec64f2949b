"""What every eviction method is: a name, a score per KV head and token (higher is kept), and the tokens it never
evicts. kvpress's ScorerPress keeps each KV head's top n_kept scores (core/models/evict/keep.py)."""

from __future__ import annotations

from typing import Protocol

import torch

from core.models.evict.presses.layer_view import LayerView


class Press(Protocol):
    name: str  # the CLI's name, its entry in core/models/evict/catalogue.py (label, kvpress file, tip)
    depends_on_kept: bool  # True: its scores change with the tokens kept (StreamingLLM's)

    def protected(self, length: int) -> int:
        """Tokens the method always keeps (its sinks, its observation window): a budget below this keeps part of
        them only, chosen among equal scores."""
        ...

    def score(self, view: LayerView, n_kept: int) -> torch.Tensor:
        """(B, K, T): how much each KV head wants each cached token (n_kept: StreamingLLM's scores depend on it)."""
        ...
