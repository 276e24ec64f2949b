"""Run a real model on a text and see its attention: every layer's heads, the queries and keys of
one layer as the attention sees them (after rotary embedding), and what changing that layer's
heads does to its attention, its output and the model's loss."""

from __future__ import annotations

import math
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch

from core.arch.config import short_int
from core.models.forward_cache import ForwardCache
from core.models.kv.apply import KVChange, attend, probabilities, rope_at_of, rope_of
from core.models.kv.latent import LatentBasis
from core.models.kv.methods import KVMethod, ModelShape, kv_bytes_per_token
from core.models.source import LoadedModel
from core.models.surgery import (
    js_per_head,
    kv_after,
    modified_attention,
    valid_head_counts,
    valid_kv_targets,
)

INTERFACE_NAME = "attention_sandbox"
MAX_MODEL_TOKENS = 1024  # attentions of every layer for T tokens take L*H*T^2 floats
KV_BYTES = 2  # the KV-cache figures assume fp16/bf16 serving


@dataclass(frozen=True)
class HeadChange:
    """What to change in the chosen layer (or every layer): None keeps the model's own value."""

    n_kv_heads: int | None = None
    n_heads: int | None = None
    all_layers: bool = False
    kv: KVMethod | None = None  # a frontier point's latent, window or quantised KV, in every layer

    def __post_init__(self) -> None:
        if self.kv is not None and (self.n_kv_heads is not None or self.n_heads is not None):
            raise ValueError("a KV method and a change of heads cannot be shown together; clear one of them.")
        if self.kv is not None and not self.all_layers:
            object.__setattr__(self, "all_layers", True)  # a frontier point changes every layer's cache

    def is_identity(self, m: LoadedModel) -> bool:
        return self.kv is None and (self.n_kv_heads in (None, m.n_kv_heads)) and (self.n_heads in (None, m.n_heads))


@dataclass
class Capture:
    query: torch.Tensor  # (B, H, T, h) as the attention sees it (after RoPE)
    key: torch.Tensor  # (B, K, T, h)
    value: torch.Tensor  # (B, K, T, h)
    mask: torch.Tensor | None  # additive (B, 1, T, T) or None
    scaling: float


@dataclass
class ForwardOut:
    attentions: list[np.ndarray]  # per layer (H_l, T, T) float32
    layer_output: torch.Tensor  # the chosen layer's attention-module output (B, T, d)
    capture: Capture | None
    loss: float | None  # causal models: next-token loss of the text
    embedding: torch.Tensor | None  # encoders: mean-pooled last hidden state (d,)
    layer_outputs: list[torch.Tensor] | None = None  # every layer's output (B, T, d), when asked for
    kept: dict[int, tuple[np.ndarray, np.ndarray]] | None = None  # an eviction's (K, T) kept keys and scores a layer

    def at_layer(self, layer: int) -> ForwardOut:
        """The same run seen from another layer (needs layer_outputs); no captured q/k/v there."""
        assert self.layer_outputs is not None
        return replace(self, layer_output=self.layer_outputs[layer], capture=None)


@dataclass
class InspectResult:
    model: str
    kind: str
    tokens: list[str]
    ids: list[int]  # the token ids the model read
    layer: int
    native_n_heads: int
    native_n_kv_heads: int
    n_heads: int
    n_kv_heads: int
    all_layers: bool
    before: ForwardOut
    after: ForwardOut | None
    js_per_head: list[float] = field(default_factory=list)
    js_divergence_mean: float | None = None
    output_rel_error: float | None = None
    loss_before: float | None = None
    loss_after: float | None = None
    embedding_cosine: float | None = None
    kv_cache_bytes_before: int = 0
    kv_cache_bytes_after: int = 0
    kv_method: str | None = None  # a frontier point's KV method in every layer, as its label says
    kv_note: str | None = None  # why that point changes nothing on this text, when it does not

    @property
    def perplexity_before(self) -> float | None:
        return math.exp(self.loss_before) if self.loss_before is not None else None

    @property
    def perplexity_after(self) -> float | None:
        return math.exp(self.loss_after) if self.loss_after is not None else None

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model, "kind": self.kind, "tokens": self.tokens, "layer": self.layer, "n_heads": self.n_heads,
            "n_kv_heads": self.n_kv_heads, "native_n_heads": self.native_n_heads,
            "native_n_kv_heads": self.native_n_kv_heads, "all_layers": self.all_layers,
            "js_divergence_mean": self.js_divergence_mean, "js_divergence_per_head": self.js_per_head or None,
            "output_rel_error": self.output_rel_error, "loss_before": self.loss_before, "loss_after": self.loss_after,
            "perplexity_before": self.perplexity_before, "perplexity_after": self.perplexity_after,
            "embedding_cosine": self.embedding_cosine,
            "kv_cache_bytes_before": self.kv_cache_bytes_before, "kv_cache_bytes_after": self.kv_cache_bytes_after,
            "kv_method": self.kv_method, "kv_note": self.kv_note,
        }


