"""The quality figure of the compress protocol: the next N tokens teacher-forced against a cache, their positions
continuing from the context's length (as kvpress's generation continues), and the mean cross-entropy of
continuation tokens 2..N in nats (N - 1 predictions: the first token's logit came from the prefill).

An evicted cache runs through transformers' own forward and SDPA, its DynamicCache holding the kept tokens; a
layer method (fewer KV heads, latent, window, quantised) attends the whole cache changed as the method says
(core/models/kv/apply.py), the continuation's own keys included."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from core.models.inspect import _active, attention_modules
from core.models.kv.apply import KVChange, attend
from core.models.source import LoadedModel

Layers = list[tuple[torch.Tensor, torch.Tensor]]  # per layer: keys, values (B, K, n, h) in the cache


def continuation_loss(m: LoadedModel, layers: Layers, continuation: torch.Tensor, start: int,
                      change: KVChange | None = None) -> float:
    """Mean cross-entropy (nats) of continuation[1:] given the cache `layers` and continuation[:-1], the tokens at
    positions start..start+N-1."""
    from transformers import DynamicCache

    cache = DynamicCache(config=m.model.config)
    for i, (k, v) in enumerate(layers):
        cache.update(k, v, i)
    n = int(continuation.shape[1])
    positions = torch.arange(start, start + n)[None]  # (1, N)
    previous = m.model.config._attn_implementation
    try:
        with torch.inference_mode():
            if change is None:
                m.model.set_attn_implementation("sdpa")
                logits = m.model(input_ids=continuation, cache=cache, position_ids=positions).logits
            else:
                with _active(m, _Changed(m, change)):  # type: ignore[arg-type]
                    logits = m.model(input_ids=continuation, cache=cache, position_ids=positions).logits
    finally:
        m.model.set_attn_implementation(previous)
    return float(F.cross_entropy(logits[0, :-1].float(), continuation[0, 1:]))  # (N - 1, V) against (N - 1,)


class _Changed:
    """The attention function of a layer method's continuation: the method applied to the cache and the new keys."""

    def __init__(self, m: LoadedModel, change: KVChange) -> None:
        self.index = {id(mod): i for i, mod in enumerate(attention_modules(m))}
        self.change, self.layer = change, -1

    def __call__(self, module: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                 attention_mask: torch.Tensor | None, scaling: float | None = None, dropout: float = 0.0,
                 **kwargs: Any) -> tuple[torch.Tensor, None]:
        scaling = scaling if scaling is not None else query.shape[-1] ** -0.5
        key, value, mask = self.change.apply(self.index[id(module)], key, value, attention_mask, query.shape[2])
        return attend(query, key, value, mask, scaling), None
