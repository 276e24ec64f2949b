"""Changing the heads of a trained layer without retraining, as pure tensor functions.

- Fewer KV heads: mean-pool the K and V heads within each group (the GQA paper's conversion of a
  multi-head checkpoint). Pooling the projections' rows and pooling their outputs are the same
  linear map, and RoPE rotates every head alike, so pooling the captured keys and values is exact.
- Other head widths: the query, key and value widths re-split into H' heads of width h' = H*h/H'
  (keys and values first expanded to one per query head). Merging adjacent heads sums their scores
  under one softmax; splitting gives each part its own softmax. No weight changes: the parameter
  count stays the same.
"""

from __future__ import annotations

import torch

from core.arch.config import divisors
from core.kinds.standard.layer import repeat_kv


def valid_kv_targets(native_kv: int) -> list[int]:
    """Fewer KV heads than the model's own, in equal groups (more is impossible without training)."""
    return divisors(native_kv)


def valid_head_counts(n_heads: int, n_kv_heads: int, head_dim: int) -> list[int]:
    """H' such that the width H*h splits evenly and the query/KV sharing ratio stays whole."""
    width = n_heads * head_dim
    return [h for h in divisors(width) if (h * n_kv_heads) % n_heads == 0]


def kv_after(n_heads: int, n_kv_heads: int, new_heads: int) -> int:
    """KV heads after re-splitting: the sharing ratio is kept."""
    return new_heads * n_kv_heads // n_heads


def pool_kv(t: torch.Tensor, target: int) -> torch.Tensor:
    """(B, K, T, h) -> (B, target, T, h): the mean of each run of K/target consecutive KV heads."""
    B, K, T, h = t.shape
    if target == K:
        return t
    if target < 1 or K % target:
        raise ValueError(f"{target} KV heads do not split {K} into equal groups; choose one of {divisors(K)}.")
    return t.reshape(B, target, K // target, T, h).mean(dim=2)  # (B, target, T, h)


def resplit(t: torch.Tensor, new_heads: int) -> torch.Tensor:
    """(B, H, T, h) -> (B, new_heads, T, H*h/new_heads): the same width cut into other heads."""
    B, H, T, h = t.shape
    if new_heads == H:
        return t
    width = H * h
    if width % new_heads:
        raise ValueError(f"{new_heads} heads do not split the width {width} evenly.")
    t = t.transpose(1, 2).reshape(B, T, width)  # (B, T, H*h)
    return t.reshape(B, T, new_heads, width // new_heads).transpose(1, 2)  # (B, H', T, h')


def modified_attention(
    query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None,
    scaling: float, kv_target: int, heads_target: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """query (B, H, T, h), key/value (B, K, S, h) -> output (B, T, H', h') and weights (B, H', T, S).

    Softmax in float32, like the eager path of transformers.
    """
    H = query.shape[1]
    k = pool_kv(key, kv_target)  # (B, K', S, h)
    v = pool_kv(value, kv_target)  # (B, K', S, h)
    k = repeat_kv(k, H // kv_target)  # (B, H, S, h)
    v = repeat_kv(v, H // kv_target)  # (B, H, S, h)
    q = query
    if heads_target != H:
        q, k, v = resplit(q, heads_target), resplit(k, heads_target), resplit(v, heads_target)  # (B, H', *, h')
        scaling = q.shape[-1] ** -0.5
    scores = torch.matmul(q.float(), k.float().transpose(-2, -1)) * scaling  # (B, H', T, S)
    if mask is not None:
        m = mask[:, :, :, : k.shape[-2]]
        scores = scores.masked_fill(~m, float("-inf")) if m.dtype == torch.bool else scores + m.float()
    weights = scores.softmax(dim=-1)
    out = torch.matmul(weights, v.float()).to(query.dtype)  # (B, H', T, h')
    return out.transpose(1, 2).contiguous(), weights.to(query.dtype)  # (B, T, H', h'), (B, H', T, S)


def head_overlaps(n_heads: int, new_heads: int) -> list[list[int]]:
    """For each new head, the original heads whose query dimensions it shares."""
    out = []
    for j in range(new_heads):
        lo, hi = j / new_heads, (j + 1) / new_heads
        out.append([i for i in range(n_heads) if i / n_heads < hi and lo < (i + 1) / n_heads])
    return out


def js_divergence(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Jensen-Shannon divergence in bits (0 to 1) between rows (..., S) of two distributions."""
    p, q = p.double(), q.double()
    m = 0.5 * (p + q)

    def kl(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.where(a > 0, a * (torch.log2(a.clamp_min(1e-300)) - torch.log2(b.clamp_min(1e-300))), 0.0).sum(-1)

    return (0.5 * kl(p, m) + 0.5 * kl(q, m)).clamp_min(0.0)


def js_per_head(before: torch.Tensor, after: torch.Tensor) -> list[float]:
    """before (H, T, T), after (H', T, T) -> per new head: mean row JS against the heads it overlaps."""
    out = []
    for j, olds in enumerate(head_overlaps(before.shape[0], after.shape[0])):
        out.append(float(torch.stack([js_divergence(before[i], after[j]).mean() for i in olds]).mean()))
    return out