def attention_modules(m: LoadedModel) -> list[torch.nn.Module]:
    """Each layer's attention module (Llama: self_attn; BERT: attention, whose .self holds Q/K/V)."""
    base = m.model.model if m.kind == "causal" else m.model
    if m.kind == "causal":
        return [layer.self_attn for layer in base.layers]
    return [layer.attention for layer in base.encoder.layer]


def token_labels(m: LoadedModel, ids: list[int]) -> list[str]:
    """What each token reads as ('Ġchef' -> ' chef', '##ani' stays), never empty."""
    out = []
    for i in ids:
        text = m.tokenizer.decode([i])
        out.append(text if text.strip() else repr(text))
    return out


def encode_ids(m: LoadedModel, ids: list[int]) -> dict[str, torch.Tensor]:
    """Token ids as the model's input (the induction probe is built from ids, not text)."""
    limit = min(m.max_tokens, MAX_MODEL_TOKENS)
    if not ids or len(ids) > limit:
        raise ValueError(f"the input must have 1 to {limit} tokens, not {len(ids)}.")
    enc = {"input_ids": torch.tensor([ids]), "attention_mask": torch.ones(1, len(ids), dtype=torch.long)}
    if m.kind == "encoder":
        enc["token_type_ids"] = torch.zeros(1, len(ids), dtype=torch.long)
    return enc


def encode(m: LoadedModel, text: str) -> dict[str, torch.Tensor]:
    if not text.strip():
        raise ValueError("the text is empty; type a few words.")
    enc = m.tokenizer(text, return_tensors="pt")
    n = enc["input_ids"].shape[1]
    limit = min(m.max_tokens, MAX_MODEL_TOKENS)
    if n > limit:
        raise ValueError(f"the text is {n} tokens; {m.name} reads at most {limit} here. Shorten it.")
    return dict(enc)


