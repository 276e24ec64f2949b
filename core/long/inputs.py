"""The queries and keys a long map reads: a random-weight layer's over seeded long inputs, or one
layer of a real model over a long text, captured after RoPE from a forward that runs SDPA in every layer and
stops once the chosen layer has been seen (no T x T matrix anywhere, no layer after it run)."""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.inputs.embedding import EMBED_STD, sinusoidal_positions
from core.kinds.registry import kind_of
from core.kinds.standard.display import DisplayProjector
from core.long.map import MAX_TOKENS, Rule, Stopped

CHUNK_TOKENS = 1024  # inputs are drawn and projected this many positions at a time, each with a seed of its own
LONG_INTERFACE = "attention_sandbox_long"


@dataclass
class LayerInputs:
    q: torch.Tensor  # (H, T, h) as the layer's softmax sees them
    k: torch.Tensor  # (K, T, h)
    rule: Rule
    tokens: list[str]  # a label per position (a real model's tokens; "#i" for random inputs)
    what: str  # "SmolLM2-135M, layer 10 of 30 (global)" / "random weights, layer 0 (local W=1,024)"


def check_tokens(n_tokens: object, limit: int = MAX_TOKENS) -> int:
    if isinstance(n_tokens, bool) or not isinstance(n_tokens, int) or not 2 <= n_tokens <= limit:
        raise ValueError(f"the long map takes 2 to {limit:,} tokens, not {n_tokens!r}; choose fewer tokens.")
    return n_tokens


def positions(start: int, n: int, d_model: int) -> torch.Tensor:
    """The position code of positions start..start+n-1, (n, d): random-weight mode's (core/inputs/embedding.py)."""
    return sinusoidal_positions(n, d_model, start)


