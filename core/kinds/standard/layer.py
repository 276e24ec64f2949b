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

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.inputs.tokens import MAX_DISPLAY_TOKENS  # re-exported: the layer code reads it here
from core.kinds.standard.band_kernel import blockwise_band_attention
from core.kinds.standard.flex_band import flex_band_attention
from core.kinds.standard.masking import allowed_keys, sdpa_inputs, softmax_with_sinks

SINK_BOUND = 1.0  # random sink logits are drawn from U(-1, 1), after every projection's weights


def _seeded_uniform_(t: torch.Tensor, bound: float, generator: torch.Generator) -> None:
    with torch.no_grad():
        t.uniform_(-bound, bound, generator=generator)


class AttentionLayer(nn.Module):
    """Fused W_qkv: d_model -> (H + 2K) * head_dim, then attention, then W_o: H*h -> d_model.

    One layer of cfg: spec (default cfg.layer_spec(), layer 0) says its window, sinks, q/k norm, biases
    and softmax scale; a window or sinks pick their kernel in core() (see kernel_for)."""

    def __init__(
        self,
        cfg: AttentionConfig,
        device: torch.device | str = "cpu",
        dtype: torch.dtype = torch.float32,
        seed: int = 0,
        spec: LayerSpec | None = None,
    ) -> None:
        super().__init__()
        self.cfg = cfg
        self.spec = spec = spec or cfg.layer_spec()
        self.n_heads, self.n_kv_heads, self.head_dim = spec.n_heads, spec.n_kv_heads, spec.head_dim
        d, h = cfg.d_model, spec.head_dim
        qkv_bias, o_bias = spec.biases != "none", spec.biases == "all"
        self.wqkv = nn.Linear(d, (spec.n_heads + 2 * spec.n_kv_heads) * h, bias=qkv_bias, device=device, dtype=dtype)
        self.wo = nn.Linear(spec.n_heads * h, d, bias=o_bias, device=device, dtype=dtype)
        # The output gate (Qwen3-Next): q_proj's second half, sigmoid(x W_gate) times the heads' output before W_o.
        self.wgate = (nn.Linear(d, spec.n_heads * h, bias=qkv_bias, device=device, dtype=dtype) if spec.output_gate
                      else None)
        self.q_norm = nn.RMSNorm(h, eps=1e-6, device=device, dtype=dtype) if spec.qk_norm else None
        self.k_norm = nn.RMSNorm(h, eps=1e-6, device=device, dtype=dtype) if spec.qk_norm else None
        self.sinks = nn.Parameter(torch.empty(spec.n_heads, device=device, dtype=dtype)) if spec.sinks else None
        # A window or sinks run on flex_attention (compiled) on CUDA, blockwise or masked SDPA elsewhere.
        self.use_flex = torch.device(device).type == "cuda" and (spec.window is not None or spec.sinks)
        self.flex_error = ""  # why flex_attention fell back to SDPA, when it did
        self.reset_parameters(seed)

    def reset_parameters(self, seed: int) -> None:
        """nn.Linear's default range (1/sqrt(fan_in)), drawn from a seeded generator; then the sinks'
        logits (U(-1, 1)); the norms' weights start at one."""
        device = self.wqkv.weight.device
        gen = torch.Generator(device=device).manual_seed(seed)
        for lin in (self.wqkv, self.wo):
            bound = 1.0 / math.sqrt(lin.in_features)
            _seeded_uniform_(lin.weight, bound, gen)
            if lin.bias is not None:
                _seeded_uniform_(lin.bias, bound, gen)
        if self.sinks is not None:
            _seeded_uniform_(self.sinks, SINK_BOUND, gen)
        if self.wgate is not None:  # drawn last, so a gated layer's other weights are the ungated one's
            _seeded_uniform_(self.wgate.weight, 1.0 / math.sqrt(self.wgate.in_features), gen)
            if self.wgate.bias is not None:
                _seeded_uniform_(self.wgate.bias, 1.0 / math.sqrt(self.wgate.in_features), gen)

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
        if self.q_norm is not None and self.k_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)  # over head_dim, per head
        return q, k, v

    def core(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, offset: int = 0) -> torch.Tensor:
        """SDPA over (B, H, Tq, h) queries and (B, K, Tk, h) keys/values -> (B, H, Tq, h); query i sits at
        position offset + i (a decode step's one query: offset Tk - 1)."""
        gqa = self.n_kv_heads != self.n_heads
        window = self.spec.window if causal or offset else None
        Tq, Tk = q.shape[-2], k.shape[-2]
        if window is not None and Tq == Tk and offset == 0 and Tq <= window:
            window = None  # the band is the whole causal triangle: nothing to mask beyond causality
        if self.use_flex and Tq > 1:
            try:
                return flex_band_attention(q, k, v, causal, window, self.sinks, self.spec.scale, offset)
            except Exception as exc:  # no Triton, an unsupported shape: say so and run the masked SDPA
                self.use_flex, self.flex_error = False, f"{type(exc).__name__}: {str(exc)[:120]}"
        if window is not None and Tq == Tk and offset == 0 and Tq >= 2 * window:
            return blockwise_band_attention(q, k, v, window, self.spec.scale, self.sinks)
        k, v, mask, is_causal = sdpa_inputs(q, k, v, causal, window, self.sinks, offset)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal, enable_gqa=gqa,
                                              scale=self.spec.scale)

    @property
    def kernel_name(self) -> str:
        """What core() runs at the configured seq_len, as the timing panel names it."""
        return self.kernel_for(self.cfg.seq_len)

    def kernel_for(self, T: int) -> str:
        """The prefill core's kernel for T tokens: plain SDPA without a window or sinks; with them, compiled
        flex_attention on CUDA, else blockwise SDPA once T >= 2W (bench/window_timing.py: faster than a
        T x T mask) and SDPA with an explicit mask below (T <= W: just the causal mask)."""
        if self.spec.window is None and self.sinks is None:
            return "SDPA"
        parts = [f"window {self.spec.window}"] if self.spec.window is not None else []
        parts += ["sinks"] if self.sinks is not None else []
        what = ", ".join(parts)
        if self.use_flex:
            return f"flex_attention, compiled ({what})"
        fallback = f"; flex_attention failed: {self.flex_error}" if self.flex_error else ""
        if self.spec.window is not None and self.cfg.causal and T >= 2 * self.spec.window:
            return f"blockwise SDPA, {-(-T // self.spec.window)} blocks of W against 2W keys ({what}{fallback})"
        if self.spec.window is not None and self.cfg.causal and T <= self.spec.window and self.sinks is None:
            return f"SDPA, causal (T <= W: the band is the causal triangle{fallback})"
        return f"SDPA with an explicit mask ({what}{fallback})"

    def merge_heads(self, o: torch.Tensor, x: torch.Tensor | None = None) -> torch.Tensor:
        """(B, H, T, h) -> W_o applied to (B, T, H*h) -> (B, T, d); a gated layer multiplies by sigmoid(x W_gate)
        first (x: the layer's input, (B, T, d))."""
        B, _, T, _ = o.shape
        o = o.transpose(1, 2).reshape(B, T, self.q_size)  # (B, T, H*h)
        if self.wgate is not None and x is not None:
            o = o * torch.sigmoid(self.wgate(x))
        return self.wo(o)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The timing path: x (B, T, d) -> (B, T, d)."""
        q, k, v = self.project_qkv(x)
        return self.merge_heads(self.core(q, k, v, self.cfg.causal), x)

    def decode_step(self, x_new: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor) -> torch.Tensor:
        """One new token per sequence against the cache.

        x_new (B, 1, d); k_cache and v_cache (B, K, T, h) hold T positions, the last of which
        is overwritten with the new token's key and value (a full cache, read whole: a local layer's
        cache holds min(seq_len, W) positions, all of which the new query sees).
        """
        q, k, v = self.project_qkv(x_new)  # q (B, H, 1, h), k and v (B, K, 1, h)
        k_cache[:, :, -1:] = k
        v_cache[:, :, -1:] = v
        return self.merge_heads(self.core(q, k_cache, v_cache, causal=False), x_new)

    def attention_probs(self, x: torch.Tensor) -> torch.Tensor:
        """The display path: x (B, T, d) with T <= MAX_DISPLAY_TOKENS -> probs (B, H, T, T) float32."""
        return self.attention_probs_and_sinks(x)[0]

    def attention_probs_and_sinks(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """probs (B, H, T, T) float32 and each row's sink share (B, H, T), None without sinks."""
        T = x.shape[1]
        if T > MAX_DISPLAY_TOKENS:
            raise ValueError(
                f"the display path shows at most {MAX_DISPLAY_TOKENS} tokens, not {T}; shorten the text."
            )
        q, k, _ = self.project_qkv(x)
        q, k = q.float(), repeat_kv(k.float(), self.spec.group_size)  # (B, H, T, h) each
        scores = q @ k.transpose(-2, -1)  # (B, H, T, T)
        scores = scores / math.sqrt(self.head_dim) if self.spec.scale is None else scores * self.spec.scale
        allowed = allowed_keys(T, T, self.cfg.causal, self.spec.window if self.cfg.causal else None, 0, x.device)
        return softmax_with_sinks(scores, allowed, self.sinks)

    def display_forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Probabilities (B, H, T, T) and the layer output (B, T, d), both from explicit softmax."""
        probs = self.attention_probs(x)
        _, _, v = self.project_qkv(x)
        v = repeat_kv(v.float(), self.spec.group_size)  # (B, H, T, h)
        o = (probs @ v).to(x.dtype)  # (B, H, T, h)
        return probs, self.merge_heads(o, x)


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
        w = layer.wqkv.weight  # (qkv rows, d)
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
