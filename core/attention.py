"""One attention layer with a fused QKV projection, in the style of gpt-fast.

Two forward paths that agree:
- the timing path runs torch's scaled_dot_product_attention (enable_gqa for GQA/MQA),
  never materialising a T x T matrix;
- the display path computes per-head probabilities explicitly, in float32, for at most
  MAX_DISPLAY_TOKENS tokens, because SDPA returns no weights.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from core.config import AttentionConfig

MAX_DISPLAY_TOKENS = 256


def _seeded_uniform_(t: torch.Tensor, bound: float, generator: torch.Generator) -> None:
    with torch.no_grad():
        t.uniform_(-bound, bound, generator=generator)


class AttentionLayer(nn.Module):
    """Fused W_qkv: d_model -> (H + 2K) * head_dim, then attention, then W_o: H*h -> d_model."""

    def __init__(
        self,
        cfg: AttentionConfig,
        device: torch.device | str = "cpu",
        dtype: torch.dtype = torch.float32,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.cfg = cfg
        self.n_heads, self.n_kv_heads, self.head_dim = cfg.n_heads, cfg.kv_heads, cfg.head_dim
        d, h = cfg.d_model, cfg.head_dim
        self.wqkv = nn.Linear(d, (cfg.n_heads + 2 * cfg.kv_heads) * h, bias=cfg.bias, device=device, dtype=dtype)
        self.wo = nn.Linear(cfg.n_heads * h, d, bias=cfg.bias, device=device, dtype=dtype)
        self.reset_parameters(seed)

    def reset_parameters(self, seed: int) -> None:
        """nn.Linear's default range (1/sqrt(fan_in)), drawn from a seeded generator."""
        device = self.wqkv.weight.device
        gen = torch.Generator(device=device).manual_seed(seed)
        for lin in (self.wqkv, self.wo):
            bound = 1.0 / math.sqrt(lin.in_features)
            _seeded_uniform_(lin.weight, bound, gen)
            if lin.bias is not None:
                _seeded_uniform_(lin.bias, bound, gen)

    @property
    def q_size(self) -> int:
        return self.n_heads * self.head_dim

    @property
    def kv_size(self) -> int:
        return self.n_kv_heads * self.head_dim

    def project_qkv(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x (B, T, d) -> q (B, H, T, h), k and v (B, K, T, h)."""
        B, T, _ = x.shape
        q, k, v = self.wqkv(x).split([self.q_size, self.kv_size, self.kv_size], dim=-1)
        q = q.view(B, T, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, h)
        k = k.view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)  # (B, K, T, h)
        v = v.view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)  # (B, K, T, h)
        return q, k, v

    def core(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
        """SDPA over (B, H, Tq, h) queries and (B, K, Tk, h) keys/values -> (B, H, Tq, h)."""
        gqa = self.n_kv_heads != self.n_heads
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)

    def merge_heads(self, o: torch.Tensor) -> torch.Tensor:
        """(B, H, T, h) -> W_o applied to (B, T, H*h) -> (B, T, d)."""
        B, _, T, _ = o.shape
        o = o.transpose(1, 2).reshape(B, T, self.q_size)  # (B, T, H*h)
        return self.wo(o)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The timing path: x (B, T, d) -> (B, T, d)."""
        q, k, v = self.project_qkv(x)
        return self.merge_heads(self.core(q, k, v, self.cfg.causal))

    def decode_step(self, x_new: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor) -> torch.Tensor:
        """One new token per sequence against the cache.

        x_new (B, 1, d); k_cache and v_cache (B, K, T, h) hold T positions, the last of which
        is overwritten with the new token's key and value (a full cache, read whole).
        """
        q, k, v = self.project_qkv(x_new)  # q (B, H, 1, h), k and v (B, K, 1, h)
        k_cache[:, :, -1:] = k
        v_cache[:, :, -1:] = v
        return self.merge_heads(self.core(q, k_cache, v_cache, causal=False))

    def attention_probs(self, x: torch.Tensor) -> torch.Tensor:
        """The display path: x (B, T, d) with T <= MAX_DISPLAY_TOKENS -> probs (B, H, T, T) float32."""
        T = x.shape[1]
        if T > MAX_DISPLAY_TOKENS:
            raise ValueError(
                f"the display path shows at most {MAX_DISPLAY_TOKENS} tokens, not {T}; shorten the text."
            )
        q, k, _ = self.project_qkv(x)
        q, k = q.float(), repeat_kv(k.float(), self.cfg.group_size)  # (B, H, T, h) each
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # (B, H, T, T)
        if self.cfg.causal:
            mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            scores = scores.masked_fill(mask, float("-inf"))
        return scores.softmax(dim=-1)

    def display_forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Probabilities (B, H, T, T) and the layer output (B, T, d), both from explicit softmax."""
        probs = self.attention_probs(x)
        _, _, v = self.project_qkv(x)
        v = repeat_kv(v.float(), self.cfg.group_size)  # (B, H, T, h)
        o = (probs @ v).to(x.dtype)  # (B, H, T, h)
        return probs, self.merge_heads(o)


def repeat_kv(t: torch.Tensor, group_size: int) -> torch.Tensor:
    """(B, K, T, h) -> (B, K*group_size, T, h): each KV head serves group_size query heads in turn."""
    if group_size == 1:
        return t
    return t.repeat_interleave(group_size, dim=1)


class SeparateQKV(nn.Module):
    """Three projections holding exactly the fused layer's weights (the seeds' follow-up)."""

    def __init__(self, layer: AttentionLayer) -> None:
        super().__init__()
        sizes = [layer.q_size, layer.kv_size, layer.kv_size]
        d = layer.cfg.d_model
        w = layer.wqkv.weight
        self.q, self.k, self.v = (
            nn.Linear(d, n, bias=layer.wqkv.bias is not None, device=w.device, dtype=w.dtype) for n in sizes
        )
        with torch.no_grad():
            for lin, wpart in zip((self.q, self.k, self.v), w.split(sizes, dim=0), strict=True):
                lin.weight.copy_(wpart)
            if layer.wqkv.bias is not None:
                for lin, bpart in zip((self.q, self.k, self.v), layer.wqkv.bias.split(sizes), strict=True):
                    lin.bias.copy_(bpart)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.q(x), self.k(x), self.v(x)