def design_inputs(cfg: AttentionConfig, spec: LayerSpec, n_tokens: int, seed: int = 0, layer: int = 0,
                  device: torch.device | str = "cpu", should_stop: Callable[[], bool] | None = None) -> LayerInputs:
    """A random-weight layer (the display path's W_q and W_k, core/kinds/standard/display.py) over n_tokens seeded inputs: random
    token vectors plus the position code, as random-weight mode embeds a text. Each CHUNK_TOKENS positions have a
    seed of their own, so a position's input does not depend on how many are drawn."""
    check_tokens(n_tokens)
    if spec.kind != "standard":
        raise ValueError(f"the long map draws standard layers (MHA, GQA, MQA with windows and sinks), not "
                         f"{kind_of(spec).title}: choose standard attention for it.")
    proj = DisplayProjector(cfg, seed, spec)
    d, H, K, h = cfg.d_model, spec.n_heads, spec.n_kv_heads, spec.head_dim
    weight = proj.weight.to(device)
    bias = proj.bias.to(device) if proj.bias is not None else None
    q = torch.empty(H, n_tokens, h, device=device)
    k = torch.empty(K, n_tokens, h, device=device)
    for start in range(0, n_tokens, CHUNK_TOKENS):
        if should_stop is not None and should_stop():
            raise Stopped
        n = min(CHUNK_TOKENS, n_tokens - start)
        gen = torch.Generator().manual_seed(seed * 1_000_003 + start // CHUNK_TOKENS)
        x = torch.randn(n, d, generator=gen) * EMBED_STD + math.sqrt(2.0) * positions(start, n, d)  # (n, d)
        qk = torch.nn.functional.linear(x.to(device), weight, bias)  # (n, (H+K)*h)
        qc, kc = qk.split([H * h, K * h], dim=-1)
        qc = qc.reshape(n, H, h).transpose(0, 1)  # (H, n, h)
        kc = kc.reshape(n, K, h).transpose(0, 1)  # (K, n, h)
        if spec.qk_norm:
            qc, kc = (torch.nn.functional.rms_norm(t, (h,), eps=1e-6) for t in (qc, kc))
        q[:, start:start + n], k[:, start:start + n] = qc, kc
    window = spec.window if cfg.causal else None
    rule = Rule(spec.softmax_scale, cfg.causal, window, proj.sinks)
    return LayerInputs(q, k, rule, [f"#{i}" for i in range(n_tokens)],
                       f"random weights, layer {layer} ({spec.kind_label}), {n_tokens:,} seeded inputs")


class _Captured(Exception):
    """Raised inside the forward once the chosen layer's queries and keys are kept: nothing after it runs."""


class _Capture:
    """The attention function transformers calls for every layer: SDPA, and at the chosen layer a copy of q and k."""

    def __init__(self, modules: list[Any], layer: int, should_stop: Callable[[], bool] | None, stop_after: bool) -> None:
        self.index = {id(mod): i for i, mod in enumerate(modules)}
        self.layer, self.should_stop, self.stop_after = layer, should_stop, stop_after
        self.q: torch.Tensor | None = None
        self.k: torch.Tensor | None = None
        self.scaling = 1.0
        self.sinks: torch.Tensor | None = None
        self.window: int | None = None

    def __call__(self, module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        if self.should_stop is not None and self.should_stop():
            raise Stopped
        i = self.index.get(id(module), -1)
        if i == self.layer:
            self.q, self.k = query.detach()[0], key.detach()[0]  # (H, T, h), (K, T, h)
            self.scaling = float(scaling if scaling is not None else query.shape[-1] ** -0.5)
            sinks = getattr(module, "sinks", None)
            self.sinks = sinks.detach().float() if isinstance(sinks, torch.Tensor) else None
            self.window = kwargs.get("sliding_window") or getattr(module, "sliding_window", None)
            if self.stop_after:
                raise _Captured
        return sdpa_attention_forward(module, query, key, value, attention_mask, scaling=scaling, dropout=0.0, **kwargs)


@contextmanager
def sdpa_hooks(m: Any, hooks: Any):
    """Run m's forward with `hooks` as every layer's attention (SDPA masks: no T x T mask for a causal model)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(LONG_INTERFACE, hooks)
    AttentionMaskInterface.register(LONG_INTERFACE, sdpa_mask)
    previous = m.model.config._attn_implementation
    m.model.set_attn_implementation(LONG_INTERFACE)
    try:
        yield
    finally:
        m.model.set_attn_implementation(previous)


def model_inputs(m: Any, ids: list[int], layer: int, labels: list[str],
                 should_stop: Callable[[], bool] | None = None) -> LayerInputs:
    """One layer of a loaded real model (core/models/source.py's LoadedModel) over token ids."""
    from core.models.inspect import attention_modules

    check_tokens(len(ids), m.max_tokens)
    if not 0 <= layer < m.n_layers:
        raise ValueError(f"layer {layer} does not exist; {m.name} has layers 0 to {m.n_layers - 1}.")
    modules = attention_modules(m)
    if m.kind == "encoder":
        modules = [mod.self for mod in modules]
    hooks = _Capture(modules, layer, should_stop, stop_after=True)
    enc = {"input_ids": torch.tensor([ids]), "attention_mask": torch.ones(1, len(ids), dtype=torch.long)}
    if m.kind == "encoder":
        enc["token_type_ids"] = torch.zeros(1, len(ids), dtype=torch.long)
    with torch.inference_mode(), sdpa_hooks(m, hooks):
        try:
            m.model(**enc, use_cache=False) if m.kind == "causal" else m.model(**enc)
        except _Captured:
            pass
    if hooks.q is None or hooks.k is None:
        raise ValueError(f"{m.name}'s layer {layer} was not reached; its attention is not one the app can read.")
    causal = m.kind == "causal"
    rule = Rule(hooks.scaling, causal, hooks.window if causal else None, hooks.sinks)
    kind = "global" if rule.window is None else f"local W={rule.window:,}"
    return LayerInputs(hooks.q.float(), hooks.k.float(), rule, labels,
                       f"{m.name}, layer {layer} of {m.n_layers} ({kind}), {len(ids):,} tokens")


class _EveryLayer:
    """Every layer's attention function: SDPA, and the layer's long-map figures from its queries and keys, which are
    then dropped (no layer's q and k outlive its call)."""

    def __init__(self, modules: list[Any], causal: bool, band: int | None, should_stop: Callable[[], bool] | None,
                 progress: Callable[[int], None] | None) -> None:
        self.index = {id(mod): i for i, mod in enumerate(modules)}
        self.causal, self.band, self.should_stop, self.progress = causal, band, should_stop, progress
        self.stats: dict[int, Any] = {}

    def __call__(self, module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        from core.long.map import long_map

        if self.should_stop is not None and self.should_stop():
            raise Stopped
        i = self.index.get(id(module), -1)
        if i >= 0 and i not in self.stats:
            sinks = getattr(module, "sinks", None)
            window = kwargs.get("sliding_window") or getattr(module, "sliding_window", None)
            rule = Rule(float(scaling if scaling is not None else query.shape[-1] ** -0.5), self.causal,
                        window if self.causal else None, sinks.detach().float() if isinstance(sinks, torch.Tensor) else None)
            T = query.shape[-2]
            self.stats[i] = long_map(query.detach()[0].float(), key.detach()[0].float(), rule, T, "max", band=self.band,
                                     should_stop=self.should_stop).stats  # one cell: only the figures are wanted
            if self.progress is not None:
                self.progress(i)
        return sdpa_attention_forward(module, query, key, value, attention_mask, scaling=scaling, dropout=0.0, **kwargs)


LAYER_FIGURES = ("sink", "band", "beyond", "distance")


def model_layer_stats(m: Any, ids: list[int], band: int | None = None, should_stop: Callable[[], bool] | None = None,
                      progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Every layer's long-map figures over token ids, in one forward: {figure: (L, H) array} for the figures of
    LAYER_FIGURES (core/long/map.py's HeadStats), and band_width."""
    import numpy as np

    from core.models.inspect import attention_modules

    check_tokens(len(ids), m.max_tokens)
    modules = attention_modules(m)
    if m.kind == "encoder":
        modules = [mod.self for mod in modules]
    hooks = _EveryLayer(modules, m.kind == "causal", band, should_stop, progress)
    enc = {"input_ids": torch.tensor([ids]), "attention_mask": torch.ones(1, len(ids), dtype=torch.long)}
    if m.kind == "encoder":
        enc["token_type_ids"] = torch.zeros(1, len(ids), dtype=torch.long)
    with torch.inference_mode(), sdpa_hooks(m, hooks):
        m.model(**enc, use_cache=False) if m.kind == "causal" else m.model(**enc)
    if len(hooks.stats) != m.n_layers:
        raise ValueError(f"{m.name}'s attention ran in {len(hooks.stats)} of its {m.n_layers} layers; the app cannot "
                         "read this model's every layer.")
    layers = [hooks.stats[i] for i in range(m.n_layers)]
    out: dict[str, Any] = {name: np.stack([getattr(s, name) for s in layers]) for name in LAYER_FIGURES}
    out["band_width"] = layers[0].band_width
    return out