class _Hooks:
    """The attention function transformers calls for every layer while a run is active."""

    def __init__(self, m: LoadedModel, change: HeadChange, layer: int, kv: KVChange | None = None) -> None:
        self.m, self.change, self.layer, self.kv = m, change, layer, kv
        self.index = {id(mod): i for i, mod in enumerate(attention_modules(m))}
        if m.kind == "encoder":
            self.index = {id(mod.self): i for i, mod in enumerate(attention_modules(m))}
        self.capture: Capture | None = None

    def __call__(self, module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
        i = self.index.get(id(module), -1)
        scaling = scaling if scaling is not None else query.shape[-1] ** -0.5
        if i == self.layer:
            self.capture = Capture(query.detach(), key.detach(), value.detach(),
                                   None if attention_mask is None else attention_mask.detach(), scaling)
        modify = not self.change.is_identity(self.m) and (self.change.all_layers or i == self.layer)
        if modify and self.kv is not None:  # the keys, values or mask the frontier's point attends, as it does
            key, value, attention_mask = self.kv.apply(i, key, value, attention_mask, query=query)
            return attend(query, key, value, attention_mask, scaling), probabilities(query, key, attention_mask,
                                                                                     scaling)
        if not modify:
            eager = sys.modules[type(module).__module__].eager_attention_forward
            return eager(module, query, key, value, attention_mask, scaling=scaling, dropout=0.0, **kwargs)
        return modified_attention(query, key, value, attention_mask, scaling,
                                  self.change.n_kv_heads or key.shape[1], self.change.n_heads or query.shape[1])


@contextmanager
def _active(m: LoadedModel, hooks: _Hooks, every_layer: bool = False):
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(INTERFACE_NAME, hooks)
    # Without a mask function of its own, transformers builds no mask for a custom attention
    # (a causal model would then see the future): use the eager path's additive masks.
    AttentionMaskInterface.register(INTERFACE_NAME, eager_mask)
    previous = m.model.config._attn_implementation
    m.model.set_attn_implementation(INTERFACE_NAME)
    outputs: dict[int, torch.Tensor] = {}
    modules = attention_modules(m)
    wanted = range(len(modules)) if every_layer else [hooks.layer]

    def keeper(i: int) -> Any:
        def keep_output(_module: torch.nn.Module, _inputs: Any, out: Any) -> None:  # None: the output stays
            outputs[i] = (out[0] if isinstance(out, tuple) else out).detach()
        return keep_output

    handles = [modules[i].register_forward_hook(keeper(i)) for i in wanted]
    try:
        yield outputs
    finally:
        for handle in handles:
            handle.remove()
        m.model.set_attn_implementation(previous)


def run(m: LoadedModel, enc: dict[str, torch.Tensor], layer: int, change: HeadChange = HeadChange(),
        every_layer: bool = False, bases: dict[int, LatentBasis] | None = None) -> ForwardOut:
    """One forward with every layer's attention; every_layer also keeps every layer's output, so the
    same run serves any chosen layer later (the cached unchanged run). `bases`: a latent KV change's."""
    kv = None
    if change.kv is not None:
        kv = KVChange(change.kv, m.kind == "causal", bases, rope_of(m, enc["input_ids"]), rope_at_of(m))
    hooks = _Hooks(m, change, layer, kv)
    with torch.inference_mode(), _active(m, hooks, every_layer) as outputs:
        if m.kind == "causal":
            out = m.model(**enc, labels=enc["input_ids"], output_attentions=True)
            loss, embedding = float(out.loss), None
        else:
            out = m.model(**enc, output_attentions=True)
            mask = enc["attention_mask"].unsqueeze(-1).float()  # (B, T, 1)
            embedding = (out.last_hidden_state * mask).sum(1)[0] / mask.sum()  # (d,)
            loss = None
    attentions = [a[0].float().numpy().copy() for a in out.attentions]  # each (H_l, T, T)
    every = [outputs[i] for i in range(len(outputs))] if every_layer else None
    kept = kv.kept if kv is not None and kv.kept else None
    return ForwardOut(attentions, outputs[layer], hooks.capture, loss, embedding, every, kept)


def recompute_attention(c: Capture, n_heads: int) -> torch.Tensor:
    """The layer's attention from its captured queries and keys: softmax(q k^T * scale + mask), (B, H, T, T)."""
    from core.kinds.standard.layer import repeat_kv

    k = repeat_kv(c.key, n_heads // c.key.shape[1])  # (B, H, T, h)
    scores = torch.matmul(c.query.float(), k.float().transpose(-2, -1)) * c.scaling  # (B, H, T, T)
    if c.mask is not None:
        scores = scores + c.mask[:, :, :, : k.shape[-2]].float()
    return scores.softmax(-1)


def kv_bytes(m: LoadedModel, n_tokens: int, kv_heads_per_layer: list[int]) -> int:
    return sum(2 * k * m.head_dim * n_tokens * KV_BYTES for k in kv_heads_per_layer)


def check_change(m: LoadedModel, change: HeadChange, layer: int) -> None:
    if not 0 <= layer < m.n_layers:
        raise ValueError(f"layer {short_int(layer)} does not exist; {m.name} has layers 0 to {m.n_layers - 1}.")
    if change.n_kv_heads is not None and change.n_kv_heads not in valid_kv_targets(m.n_kv_heads):
        if change.n_kv_heads > m.n_kv_heads:
            raise ValueError(f"{m.name} has {m.n_kv_heads} KV heads; more cannot be made without training. "
                             f"Choose one of {valid_kv_targets(m.n_kv_heads)}.")
        raise ValueError(f"{change.n_kv_heads} KV heads do not split {m.n_kv_heads} into equal groups; choose one of "
                         f"{valid_kv_targets(m.n_kv_heads)}.")
    kv = change.n_kv_heads or m.n_kv_heads
    if change.n_heads is not None and change.n_heads not in valid_head_counts(m.n_heads, kv, m.head_dim):
        raise ValueError(f"{change.n_heads} heads cannot re-split {m.n_heads} x {m.head_dim} with {kv} KV heads; "
                         f"choose one of {valid_head_counts(m.n_heads, kv, m.head_dim)}.")


def check_kv(m: LoadedModel, kv: KVMethod | None, bases: dict[int, LatentBasis] | None) -> None:
    """A frontier point's setting fits this model (a ValueError that says what to choose otherwise)."""
    if kv is None:
        return
    if kv.method == "heads":
        raise ValueError("fewer KV heads are shown through n_kv_heads, not as a KV method.")
    if kv.method == "evict" and m.kind != "causal":
        raise ValueError(f"{m.name} is an encoder: it keeps no KV cache to evict from.")
    if kv.method.startswith("latent"):
        width = 2 * m.n_kv_heads * m.head_dim
        if bases is None or set(bases) != set(range(m.n_layers)):
            raise ValueError("a latent KV point needs every layer's fitted basis; run the frontier's latent method.")
        if not (isinstance(kv.setting, int) and 1 <= kv.setting <= width):
            raise ValueError(f"a latent rank is 1 to {width} for {m.name}, not {kv.setting!r}.")
    if kv.method.startswith("window") and not (isinstance(kv.setting, int) and kv.setting >= 1):
        raise ValueError(f"a window holds at least 1 token, not {kv.setting!r}.")
    if kv.method == "quant" and str(kv.setting).startswith("q") and m.head_dim % 32:
        raise ValueError(f"{kv.setting} stores blocks of 32 values; {m.name}'s heads are {m.head_dim} wide.")


def inspect(m: LoadedModel, text: str, layer: int = 0, change: HeadChange = HeadChange(),
            ids: list[int] | None = None, cache: ForwardCache | None = None,
            bases: dict[int, LatentBasis] | None = None) -> InspectResult:
    """Run `text` (or token `ids`) before and after `change`. With a cache, the unchanged run of the
    same tokens is reused: another layer, or another change, reruns only the changed forward.
    `bases`: every layer's fitted basis, for a latent KV change."""
    check_change(m, change, layer)
    check_kv(m, change.kv, bases)
    enc = encode_ids(m, ids) if ids is not None else encode(m, text)
    ids = enc["input_ids"][0].tolist()
    if cache is None:
        before = run(m, enc, layer)
    else:
        cached = cache.get(m, ids)
        if cached is None:
            cached = cache.put(m, ids, run(m, enc, layer, every_layer=True))
        before = cached.at_layer(layer)
    kv_target = change.n_kv_heads or m.n_kv_heads
    heads = change.n_heads or m.n_heads
    kv_new = kv_after(m.n_heads, kv_target, heads)
    res = InspectResult(m.name, m.kind, token_labels(m, ids), ids, layer, m.n_heads, m.n_kv_heads, heads, kv_new,
                        change.all_layers, before, None, loss_before=before.loss)
    # an encoder reads its input at once and keeps no KV cache; a frontier point counts its K and V as a cache
    # would hold them, as the Frontier tab does
    T = len(ids) if m.kind == "causal" or change.kv is not None else 0
    res.kv_cache_bytes_before = kv_bytes(m, T, [m.n_kv_heads] * m.n_layers)
    # Re-splitting keeps the KV width (K' * h' = K * h): only pooling changes the cache.
    per_layer = [kv_target if (change.all_layers or i == layer) else m.n_kv_heads for i in range(m.n_layers)]
    res.kv_cache_bytes_after = kv_bytes(m, T, per_layer)
    if change.kv is not None:
        res.kv_method = change.kv.label
        shape = ModelShape(m.n_layers, m.n_heads, m.n_kv_heads, m.head_dim, m.d_model)
        res.kv_cache_bytes_after = round(kv_bytes_per_token(shape, change.kv, T) * T) if T else 0
        if change.kv.method.startswith("window"):
            # a causal query sees W recent tokens and S sinks; an encoder's centred window spans W either side
            kept = int(change.kv.setting) + (change.kv.sinks if m.kind == "causal" else 0)
            if kept >= len(ids):
                res.kv_note = (f"the text's {len(ids)} tokens all fit in the window, so nothing changes: paste a "
                               f"text longer than {kept} tokens to see it")
    if change.is_identity(m):
        return res
    after = None
    if cache is not None and change.all_layers:  # every layer changed: one run serves every layer shown
        after_key = ("after", change.n_kv_heads, change.n_heads, change.kv)
        cached_after = cache.derived.get(after_key)
        if cached_after is None:
            cached_after = cache.derived[after_key] = run(m, enc, layer, change, every_layer=True, bases=bases)
        after = cached_after.at_layer(layer)
    if after is None:
        after = run(m, enc, layer, change, bases=bases)
    res.after = after
    res.js_per_head = js_per_head(torch.from_numpy(before.attentions[layer]), torch.from_numpy(after.attentions[layer]))
    res.js_divergence_mean = float(np.mean(res.js_per_head))
    y0, y1 = before.layer_output.double(), after.layer_output.double()
    res.output_rel_error = float((y1 - y0).norm() / y0.norm())
    res.loss_after = after.loss
    if before.embedding is not None and after.embedding is not None:
        res.embedding_cosine = float(torch.nn.functional.cosine_similarity(before.embedding, after.embedding, dim=0))
    return res
