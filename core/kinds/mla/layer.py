"""One multi-head latent attention layer (DeepSeek-V2/V3), run both ways: naive and absorbed.

Projections as transformers' DeepseekV3Attention names them (so its weights load by name); RoPE is not
applied, as in this app's standard layer (positions do not change a count or a kernel's speed): the rope
parts of the query and of the shared key are used unrotated.
- naive: decompress every head's key (nope part from kv_b, rope part the shared key) and value, then SDPA
  with query/key width n + r and value width v: the usual prefill, and a decode step against a
  decompressed per-head cache;
- absorbed (DeepSeek's inference/model.py, attn_impl "absorb"): W_uk (kv_b's key half) folded into each
  query, scores against the latent cache and the shared rope key as one KV "head" (MQA-like, width r_kv + r),
  the weighted sum of latents (width r_kv), then W_uv (kv_b's value half) per head and o_proj.
Both use the softmax scale 1 / sqrt(n + r) (no YaRN mscale: no long-context scaling here).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.kinds.mla.spec import MLADims
from core.kinds.standard.masking import allowed_keys, softmax_with_sinks

RMS_EPS = 1e-6  # DeepSeek-V3's rms_norm_eps


class MLALayer(nn.Module):
    """x (B, T, d) -> (B, T, d). with_output=False builds no o_proj (the heatmaps need none: it is drawn last)."""

    def __init__(self, cfg: AttentionConfig, device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32,
                 seed: int = 0, spec: LayerSpec | None = None, with_output: bool = True) -> None:
        super().__init__()
        self.cfg = cfg
        self.spec = spec = spec or cfg.layer_spec()
        if spec.widths is None:
            raise ValueError("MLALayer needs an MLA layer spec; use AttentionLayer for a standard layer.")
        m: MLADims = spec.widths
        self.m, self.H, d = m, spec.n_heads, cfg.d_model
        self.n_heads = self.n_kv_heads = spec.n_heads
        self.head_dim = m.qk_head_dim
        kw = {"device": device, "dtype": dtype}
        qk = self.H * m.qk_head_dim
        self.q_proj = None if m.q_lora_rank else nn.Linear(d, qk, bias=False, **kw)
        self.q_a_proj = nn.Linear(d, m.q_lora_rank, bias=False, **kw) if m.q_lora_rank else None
        self.q_a_layernorm = nn.RMSNorm(m.q_lora_rank, eps=RMS_EPS, **kw) if m.q_lora_rank else None
        self.q_b_proj = nn.Linear(m.q_lora_rank, qk, bias=False, **kw) if m.q_lora_rank else None
        self.kv_a_proj_with_mqa = nn.Linear(d, m.latent_width, bias=False, **kw)
        self.kv_a_layernorm = nn.RMSNorm(m.kv_lora_rank, eps=RMS_EPS, **kw)
        self.kv_b_proj = nn.Linear(m.kv_lora_rank, self.H * (m.qk_nope_head_dim + m.v_head_dim), bias=False, **kw)
        self.o_proj = nn.Linear(self.H * m.v_head_dim, d, bias=False, **kw) if with_output else None
        self.reset_parameters(seed)

    def linears(self) -> list[nn.Linear]:
        """In the order their weights are drawn: the query path, kv_a, kv_b, o_proj (last, so a display layer
        without it draws the same numbers)."""
        names = ("q_proj", "q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj")
        return [lin for lin in (getattr(self, n) for n in names) if lin is not None]

    def reset_parameters(self, seed: int) -> None:
        """nn.Linear's default range (1/sqrt(fan_in)) from one seeded stream; the norms' weights start at one."""
        gen = torch.Generator(device=self.kv_b_proj.weight.device).manual_seed(seed)
        with torch.no_grad():
            for lin in self.linears():
                bound = 1.0 / math.sqrt(lin.in_features)
                lin.weight.uniform_(-bound, bound, generator=gen)

    @property
    def scale(self) -> float:
        return self.spec.softmax_scale  # 1 / sqrt(n + r) unless the layer sets its own

    def w_uk_uv(self) -> tuple[torch.Tensor, torch.Tensor]:
        """kv_b's weight (H (n + v), r_kv) split per head: W_uk (H, n, r_kv) and W_uv (H, v, r_kv)."""
        m = self.m
        w = self.kv_b_proj.weight.view(self.H, m.qk_nope_head_dim + m.v_head_dim, m.kv_lora_rank)
        return w[:, : m.qk_nope_head_dim], w[:, m.qk_nope_head_dim:]

    def query(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, T, d) -> q_nope (B, H, T, n) and q_pe (B, H, T, r)."""
        B, T, _ = x.shape
        if self.q_proj is not None:
            q = self.q_proj(x)
        else:
            assert self.q_a_proj is not None and self.q_a_layernorm is not None and self.q_b_proj is not None
            q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x)))
        q = q.view(B, T, self.H, self.m.qk_head_dim).transpose(1, 2)  # (B, H, T, n + r)
        return q.split([self.m.qk_nope_head_dim, self.m.qk_rope_head_dim], dim=-1)

    def latent(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, T, d) -> the cached latent c (B, T, r_kv), normalised, and the shared rope key k_pe (B, T, r)."""
        c, k_pe = self.kv_a_proj_with_mqa(x).split([self.m.kv_lora_rank, self.m.qk_rope_head_dim], dim=-1)
        return self.kv_a_layernorm(c), k_pe

    def decompress(self, c: torch.Tensor, k_pe: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Latent (B, T, r_kv) and rope key (B, T, r) -> per-head keys (B, H, T, n + r) and values (B, H, T, v)."""
        B, T, _ = c.shape
        m = self.m
        kv = self.kv_b_proj(c).view(B, T, self.H, m.qk_nope_head_dim + m.v_head_dim).transpose(1, 2)  # (B, H, T, n+v)
        k_nope, v = kv.split([m.qk_nope_head_dim, m.v_head_dim], dim=-1)
        k_rope = k_pe[:, None].expand(B, self.H, T, m.qk_rope_head_dim)  # one rope key shared by every head
        return torch.cat([k_nope, k_rope], dim=-1), v

    def naive_core(self, q_nope: torch.Tensor, q_pe: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                   causal: bool) -> torch.Tensor:
        """Per-head SDPA: q (B, H, Tq, n + r) against k (B, H, Tk, n + r), v (B, H, Tk, v) -> (B, H, Tq, v)."""
        q = torch.cat([q_nope, q_pe], dim=-1)
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal and q.shape[-2] > 1, scale=self.scale)

    def absorbed_query(self, q_nope: torch.Tensor, q_pe: torch.Tensor) -> torch.Tensor:
        """W_uk folded in: q_nope (B, H, Tq, n) -> (B, H, Tq, r_kv), then the rope part: (B, H, Tq, r_kv + r)."""
        w_uk, _ = self.w_uk_uv()
        return torch.cat([torch.einsum("bhtn,hnc->bhtc", q_nope, w_uk), q_pe], dim=-1)

    def absorbed_core(self, q_nope: torch.Tensor, q_pe: torch.Tensor, c: torch.Tensor, k_pe: torch.Tensor,
                      causal: bool) -> torch.Tensor:
        """Scores against the latent: q (B, H, Tq, r_kv + r), one key head [c | k_pe] (B, 1, Tk, r_kv + r), values
        c (B, 1, Tk, r_kv) -> latent outputs (B, H, Tq, r_kv) -> W_uv per head -> (B, H, Tq, v)."""
        q = self.absorbed_query(q_nope, q_pe)
        B, H, Tq, D = q.shape
        key = torch.cat([c, k_pe], dim=-1)[:, None]  # (B, 1, Tk, r_kv + r)
        if causal and Tq > 1:  # each query its own causal row: H query heads sharing one KV head
            o_lat = F.scaled_dot_product_attention(q, key, c[:, None], is_causal=True, scale=self.scale,
                                                   enable_gqa=True)  # (B, H, Tq, r_kv)
        else:  # every query sees every key: the H heads' queries packed as one head's rows, as FlashMLA does
            packed = q.reshape(B, 1, H * Tq, D)  # (B, 1, H*Tq, r_kv + r): no copy of the shared key per head
            o_lat = F.scaled_dot_product_attention(packed, key, c[:, None], scale=self.scale).view(B, H, Tq, -1)
        _, w_uv = self.w_uk_uv()
        return torch.einsum("bhtc,hvc->bhtv", o_lat, w_uv)

    def merge_heads(self, o: torch.Tensor) -> torch.Tensor:
        """(B, H, T, v) -> o_proj applied to (B, T, H*v) -> (B, T, d)."""
        if self.o_proj is None:
            raise ValueError("this MLA layer was built for the heatmaps only (no o_proj).")
        B, _, T, _ = o.shape
        return self.o_proj(o.transpose(1, 2).reshape(B, T, self.H * self.m.v_head_dim))

    def forward(self, x: torch.Tensor, form: str = "naive") -> torch.Tensor:
        """Prefill: x (B, T, d) -> (B, T, d), in either form (they agree to rounding)."""
        q_nope, q_pe = self.query(x)
        c, k_pe = self.latent(x)
        if form == "absorbed":
            return self.merge_heads(self.absorbed_core(q_nope, q_pe, c, k_pe, self.cfg.causal))
        k, v = self.decompress(c, k_pe)
        return self.merge_heads(self.naive_core(q_nope, q_pe, k, v, self.cfg.causal))

    def decode_naive(self, x_new: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor) -> torch.Tensor:
        """One token against a decompressed cache k (B, H, T, n + r), v (B, H, T, v); its last position is
        overwritten with the new token's key and value (decompressed from its latent: kv_b on one token)."""
        q_nope, q_pe = self.query(x_new)
        k, v = self.decompress(*self.latent(x_new))
        k_cache[:, :, -1:] = k
        v_cache[:, :, -1:] = v
        return self.merge_heads(self.naive_core(q_nope, q_pe, k_cache, v_cache, causal=False))

    def decode_absorbed(self, x_new: torch.Tensor, c_cache: torch.Tensor, pe_cache: torch.Tensor) -> torch.Tensor:
        """One token against the latent cache c (B, T, r_kv) and rope keys (B, T, r), the last position its own."""
        q_nope, q_pe = self.query(x_new)
        c, k_pe = self.latent(x_new)
        c_cache[:, -1:] = c
        pe_cache[:, -1:] = k_pe
        return self.merge_heads(self.absorbed_core(q_nope, q_pe, c_cache, pe_cache, causal=False))

    def attention_probs(self, x: torch.Tensor, form: str = "naive") -> torch.Tensor:
        """The display path: per-head probabilities (B, H, T, T) in float32, from explicit scores of either form
        (the naive form's per-head keys, or the absorbed query against the latent: the same numbers)."""
        q_nope, q_pe = self.query(x)
        c, k_pe = self.latent(x)
        if form == "absorbed":
            q, key = self.absorbed_query(q_nope, q_pe), torch.cat([c, k_pe], dim=-1)[:, None]  # key (B, 1, T, r_kv + r)
        else:
            q, key = torch.cat([q_nope, q_pe], dim=-1), self.decompress(c, k_pe)[0]  # (B, H, T, n + r) each
        scores = (q.float() @ key.float().transpose(-2, -1)) * self.scale  # (B, H, T, T)
        T = x.shape[1]
        return softmax_with_sinks(scores, allowed_keys(T, T, self.cfg.causal, None, 0, x.device), None)[0]

    def probs_and_sinks(self, x: torch.Tensor) -> tuple[torch.Tensor, None]:
        """As DisplayProjector's: probabilities (B, H, T, T), and no sinks."""
        return self.attention_probs(x), None
