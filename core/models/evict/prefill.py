"""One prefill of the context, kept per layer as a press reads it (core/models/evict/presses/layer_view.py): the
attention function sees every layer's queries, keys and values, attends them with torch's SDPA, and keeps them.
Every press and every ratio then scores and slices this one prefill, as kvpress's hook does after each layer's
forward (the prefill itself attends the whole context, compressed or not)."""

from __future__ import annotations

from typing import Any

import torch

from core.models.evict.presses.layer_view import LayerView
from core.models.evict.presses.press import Press
from core.models.inspect import _active, attention_modules
from core.models.kv.apply import attend, rope_at_of
from core.models.source import LoadedModel


class _Keep:
    """The attention function while the prefill runs: SDPA, and the layer's tensors kept."""

    def __init__(self, m: LoadedModel) -> None:
        self.index = {id(mod): i for i, mod in enumerate(attention_modules(m))}
        self.layer = -1  # _active's output hooks are not needed
        self.kept: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor, float]] = {}

    def __call__(self, module: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                 attention_mask: torch.Tensor | None, scaling: float | None = None, dropout: float = 0.0,
                 **kwargs: Any) -> tuple[torch.Tensor, None]:
        scaling = scaling if scaling is not None else query.shape[-1] ** -0.5
        self.kept[self.index[id(module)]] = (query, key, value, scaling)
        return attend(query, key, value, attention_mask, scaling), None


class Prefill:
    """The context's layers after one forward: views[i] is layer i's LayerView."""

    def __init__(self, m: LoadedModel, context: torch.Tensor) -> None:
        if m.kind != "causal":
            raise ValueError(f"{m.name} is an encoder: it keeps no KV cache to evict from; open a causal model "
                             "(SmolLM2-135M).")
        self.m, self.length = m, int(context.shape[1])
        keep = _Keep(m)
        with torch.inference_mode(), _active(m, keep):  # type: ignore[arg-type]
            m.model(input_ids=context, use_cache=False)
        rope_at = rope_at_of(m)
        assert rope_at is not None  # a causal model's
        self.views = [LayerView(q, k, v, s, rope_at) for q, k, v, s in (keep.kept[i] for i in range(len(keep.kept)))]
        self._scores: dict[tuple[str, int], torch.Tensor] = {}

    def scores(self, press: Press, layer: int, kept: int) -> torch.Tensor:
        """press.score of one layer, computed once a press (StreamingLLM's depends on `kept`: never kept)."""
        key = (press.name, layer)
        if press.depends_on_kept:
            with torch.inference_mode():
                return press.score(self.views[layer], kept)
        if key not in self._scores:
            with torch.inference_mode():
                self._scores[key] = press.score(self.views[layer], kept)
        return self._scores[key]
