"""One DeepSeek-V4 attention layer in torch (a prefill without a cache): queries over one shared KV head, read in a
window of W tokens and, beyond it, over compressed entries (heavily compressed: all of them; compressed sparse: the
top-k an indexer picks), with per-head sinks and a grouped low-rank output.

Parameters carry transformers' names (DeepseekV4Attention, its compressor and indexer), so a test loads one module's
weights into the other. As this app's other layers, no RoPE is applied (positions change no count or speed); with
RoPE at angle zero transformers' module computes the same numbers. Written by hand because no library runs this
layer outside transformers' whole model; each step follows transformers' modeling_deepseek_v4.py.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from core.arch.layer import LayerSpec
from core.kinds.dsv4.counts import v4_dims
from core.kinds.dsv4.spec import V4Dims

EPS = 1e-6  # DeepseekV4Config.rms_norm_eps


class RMSNorm(nn.Module):
    """Weighted RMSNorm in float32, as DeepseekV4RMSNorm (weight times the normalised float32 input)."""

    def __init__(self, width: int, **kw: object) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width, **kw))  # type: ignore[arg-type]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.float()
        return (self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + EPS))).to(x.dtype)


def unweighted_rms(x: torch.Tensor) -> torch.Tensor:
    """Each head's query over its own RMS (DeepseekV4UnweightedRMSNorm)."""
    return x * torch.rsqrt(x.float().square().mean(-1, keepdim=True) + EPS).to(x.dtype)


def pool(kv: torch.Tensor, gate: torch.Tensor, norm: RMSNorm) -> torch.Tensor:
    """A softmax over each entry's slots a channel, the weighted sum, then the norm: kv and gate (B, n, slots, w) ->
    entries (B, n, w)."""
    return norm((kv * gate.softmax(dim=2, dtype=torch.float32).to(kv.dtype)).sum(dim=2))


class Compressor(nn.Module):
    """Merges every m tokens into one entry of `width` values. overlap (compressed sparse): each token feeds two
    entries (projections of 2 x width: its first half the next window's, its second half its own), an entry pooling
    2m slots; otherwise (heavily compressed) m slots."""

    def __init__(self, d_model: int, width: int, ratio: int, overlap: bool, **kw: object) -> None:
        super().__init__()
        wide = 2 * width if overlap else width
        self.width, self.ratio, self.overlap = width, ratio, overlap
        self.kv_proj = nn.Linear(d_model, wide, bias=False, **kw)  # type: ignore[arg-type]
        self.gate_proj = nn.Linear(d_model, wide, bias=False, **kw)  # type: ignore[arg-type]
        self.position_bias = nn.Parameter(torch.zeros(ratio, wide, dtype=torch.float32,
                                                      device=kw.get("device")))  # type: ignore[arg-type]
        self.kv_norm = RMSNorm(width, **kw)

    def entries(self, x: torch.Tensor) -> torch.Tensor:
        """x (B, T, d) -> the entries of its complete windows (B, floor(T / m), width)."""
        B, T, _ = x.shape
        m, w = self.ratio, self.width
        n = T // m
        if n == 0:  # fewer tokens than a window: no entry yet
            return x.new_zeros(B, 0, w)
        kv = self.kv_proj(x[:, : n * m]).view(B, n, m, -1)  # (B, n, m, wide)
        gate = self.gate_proj(x[:, : n * m]).view(B, n, m, -1) + self.position_bias  # (B, n, m, wide)
        if not self.overlap:
            return pool(kv, gate, self.kv_norm)
        slots_kv = kv.new_zeros(B, n, 2 * m, w)  # (B, n, 2m, w): the previous window's first halves, then its own
        slots_gate = gate.new_full((B, n, 2 * m, w), float("-inf"))  # an empty slot weighs 0
        slots_kv[:, :, m:], slots_gate[:, :, m:] = kv[..., w:], gate[..., w:]
        if n > 1:
            slots_kv[:, 1:, :m], slots_gate[:, 1:, :m] = kv[:, :-1, :, :w], gate[:, :-1, :, :w]
        return pool(slots_kv, slots_gate, self.kv_norm)


class Scorer(nn.Module):
    def __init__(self, d_model: int, n_heads: int, **kw: object) -> None:
        super().__init__()
        self.weights_proj = nn.Linear(d_model, n_heads, bias=False, **kw)  # type: ignore[arg-type]


