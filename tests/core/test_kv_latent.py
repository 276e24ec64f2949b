"""The latent KV fits: PCA's error is its discarded eigenvalues, SVD and PCA agree at full rank, RoPE is
undone exactly, and the window mask's rule, pair by pair."""

import pytest
import torch

from core.models.kv.latent import (
    apply_rope,
    kv_rows,
    pca_basis,
    predicted_error,
    reconstruct,
    split_rows,
    svd_basis,
    undo_rope,
)
from core.models.kv.window import window_keep, windowed_mask


def _correlated_rows(n=400, d=24, seed=0):
    g = torch.Generator().manual_seed(seed)
    mix = torch.randn(d, d, generator=g, dtype=torch.float64) * torch.logspace(0, -2, d, dtype=torch.float64)
    return torch.randn(n, d, generator=g, dtype=torch.float64) @ mix.T + 3.0


@pytest.mark.parametrize("rank", [1, 4, 12, 23])
def test_pca_error_on_its_own_rows_is_the_discarded_variance(rank):
    rows = _correlated_rows()
    basis = pca_basis(rows)
    err = float(((reconstruct(rows, basis, rank) - rows) ** 2).sum())
    assert err == pytest.approx(predicted_error(basis, rank, len(rows)), rel=1e-9)


def test_pca_and_svd_agree_at_full_rank_and_svd_keeps_the_weights_span():
    rows = _correlated_rows()
    weight = torch.randn(24, 10, dtype=torch.float64)  # 24 outputs of 10 inputs: rank 10
    for basis in (pca_basis(rows), svd_basis(weight)):
        assert torch.equal(reconstruct(rows, basis, 24), rows)
    x = torch.randn(50, 10, dtype=torch.float64)
    y = x @ weight.T  # every output lies in the weights' column space
    assert torch.allclose(reconstruct(y, svd_basis(weight), 10), y, atol=1e-10)
    assert not torch.allclose(reconstruct(y, svd_basis(weight), 5), y, atol=1e-3)


def test_rope_is_undone_exactly_and_rows_split_back():
    key, value = torch.randn(1, 3, 7, 8, dtype=torch.float64), torch.randn(1, 3, 7, 8, dtype=torch.float64)
    angles = torch.arange(7, dtype=torch.float64)[:, None] * torch.linspace(0.1, 1.0, 4, dtype=torch.float64)
    angles = torch.cat([angles, angles], -1)[None]  # (1, T, h) as Llama's rotary embedding
    cos, sin = angles.cos(), angles.sin()
    assert torch.allclose(undo_rope(apply_rope(key, cos, sin), cos, sin), key, atol=1e-12)
    rot = apply_rope(key, cos, sin)
    assert torch.allclose(rot.norm(dim=-1), key.norm(dim=-1))  # a rotation: lengths kept
    k, v = split_rows(kv_rows(key, value), 3, 8)
    assert torch.equal(k, key) and torch.equal(v, value)
    assert kv_rows(key, value)[0, 2, 8:16].tolist() == key[0, 1, 2].tolist()  # token 2, head 1's key


@pytest.mark.parametrize("causal", [True, False])
def test_the_window_mask_follows_its_rule_pair_by_pair(causal):
    T, W, S = 12, 3, 2
    keep = window_keep(T, T, W, S, causal)
    for i in range(T):
        for j in range(T):
            near = 0 <= i - j < W if causal else abs(i - j) < W
            sink = j < S and (j <= i or not causal)
            assert bool(keep[i, j]) == (near or sink), (i, j)
    additive = torch.zeros(1, 1, T, T).masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), -1e30)
    merged = windowed_mask(additive, keep, torch.float32)
    assert ((merged[0, 0] > -1) == keep).all() if causal else True
