"""The KV bytes an engine keeps for one token of one layer on one GPU of a tensor-parallel group, and the layers
grouped by the cache they keep (full, or a sliding window of W): what every engine's rule starts from."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from core.arch.model import Architecture
from core.kinds.registry import kind_of


@dataclass(frozen=True)
class LayerCache:
    window: int | None  # None: the layer keeps every token
    bytes_per_token: int  # one layer's K and V (or latent) a token, on one GPU
    layers: int  # layers of the model that keep this cache


def layer_caches(arch: Architecture, tp: int, kv_format: str, engine: str = "vllm") -> list[LayerCache]:
    """The model's attention layers by the cache each keeps a token on one GPU as engine keeps it (full layers
    first); a hybrid stack's recurrent layers keep none (core/plan/engines/state.py holds their state)."""
    counts = Counter((s.window, kind_of(s).engine_cache_bytes_per_token(s, tp, kv_format, engine))
                     for s in arch.layers if not kind_of(s).has_state)
    return sorted((LayerCache(w, b, n) for (w, b), n in counts.items()), key=lambda c: (c.window is not None,
                                                                                         c.window or 0))


def cdiv(a: int, b: int) -> int:
    return -(-a // b)