class Indexer(Compressor):
    """The compressed sparse layer's lightning indexer: its own overlapping compressor at D_I, queries from the
    layer's query latent, and each query's top-k entries by sum_h w_h ReLU(q_h . k) / sqrt(D_I)."""

    def __init__(self, d_model: int, m: V4Dims, **kw: object) -> None:
        super().__init__(d_model, m.index_head_dim, m.compress_ratio, True, **kw)
        self.n_heads, self.topk = m.index_n_heads, m.index_topk
        self.q_b_proj = nn.Linear(m.q_lora_rank, m.index_n_heads * m.index_head_dim, bias=False, **kw)  # type: ignore[arg-type]
        self.scorer = Scorer(d_model, m.index_n_heads, **kw)

    def scores(self, x: torch.Tensor, q_latent: torch.Tensor) -> torch.Tensor:
        """(B, T, n) float32: each query's score of every entry, -inf where an entry is not complete at the query."""
        B, T, _ = x.shape
        keys = self.entries(x).float()  # (B, n, D_I)
        q = self.q_b_proj(q_latent).view(B, T, self.n_heads, self.width).float()  # (B, T, H_I, D_I)
        s = F.relu(torch.einsum("bthd,bnd->bthn", q, keys)) * self.width ** -0.5  # (B, T, H_I, n)
        w = self.scorer.weights_proj(x).float() * self.n_heads ** -0.5  # (B, T, H_I)
        scores = torch.einsum("bth,bthn->btn", w, s)
        return scores.masked_fill(~complete(T, keys.shape[1], self.ratio, x.device), float("-inf"))

    def picks(self, x: torch.Tensor, q_latent: torch.Tensor) -> torch.Tensor:
        """(B, T, n) bool: the entries each query reads, its top min(k, n) among the complete ones."""
        scores = self.scores(x, q_latent)
        n = scores.shape[-1]
        chosen = torch.zeros_like(scores, dtype=torch.bool)
        if n:
            chosen.scatter_(-1, scores.topk(min(self.topk, n), dim=-1).indices, True)
        return chosen & complete(x.shape[1], n, self.ratio, x.device)


class SparseCompressor(Compressor):
    """A compressed sparse layer's compressor (2 x D projections, overlapping windows) with its indexer."""

    def __init__(self, d_model: int, m: V4Dims, **kw: object) -> None:
        super().__init__(d_model, m.kv_head_dim, m.compress_ratio, True, **kw)
        self.indexer = Indexer(d_model, m, **kw)


def complete(T: int, n: int, ratio: int, device: torch.device | str) -> torch.Tensor:
    """(T, n) bool: entry w is complete at query t once all its tokens are seen, (w + 1) m <= t + 1."""
    t = torch.arange(T, device=device)[:, None]
    return torch.arange(n, device=device)[None, :] < (t + 1) // ratio


def window_mask(T: int, W: int, device: torch.device | str) -> torch.Tensor:
    """(T, T) bool: query t reads keys t - W + 1 .. t."""
    ones = torch.ones(T, T, dtype=torch.bool, device=device)
    return ones.tril() & ~ones.tril(-W)


