"""Expected Attention (Devoto et al., arXiv 2510.00636) as kvpress defines it
(kvpress/presses/expected_attention_press.py, 0.5.5): the queries of the context (before RoPE, the first n_sink
left out) as a Gaussian; its mean and covariance rotated by RoPE averaged over the next n_future positions; a key's
score is the expected attention exp(mu.k / sqrt(h) + k' Sigma k / 2h), softmaxed over the keys, averaged over each
KV head's group and scaled by the value's norm. The first n_sink tokens are always kept. Per KV head."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from core.models.evict.presses.layer_view import LayerView
from core.models.kv.latent import undo_rope


@dataclass(frozen=True)
class ExpectedAttention:
    n_future: int = 512
    n_sink: int = 4
    name: str = "expected"
    depends_on_kept: bool = False

    def protected(self, length: int) -> int:
        return min(self.n_sink, length)

    def query_statistics(self, view: LayerView) -> tuple[torch.Tensor, torch.Tensor]:
        """The mean (B, H, h) and covariance (B, H, h, h) of the queries before RoPE, positions n_sink.., each
        turned by the mean rotation over positions T..T+n_future-1."""
        T = view.length
        cos, sin = view.rope_at(torch.arange(T)[None])  # (1, T, h)
        pre = undo_rope(view.query, cos, sin)[:, :, self.n_sink:]  # (B, H, T - s, h)
        mu = pre.mean(dim=2, keepdim=True)  # (B, H, 1, h)
        centred = pre - mu
        cov = torch.einsum("bnsi,bnsj->bnij", centred, centred) / pre.shape[2]  # (B, H, h, h)
        mu = mu.squeeze(2)  # (B, H, h)
        h = view.query.shape[-1]
        cos_f, sin_f = view.rope_at(torch.arange(T, T + self.n_future)[None])  # (1, F, h)
        cos_f, sin_f = cos_f[0], sin_f[0]  # (F, h)
        swap = torch.zeros(h, h, dtype=cos_f.dtype)  # rotate_half as a matrix: x -> [-x2, x1]
        swap[h // 2:, : h // 2], swap[: h // 2, h // 2:] = torch.eye(h // 2), -torch.eye(h // 2)
        rotation = (cos_f.unsqueeze(1) * torch.eye(h) + sin_f.unsqueeze(1) * swap).mean(0)  # (F, h, h) -> (h, h)
        return mu @ rotation.T, rotation @ cov @ rotation.T

    def score(self, view: LayerView, n_kept: int) -> torch.Tensor:
        if view.length <= self.n_sink:
            raise ValueError(f"Expected Attention keeps {self.n_sink} sink tokens; give a longer context.")
        mu, cov = self.query_statistics(view)
        keys = view.keys_per_query_head()[:, :, self.n_sink:]  # (B, H, S, h)
        values = view.value[:, :, self.n_sink:]  # (B, K, S, h)
        h = keys.shape[-1]
        scores = (keys @ mu.unsqueeze(-1)).squeeze(-1) / h**0.5  # (B, H, S)
        scores = scores + torch.einsum("bhni,bhij,bhnj->bhn", keys, cov, keys) / h / 2
        scores = view.group_mean(scores.softmax(-1))  # (B, H, S) -> (B, K, S)
        scores = scores * values.norm(dim=-1)  # epsilon 0, as kvpress's default
        return F.pad(scores, (self.n_sink, 0), value=scores.max().item() + 1)  # (B, K, T): the sinks always kept
