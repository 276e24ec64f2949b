"""Latent KV after training: each token's keys and values (every KV head of a layer, side by side)
projected onto r directions and rebuilt from them, so a cache would hold r values a token a layer.

- PCA (data-aware, as TransMLA / MHA2MLA-style conversions fit it): the top eigenvectors of the keys'
  and values' covariance on a calibration text, about their mean (the mean is one vector a layer,
  stored once, not per token). On the calibration rows the squared error is exactly the sum of the
  discarded eigenvalues times the number of rows.
- SVD (the data-free baseline): the top left singular vectors of the stacked [W_k; W_v] weights, about
  the projections' bias.

Keys are compressed before the rotary embedding: RoPE is undone, the key rebuilt, RoPE applied again,
as caching one latent without a decoupled RoPE key would require.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class LatentBasis:
    mean: torch.Tensor  # (D,) the centre the directions are taken about
    directions: torch.Tensor  # (D, D) columns by decreasing variance (PCA) or singular value (SVD)
    spectrum: torch.Tensor  # (D,) the eigenvalues (PCA: variance per row) or squared singular values

    @property
    def width(self) -> int:
        return int(self.mean.shape[0])


def pca_basis(rows: torch.Tensor) -> LatentBasis:
    """rows (N, D): each token's keys and values -> the covariance's eigenvectors (float64 throughout)."""
    x = rows.double()
    mean = x.mean(0)
    centred = x - mean
    cov = centred.T @ centred / x.shape[0]  # (D, D), population covariance
    values, vectors = torch.linalg.eigh(cov)  # ascending
    order = torch.argsort(values, descending=True)
    return LatentBasis(mean, vectors[:, order], values[order].clamp_min(0.0))


def svd_basis(weight: torch.Tensor, bias: torch.Tensor | None = None) -> LatentBasis:
    """weight (D, d_model) = [W_k; W_v] stacked as the rows are -> its left singular vectors."""
    u, s, _ = torch.linalg.svd(weight.double(), full_matrices=False)  # (D, min(D, d)), descending
    D = weight.shape[0]
    if u.shape[1] < D:  # more outputs than inputs: the missing directions carry nothing
        u = torch.linalg.qr(torch.cat([u, torch.eye(D, dtype=u.dtype)], 1))[0][:, :D]
        s = torch.cat([s, s.new_zeros(D - s.shape[0])])
    mean = bias.double() if bias is not None else weight.new_zeros(D, dtype=torch.float64)
    return LatentBasis(mean, u, s**2)


def reconstruct(rows: torch.Tensor, basis: LatentBasis, rank: int) -> torch.Tensor:
    """rows (..., D) -> the same rows rebuilt from their first `rank` coordinates, in rows' dtype."""
    if isinstance(rank, bool) or not isinstance(rank, int) or not 1 <= rank <= basis.width:
        raise ValueError(f"the latent rank must be a whole number from 1 to {basis.width}, not {rank!r}.")
    if rows.shape[-1] != basis.width:
        raise ValueError(f"these rows are {rows.shape[-1]} wide and the basis {basis.width}; fit it on the same layer.")
    if rank == basis.width:
        return rows
    u = basis.directions[:, :rank]  # (D, r)
    x = rows.double() - basis.mean
    return ((x @ u) @ u.T + basis.mean).to(rows.dtype)


def predicted_error(basis: LatentBasis, rank: int, n_rows: int) -> float:
    """The squared reconstruction error PCA predicts on its own calibration rows: the discarded variance."""
    return float(basis.spectrum[rank:].sum()) * n_rows


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """Llama's rotate_half: (x1, x2) -> (-x2, x1) over the two halves of the last axis."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x (B, K, T, h), cos/sin (B, T, h) as the model's rotary embedding gives them."""
    return x * cos[:, None] + rotate_half(x) * sin[:, None]


def undo_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """The inverse rotation (the angle negated): undo_rope(apply_rope(x)) == x."""
    return x * cos[:, None] - rotate_half(x) * sin[:, None]


def kv_rows(key: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """key, value (B, K, T, h) -> (B, T, 2*K*h): each token's keys then values, head by head."""
    B, K, T, h = key.shape
    return torch.cat([key.transpose(1, 2).reshape(B, T, K * h), value.transpose(1, 2).reshape(B, T, K * h)], -1)


def split_rows(rows: torch.Tensor, n_kv: int, head_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The inverse of kv_rows: (B, T, 2*K*h) -> key, value (B, K, T, h)."""
    B, T, _ = rows.shape
    k, v = rows.split(n_kv * head_dim, dim=-1)
    return (k.reshape(B, T, n_kv, head_dim).transpose(1, 2), v.reshape(B, T, n_kv, head_dim).transpose(1, 2))