class V4Layer(nn.Module):
    """x (B, T, d) -> (B, T, d): DeepSeek-V4's attention over its window and its compressed entries, sinks included."""

    def __init__(self, d_model: int, spec: LayerSpec, device: torch.device | str = "cpu",
                 dtype: torch.dtype = torch.float32, seed: int = 0) -> None:
        super().__init__()
        m = v4_dims(spec)
        self.spec, self.m, self.H, self.D = spec, m, spec.n_heads, m.kv_head_dim
        kw = {"device": device, "dtype": dtype}
        H, D = self.H, self.D
        self.q_a_proj = nn.Linear(d_model, m.q_lora_rank, bias=False, **kw)
        self.q_a_norm = RMSNorm(m.q_lora_rank, **kw)
        self.q_b_proj = nn.Linear(m.q_lora_rank, H * D, bias=False, **kw)
        self.kv_proj = nn.Linear(d_model, D, bias=False, **kw)
        self.kv_norm = RMSNorm(D, **kw)
        self.o_a_proj = nn.Linear(H * D // m.o_groups, m.o_groups * m.o_lora_rank, bias=False, **kw)
        self.o_b_proj = nn.Linear(m.o_groups * m.o_lora_rank, d_model, bias=False, **kw)
        self.sinks = nn.Parameter(torch.zeros(H, dtype=torch.float32, device=device))
        self.compressor: Compressor | None = (
            None if m.compressor == "none" else SparseCompressor(d_model, m, **kw) if m.compressor == "csa"
            else Compressor(d_model, D, m.compress_ratio, False, **kw))
        self.reset_parameters(seed)

    @torch.no_grad()
    def reset_parameters(self, seed: int) -> None:
        """Linear weights in nn.Linear's range and small position biases and sinks, from one seeded stream."""
        gen = torch.Generator(device="cpu").manual_seed(seed)
        for name, p in self.named_parameters():
            if name.endswith("weight") and p.ndim == 2:
                p.copy_((torch.rand(p.shape, generator=gen) * 2 - 1) / math.sqrt(p.shape[1]))
            elif name.endswith("position_bias") or name == "sinks":
                p.copy_(torch.randn(p.shape, generator=gen) * 0.1)

    def read(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The queries (B, H, T, D), the keys/values it reads (B, 1, T + n, D): the tokens, then the entries, and
        which each query reads (B, T, T + n) bool: its window, and its complete entries (a sparse layer's picks)."""
        B, T, _ = x.shape
        q_latent, q = self.query(x)  # (B, T, r_q), (B, H, T, D)
        kv = self.kv_norm(self.kv_proj(x))[:, None]  # (B, 1, T, D): one head, K = V
        allowed = window_mask(T, self.m.window, x.device).expand(B, T, T)
        if self.compressor is not None:
            entries = self.compressor.entries(x)[:, None]  # (B, 1, n, D)
            n = entries.shape[2]
            if isinstance(self.compressor, SparseCompressor):
                reads = self.compressor.indexer.picks(x, q_latent)  # (B, T, n)
            else:
                reads = complete(T, n, self.m.compress_ratio, x.device).expand(B, T, n)
            kv, allowed = torch.cat([kv, entries], dim=2), torch.cat([allowed, reads], dim=-1)
        return q, kv, allowed

    def weights(self, q: torch.Tensor, kv: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        """Softmax over the allowed keys and each head's sink, the sink's column dropped: (B, H, T, T + n) float32."""
        logits = (q.float() @ kv.float().transpose(-1, -2)) * self.D ** -0.5  # (B, H, T, T + n)
        logits = logits.masked_fill(~allowed[:, None], float("-inf"))
        B, H, T, _ = logits.shape
        sink = self.sinks.float().view(1, H, 1, 1).expand(B, H, T, 1)  # (H,) -> (B, H, T, 1): one logit a head
        return torch.cat([logits, sink], dim=-1).softmax(dim=-1)[..., :-1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, kv, allowed = self.read(x)
        return self.output(self.weights(q, kv, allowed).to(kv.dtype) @ kv)  # (B, H, T, D): the values are the keys

    def output(self, o: torch.Tensor) -> torch.Tensor:
        """The grouped low-rank output: o (B, H, T, D) -> (B, T, d)."""
        B, _, T, _ = o.shape
        g = self.m.o_groups
        grouped = o.transpose(1, 2).reshape(B, T, g, -1)  # (B, T, H, D) -> (B, T, g, H D / g)
        w = self.o_a_proj.weight.view(g, -1, grouped.shape[-1])  # (g, r_o, H D / g): one block a group
        out = torch.einsum("btgi,goi->btgo", grouped, w).reshape(B, T, -1)  # (B, T, g, r_o) -> (B, T, g r_o)
        return self.o_b_proj(out)

    def query(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, T, d) -> the query latent (B, T, r_q) and the heads' queries (B, H, T, D)."""
        B, T, _ = x.shape
        q_latent = self.q_a_norm(self.q_a_proj(x))
        q = self.q_b_proj(q_latent).view(B, T, self.H, self.D).transpose(1, 2)  # (B, T, H D) -> (B, H, T, D)
        return q_latent, unweighted_rms(q)

    def decode_step(self, x_new: torch.Tensor, window: torch.Tensor, entries: torch.Tensor,
                    index_keys: torch.Tensor | None = None) -> torch.Tensor:
        """One token a sequence x_new (B, 1, d) against its caches: the window's last W keys (B, W, D), the new
        token's own last (overwritten here); the complete compressed entries (B, n, D); a sparse layer's index keys
        (B, n, D_I), of which the indexer keeps the top min(k, n) -> (B, 1, d)."""
        q_latent, q = self.query(x_new)  # (B, 1, r_q), (B, H, 1, D)
        window[:, -1:] = self.kv_norm(self.kv_proj(x_new))
        picked = entries
        if isinstance(self.compressor, SparseCompressor) and entries.shape[1]:
            ix = self.compressor.indexer
            B = x_new.shape[0]
            qi = ix.q_b_proj(q_latent).view(B, 1, ix.n_heads, ix.width).float()  # (B, 1, H_I, D_I)
            s = F.relu(torch.einsum("bthd,bnd->bthn", qi, index_keys.float())) * ix.width ** -0.5  # (B, 1, H_I, n)
            w = ix.scorer.weights_proj(x_new).float() * ix.n_heads ** -0.5  # (B, 1, H_I)
            top = torch.einsum("bth,bthn->btn", w, s)[:, 0].topk(min(ix.topk, entries.shape[1]), dim=-1).indices
            picked = torch.gather(entries, 1, top[..., None].expand(-1, -1, entries.shape[-1]))  # (B, k, D)
        kv = torch.cat([window, picked], dim=1)[:, None]  # (B, 1, W + k, D): one KV head
        allowed = torch.ones(x_new.shape[0], 1, kv.shape[2], dtype=torch.bool, device=x_new.device)
        return self.output(self.weights(q, kv, allowed).to(kv.dtype) @ kv)

    def dense(self, x: torch.Tensor) -> torch.Tensor:
        """The same layer reading every causal token of its KV head (no window, no entries): what it is timed
        beside."""
        B, T, _ = x.shape
        _, q = self.query(x)
        kv = self.kv_norm(self.kv_proj(x))[:, None]  # (B, 1, T, D)
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril().expand(B, T, T)
        return self.output(self.weights(q, kv, causal).to(kv.dtype) @ kv)

    def decode_dense(self, x_new: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """One token against every cached key (B, T, D), its own slot last (overwritten here): the dense step."""
        _, q = self.query(x_new)
        keys[:, -1:] = self.kv_norm(self.kv_proj(x_new))
        allowed = torch.ones(x_new.shape[0], 1, keys.shape[1], dtype=torch.bool, device=x_new.device)
        return self.output(self.weights(q, keys[:, None], allowed).to(keys.dtype) @ keys[:, None])

    def caches(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """What a decode step after x (B, T, d) reads: the window's last W keys (B, W, D), the entries of x's complete
        windows (B, n, D), a sparse layer's index keys (B, n, D_I)."""
        kv = self.kv_norm(self.kv_proj(x))[:, -self.m.window:]
        D = self.D
        entries = self.compressor.entries(x) if self.compressor is not None else x.new_zeros(x.shape[0], 0, D)
        index = self.compressor.indexer.entries(x) if isinstance(self.compressor, SparseCompressor) else None
        return kv, entries, index

    def spans(self, n: int, T: int, device: torch.device | str) -> torch.Tensor:
        """(n, T): how each compressed entry's weight spreads over the tokens it merges (m tokens; 2m a sparse
        layer's entry beyond the first, half each to its window and the one before)."""
        m = self.m.compress_ratio
        out = torch.zeros(n, T, device=device)
        for e in range(n):
            if isinstance(self.compressor, SparseCompressor) and e > 0:
                out[e, (e - 1) * m:(e + 1) * m] = 1 / (2 * m)
            else:
                out[e, e * m:(e + 1) * m] = 1 / m
        return out

    def token_reads(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Which tokens each query reads, (B, T, T) bool: its window's, and those its read entries merge; and a
        sparse layer's index score of each token (B, T, T) float32, its best entry's (-inf where none may be
        read; 0 in a layer without an indexer)."""
        T = x.shape[1]
        _, _, allowed = self.read(x)
        reads = allowed[..., :T].clone()
        n = allowed.shape[-1] - T
        scores = torch.zeros(reads.shape, device=x.device)
        if n:
            covers = self.spans(n, T, x.device) > 0  # (n, T)
            reads |= (allowed[..., T:].float() @ covers.float()) > 0
            if isinstance(self.compressor, SparseCompressor):
                entry = self.compressor.indexer.scores(x, self.query(x)[0])  # (B, T, n)
                scores = entry[..., :, None].masked_fill(~covers, float("-inf")).amax(dim=-2)  # (B, T, n, T) -> (B, T, T)
        return reads, scores

    def dense_probs(self, x: torch.Tensor) -> torch.Tensor:
        """The same layer's weights reading every causal token (B, H, T, T), float32, the sinks' share left out."""
        B, T, _ = x.shape
        _, q = self.query(x)
        kv = self.kv_norm(self.kv_proj(x))[:, None]
        return self.weights(q, kv, torch.ones(T, T, dtype=torch.bool, device=x.device).tril().expand(B, T, T))

    def probs_and_sinks(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-head weights over the tokens (B, H, T, T): the window's own, and each compressed entry's spread over
        the m tokens it merges (the 2m a sparse layer's entry pools, half to each window); the sinks' share (B, H, T)."""
        T = x.shape[1]
        q, kv, allowed = self.read(x)
        w = self.weights(q, kv, allowed)  # (B, H, T, T + n)
        tokens = w[..., :T].clone()
        n = w.shape[-1] - T
        if n:
            tokens += w[..., T:] @ self.spans(n, T, x.device)  # (B, H, T, n) x (n, T)
        return tokens, 1 - w.sum(-1)
