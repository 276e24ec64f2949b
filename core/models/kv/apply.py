"""One KV-saving method applied to a layer's keys, values and mask as the attention receives them: the
frontier's runs (core/models/frontier/run.py) and the Heatmaps tab's view of a frontier point
(core/models/inspect.py) change a layer through this one function, so the chart and the maps agree."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from core.models.evict.catalogue import PRESS_INFO
from core.models.evict.keep import kept_indices, n_kept
from core.models.evict.presses.layer_view import LayerView
from core.models.evict.presses.registry import PRESSES
from core.models.kv.latent import (
    LatentBasis,
    apply_rope,
    kv_rows,
    reconstruct,
    split_rows,
    undo_rope,
)
from core.models.kv.methods import KVMethod, eviction_of
from core.models.kv.quant import quant_dequant
from core.models.kv.window import window_keep, windowed_mask
from core.models.source import LoadedModel
from core.models.surgery import pool_kv

Rope = tuple[torch.Tensor, torch.Tensor]  # (cos, sin), each (1, T, h)
RopeAt = Callable[[torch.Tensor], Rope]  # positions (1, P) -> (cos, sin) (1, P, h)


def rope_of(m: LoadedModel, ids: torch.Tensor) -> Rope | None:
    """The rotary embedding's (cos, sin) for a causal model's positions 0..T-1; None for an encoder."""
    if m.kind != "causal":
        return None
    rot = m.model.model.rotary_emb
    positions = torch.arange(ids.shape[1])[None]
    return rot(torch.zeros(1, dtype=torch.float32), positions)


def rope_at_of(m: LoadedModel) -> RopeAt | None:
    """The model's rotary embedding at any positions (an eviction press looks ahead of the text); None: no RoPE."""
    if m.kind != "causal":
        return None
    rotary = m.model.model.rotary_emb

    def rope_at(positions: torch.Tensor) -> Rope:
        return rotary(torch.zeros(1, dtype=torch.float32), positions)

    return rope_at


def attend(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None,
           scaling: float) -> torch.Tensor:
    """torch's SDPA over (B, H, T, h) queries and (B, K, S, h) keys and values: (B, T, H, h), as
    transformers' attention functions return it. The frontier and the Heatmaps tab's frontier point both
    attend through it: a quantised cache's rounding would otherwise turn eager's last-bit differences into
    a loss that differs in the third decimal."""
    out = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=mask, scale=scaling,
                                                           enable_gqa=key.shape[1] != query.shape[1])
    return out.transpose(1, 2).contiguous()


def probabilities(query: torch.Tensor, key: torch.Tensor, mask: torch.Tensor | None, scaling: float) -> torch.Tensor:
    """softmax(q k^T * scale + mask) in float32: (B, H, T, S), what the heatmaps draw."""
    k = key.repeat_interleave(query.shape[1] // key.shape[1], dim=1)  # (B, H, S, h)
    scores = query.float() @ k.float().transpose(-2, -1) * scaling  # (B, H, T, S)
    if mask is not None:
        scores = scores + mask[:, :, :, : k.shape[2]].float()
    return scores.softmax(-1)


@dataclass
class KVChange:
    """`method` in every layer; `bases` (layer -> basis) for a latent method, `rope` for a causal model's
    keys, which a latent method compresses before the rotary embedding and re-rotates after."""

    method: KVMethod
    causal: bool
    bases: dict[int, LatentBasis] | None = None
    rope: Rope | None = None
    rope_at: RopeAt | None = None  # an eviction's press looks ahead (Expected Attention)
    kept: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)  # layer -> (K, S) kept, scores

    def __post_init__(self) -> None:
        if self.method.method.startswith("latent") and self.bases is None:
            raise ValueError("a latent KV method needs the fitted bases of every layer.")

    def apply(self, i: int, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None,
              n_queries: int | None = None,
              query: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Layer i's key, value (B, K, S, h) and additive mask (B, 1, T, S) or None, as the method leaves them;
        n_queries: T when the queries are the last T of the S keys (a continuation against a cache), else S.
        An eviction needs the queries (B, H, T, h), and its mask is per head (B, H, T, S)."""
        m = self.method
        if m.method == "evict":
            if query is None or self.rope_at is None:
                raise ValueError("an eviction needs the layer's queries and the model's rotary embedding.")
            return key, value, self._evict(i, query, key, value, mask)
        if m.method == "heads":
            return pool_kv(key, int(m.setting)), pool_kv(value, int(m.setting)), mask
        if m.method == "quant":
            return quant_dequant(key, str(m.setting)), quant_dequant(value, str(m.setting)), mask
        if m.method in ("window", "window_sinks"):
            keep = window_keep(n_queries or key.shape[2], key.shape[2], int(m.setting), m.sinks, self.causal)
            return key, value, windowed_mask(mask, keep, key.dtype)
        assert self.bases is not None
        if int(m.setting) == self.bases[i].width:  # full rank: the keys and values as they are
            return key, value, mask
        pre = undo_rope(key, *self.rope) if self.rope is not None else key
        rows = reconstruct(kv_rows(pre, value), self.bases[i], int(m.setting))  # (B, T, D)
        k, v = split_rows(rows, key.shape[1], key.shape[3])
        return (apply_rope(k, *self.rope) if self.rope is not None else k), v, mask

    def _evict(self, i: int, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
               mask: torch.Tensor | None) -> torch.Tensor:
        """The text's cache as the press leaves it, for every query: each KV head's evicted keys masked (a query
        always sees itself, as a new token sees its own key), the kept set and its scores kept for the maps."""
        assert self.rope_at is not None
        name, ratio = eviction_of(self.method.setting)
        T, S = query.shape[2], key.shape[2]
        if not self.causal or T != S:
            raise ValueError("an eviction is shown on a causal model's own text.")
        press = PRESSES[name]
        guard = press.protected(2**31)  # its sinks or observation window, whatever the length
        if S <= guard:  # the text is all sinks or observation window: nothing to choose from
            raise ValueError(f"{PRESS_INFO[name].short} always keeps {guard} tokens; paste a text longer than {guard} "
                             f"tokens (this one is {S}).")
        n = n_kept(S, ratio)
        if n < guard:  # kvpress would keep part of its window, chosen among equal scores
            most = math.floor((1 - guard / S) * 100) / 100
            raise ValueError(f"{PRESS_INFO[name].short} always keeps {guard} tokens, but ratio {ratio:.4g} of this "
                             f"{S}-token text keeps {n}: pick a point of ratio {most:g} or less, or paste a longer "
                             "text.")
        view = LayerView(query, key, value, query.shape[-1] ** -0.5, self.rope_at)
        scores = press.score(view, n)  # (B, K, S)
        keep = torch.zeros_like(scores, dtype=torch.bool).scatter_(-1, kept_indices(scores, n), True)  # (B, K, S)
        self.kept[i] = (keep[0].numpy().copy(), scores[0].float().numpy().copy())
        group = query.shape[1] // key.shape[1]
        seen = keep.repeat_interleave(group, dim=1)[:, :, None, :] | torch.eye(T, S, dtype=torch.bool)  # (B, H, T, S)
        blocked = torch.finfo(query.dtype).min
        evicted = torch.zeros(seen.shape, dtype=query.dtype).masked_fill(~seen, blocked)  # (B, H, T, S)
        if mask is None:
            return evicted
        if mask.dtype == torch.bool:
            mask = torch.zeros(mask.shape, dtype=query.dtype).masked_fill(~mask, blocked)
        return torch.maximum(mask[..., :S] + evicted, torch.tensor(blocked, dtype=query.dtype))
