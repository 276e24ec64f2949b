"""The heatmaps' projections: only W_q and W_k of AttentionLayer(cfg, seed), drawn from the same
seeded stream, so the heatmaps equal the full layer's display path at a fraction of its memory
(2*d^2 instead of 4*d^2 floats under MHA, none of W_v and W_o kept)."""

from __future__ import annotations

import math

import torch

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.kinds.display_guard import check_display_bytes
from core.kinds.standard.layer import MAX_DISPLAY_TOKENS, SINK_BOUND, repeat_kv
from core.kinds.standard.masking import allowed_keys, softmax_with_sinks

CHUNK_ELEMENTS = 2**24  # draw skipped parts of the stream in pieces of this many numbers


def _skip(gen: torch.Generator, n: int) -> None:
    """Advance the generator past n uniform draws without keeping them."""
    while n > 0:
        k = min(n, CHUNK_ELEMENTS)
        torch.empty(k).uniform_(generator=gen)
        n -= k


class DisplayProjector:
    """W_q, W_k (and their biases, norms and sinks) of AttentionLayer(cfg, seed, spec): the layer's heatmaps,
    its window's band and each row's sink share, equal to the full layer's display path."""

    def __init__(self, cfg: AttentionConfig, seed: int = 0, spec: LayerSpec | None = None) -> None:
        spec = spec or cfg.layer_spec()
        need = (spec.n_heads + spec.n_kv_heads) * spec.head_dim * (cfg.d_model + 1) * 4  # W_q and W_k with biases
        check_display_bytes(need, f"d_model {cfg.d_model}, {spec.n_heads} + {spec.n_kv_heads} heads of width "
                            f"{spec.head_dim}", "head_dim")
        self.cfg = cfg
        self.spec = spec
        d, h = cfg.d_model, spec.head_dim
        qk, v = (spec.n_heads + spec.n_kv_heads) * h, spec.n_kv_heads * h
        bound = 1.0 / math.sqrt(d)
        gen = torch.Generator().manual_seed(seed)
        # AttentionLayer draws wqkv.weight (q rows, k rows, v rows), wqkv.bias, wo.weight, wo.bias, then
        # the sinks, in one stream.
        self.weight = torch.empty(qk, d).uniform_(-bound, bound, generator=gen)  # (H*h + K*h, d)
        if spec.biases != "none" or spec.sinks:
            _skip(gen, v * d)  # the v rows, drawn only to reach what follows them
        self.bias = None
        if spec.biases != "none":
            self.bias = torch.empty(qk).uniform_(-bound, bound, generator=gen)  # (H*h + K*h,)
            _skip(gen, v)
        self.sinks = None
        if spec.sinks:
            _skip(gen, spec.n_heads * h * d + (d if spec.biases == "all" else 0))
            self.sinks = torch.empty(spec.n_heads).uniform_(-SINK_BOUND, SINK_BOUND, generator=gen)  # (H,)

    def probs(self, x: torch.Tensor) -> torch.Tensor:
        """x (B, T, d) float32 with T <= MAX_DISPLAY_TOKENS -> per-head probabilities (B, H, T, T)."""
        return self.probs_and_sinks(x)[0]

    def probs_and_sinks(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Probabilities (B, H, T, T) and each row's sink share (B, H, T), None without sinks."""
        spec = self.spec
        B, T, _ = x.shape
        if T > MAX_DISPLAY_TOKENS:
            raise ValueError(f"the display path shows at most {MAX_DISPLAY_TOKENS} tokens, not {T}; shorten the text.")
        qk = torch.nn.functional.linear(x, self.weight, self.bias)  # (B, T, (H+K)*h)
        q, k = qk.split([spec.n_heads * spec.head_dim, spec.n_kv_heads * spec.head_dim], dim=-1)
        q = q.reshape(B, T, spec.n_heads, spec.head_dim).transpose(1, 2)  # (B, H, T, h)
        k = k.reshape(B, T, spec.n_kv_heads, spec.head_dim).transpose(1, 2)  # (B, K, T, h)
        if spec.qk_norm:  # RMSNorm with unit weights, as a fresh layer holds it
            q, k = (torch.nn.functional.rms_norm(t, (spec.head_dim,), eps=1e-6) for t in (q, k))
        k = repeat_kv(k, spec.group_size)  # (B, H, T, h)
        scores = q @ k.transpose(-2, -1)  # (B, H, T, T)
        scores = scores / math.sqrt(spec.head_dim) if spec.scale is None else scores * spec.scale
        window = spec.window if self.cfg.causal else None
        return softmax_with_sinks(scores, allowed_keys(T, T, self.cfg.causal, window), self.sinks)
