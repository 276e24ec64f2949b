"""One DeepSeek sparse attention layer (DeepSeek-V3.2, GLM-5) in torch: MLA (core/kinds/mla/layer.py) whose queries
attend only to the top-k cached tokens a lightning indexer picks.

Parameters carry transformers' names (DeepseekV32Attention, its `indexer` a DeepseekV32Indexer), so a test loads one
module's weights into the other. As the MLA layer, no RoPE is applied (positions change no count or speed); with
RoPE at angle zero transformers' module computes the same numbers. Written by hand because no library runs this
layer's selection and masked attention on a CPU outside transformers' whole model.

The indexer (transformers' DeepseekV32Indexer.forward): q_I = wq_b(MLA's normalised query latent), H_I heads of D_I;
one key a token k_I = LayerNorm(wk(x)); I[t, s] = sum_h w[t, h] ReLU(q_I[t, h] . k_I[s] / sqrt(D_I)) with
w = weights_proj(x) / sqrt(H_I); the causal tokens only; each query keeps its top min(k, T) tokens.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.kinds.dsa.counts import dsa_dims
from core.kinds.mla.layer import MLALayer
from core.kinds.standard.masking import softmax_with_sinks

INDEXER_SEED = 7919  # the indexer's weights are drawn from the layer's seed plus this, after MLA's
SCORE_BLOCK_BYTES = 2**27  # the indexer's per-head scores held at once, float32


class Indexer(nn.Module):
    def __init__(self, d_model: int, q_lora_rank: int, n_heads: int, head_dim: int, device: torch.device | str,
                 dtype: torch.dtype) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.n_heads, self.head_dim = n_heads, head_dim
        self.wq_b = nn.Linear(q_lora_rank, n_heads * head_dim, bias=False, **kw)
        self.wk = nn.Linear(d_model, head_dim, bias=False, **kw)
        self.k_norm = nn.LayerNorm(head_dim, eps=1e-6, **kw)
        self.weights_proj = nn.Linear(d_model, n_heads, bias=False, **kw)

    def keys(self, x: torch.Tensor) -> torch.Tensor:
        """x (B, T, d) -> the index keys each token caches (B, T, D_I)."""
        return self.k_norm(self.wk(x))

    def scores(self, x: torch.Tensor, q_latent: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """The index score of every (query, key) pair, float32: x (B, Tq, d) and MLA's query latent (B, Tq, r_q)
        against keys (B, Tk, D_I) -> (B, Tq, Tk), before any mask. The ReLU comes between the heads' dot products
        and their weighted sum, so each head's (Tq, Tk) scores exist at once: queries go in blocks of at most
        SCORE_BLOCK_BYTES of them."""
        B, Tq, _ = x.shape
        Tk = keys.shape[1]
        q = self.wq_b(q_latent).view(B, Tq, self.n_heads, self.head_dim).float()  # (B, Tq, H_I, D_I)
        w = self.weights_proj(x).float() * self.n_heads ** -0.5  # (B, Tq, H_I)
        k = keys.float()
        out = torch.empty(B, Tq, Tk, device=x.device)
        step = max(1, SCORE_BLOCK_BYTES // max(1, B * self.n_heads * Tk * 4))
        for i in range(0, Tq, step):
            s = F.relu(torch.einsum("bqhd,bkd->bqhk", q[:, i:i + step], k) * self.head_dim ** -0.5)  # (B, q, H_I, Tk)
            out[:, i:i + step] = torch.einsum("bqh,bqhk->bqk", w[:, i:i + step], s)
        return out


class DSALayer(MLALayer):
    """x (B, T, d) -> (B, T, d); every query reads its causal top-k tokens (all of them while T <= k)."""

    def __init__(self, cfg: AttentionConfig, device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32,
                 seed: int = 0, spec: LayerSpec | None = None, with_output: bool = True) -> None:
        super().__init__(cfg, device, dtype, seed, spec, with_output)
        m = dsa_dims(self.spec)
        self.topk = m.index_topk
        self.indexer = Indexer(cfg.d_model, m.q_lora_rank, m.index_n_heads, m.index_head_dim, device, dtype)
        gen = torch.Generator(device=self.indexer.wk.weight.device).manual_seed(seed + INDEXER_SEED)
        with torch.no_grad():
            for lin in (self.indexer.wq_b, self.indexer.wk, self.indexer.weights_proj):
                bound = 1.0 / math.sqrt(lin.in_features)
                lin.weight.uniform_(-bound, bound, generator=gen)

    def query_latent(self, x: torch.Tensor) -> torch.Tensor:
        """MLA's normalised query latent (B, T, r_q): what both the heads' queries and the indexer's come from."""
        assert self.q_a_proj is not None and self.q_a_layernorm is not None
        return self.q_a_layernorm(self.q_a_proj(x))

    def index_scores(self, x: torch.Tensor) -> torch.Tensor:
        """A prefill's index scores (B, T, T), float32, -inf above the diagonal (a query scores only its past)."""
        T = x.shape[1]
        scores = self.indexer.scores(x, self.query_latent(x), self.indexer.keys(x))
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        return scores.masked_fill(~causal, float("-inf"))

    def selected(self, x: torch.Tensor) -> torch.Tensor:
        """Which keys each query attends to (B, T, T) bool: its causal top-k by index score (every causal key while
        t < k). torch.topk picks among -inf ties too; those are not causal and the causal mask drops them."""
        scores = self.index_scores(x)
        T = x.shape[1]
        top = scores.topk(min(self.topk, T), dim=-1).indices  # (B, T, k)
        chosen = torch.zeros_like(scores, dtype=torch.bool).scatter_(-1, top, True)
        return chosen & torch.ones(T, T, dtype=torch.bool, device=x.device).tril()

    def forward(self, x: torch.Tensor, form: str = "naive") -> torch.Tensor:
        """Prefill: x (B, T, d) -> (B, T, d), MLA restricted to each query's selected keys (the naive form: every
        head's key and value decompressed, then SDPA under the selection mask)."""
        q_nope, q_pe = self.query(x)
        k, v = self.decompress(*self.latent(x))
        mask = self.selected(x)[:, None]  # (B, 1, T, T): shared by the heads
        q = torch.cat([q_nope, q_pe], dim=-1)
        return self.merge_heads(F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=self.scale))

    def dense(self, x: torch.Tensor) -> torch.Tensor:
        """The same layer with every causal key read (dense MLA): what the sparse one is timed and drawn beside."""
        return super().forward(x, form="naive")

    def decode_sparse(self, x_new: torch.Tensor, c_cache: torch.Tensor, pe_cache: torch.Tensor,
                      index_cache: torch.Tensor) -> torch.Tensor:
        """One token a sequence against the latent cache c (B, T, r_kv), the RoPE keys (B, T, r) and the index keys
        (B, T, D_I), the last position its own: the indexer scores all T, and the absorbed form reads the top-k
        latents only (gathered, as FlashMLA's sparse kernel reads them)."""
        q_nope, q_pe = self.query(x_new)
        c, k_pe = self.latent(x_new)
        c_cache[:, -1:], pe_cache[:, -1:] = c, k_pe
        index_cache[:, -1:] = self.indexer.keys(x_new)
        scores = self.indexer.scores(x_new, self.query_latent(x_new), index_cache)  # (B, 1, T)
        top = scores.topk(min(self.topk, scores.shape[-1]), dim=-1).indices[:, 0]  # (B, k)
        pick = lambda t: torch.gather(t, 1, top[..., None].expand(-1, -1, t.shape[-1]))  # noqa: E731  (B, k, .)
        return self.merge_heads(self.absorbed_core(q_nope, q_pe, pick(c_cache), pick(pe_cache), causal=False))

    def attention_probs(self, x: torch.Tensor, form: str = "naive") -> torch.Tensor:
        """Per-head probabilities (B, H, T, T) in float32 over each query's selected keys; an unselected key's weight
        is 0 (the kernels' key_selection says which those are)."""
        return softmax_with_sinks(self.scores(x), self.selected(x)[:, None], None)[0]

    def dense_probs(self, x: torch.Tensor) -> torch.Tensor:
        """The same layer's probabilities (B, H, T, T) with every causal key read (dense MLA)."""
        return super().attention_probs(x)

    def scores(self, x: torch.Tensor) -> torch.Tensor:
        """Every head's scaled scores (B, H, T, T), float32, from the per-head keys (the naive form)."""
        q_nope, q_pe = self.query(x)
        q, key = torch.cat([q_nope, q_pe], dim=-1), self.decompress(*self.latent(x))[0]  # (B, H, T, n + r) each
        return (q.float() @ key.float().transpose(-2, -1)) * self.scale
