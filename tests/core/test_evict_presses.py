"""Each eviction press's kept tokens on a small random layer against a hand computation of kvpress's definition
(kvpress/presses/*.py, 0.5.5), written here in float64 numpy with loops: a test fails if a press's window, pooling,
averaging, sinks or normalisation changes."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from core.models.evict.keep import kept_indices, n_kept
from core.models.evict.presses.layer_view import LayerView
from core.models.evict.presses.registry import PRESSES

B, H, K, T, D = 1, 4, 2, 100, 8
G = H // K
BASE = 10000.0


def rope_at(positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Llama's rotary embedding: angles p / BASE^(2i/D), duplicated over the two halves."""
    inv = 1.0 / BASE ** (torch.arange(0, D, 2, dtype=torch.float64) / D)
    angles = positions[0].double()[:, None] * inv[None]  # (P, D/2)
    emb = torch.cat([angles, angles], -1)  # (P, D)
    return emb.cos()[None].float(), emb.sin()[None].float()


def rotate(x: np.ndarray, p: int) -> np.ndarray:
    """RoPE of one vector at position p, pair (i, i + D/2) turned by angle p * inv_i."""
    out = x.copy()
    for i in range(D // 2):
        a = p / BASE ** (2 * i / D)
        out[i] = x[i] * math.cos(a) - x[i + D // 2] * math.sin(a)
        out[i + D // 2] = x[i + D // 2] * math.cos(a) + x[i] * math.sin(a)
    return out


@pytest.fixture(scope="module")
def layer() -> tuple[LayerView, np.ndarray, np.ndarray, np.ndarray]:
    g = torch.Generator().manual_seed(7)
    q_pre = torch.randn(B, H, T, D, generator=g) * 1.5
    key = torch.randn(B, K, T, D, generator=g) * torch.linspace(0.5, 2.0, T)[None, None, :, None]
    value = torch.randn(B, K, T, D, generator=g)
    qn = q_pre[0].double().numpy()
    query = np.stack([[rotate(qn[h, t], t) for t in range(T)] for h in range(H)])  # (H, T, D)
    view = LayerView(torch.from_numpy(query).float()[None], key, value, D**-0.5, rope_at)
    return view, qn, key[0].double().numpy(), value[0].double().numpy()


def top(scores: np.ndarray, n: int) -> set[int]:
    return set(np.argsort(-scores, kind="stable")[:n].tolist())


def kept(name: str, view: LayerView, n: int) -> list[set[int]]:
    idx = kept_indices(PRESSES[name].score(view, n), n)[0]  # (K, n)
    return [set(row.tolist()) for row in idx]


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


def test_n_kept_is_kvpress_rule() -> None:
    assert [n_kept(1024, r) for r in (0.25, 0.5, 0.75, 0.875)] == [768, 512, 256, 128]
    assert n_kept(10, 0.99) == 1  # never empty
    assert n_kept(1000, 0.3) == int(1000 * (1 - 0.3)) == 700
    with pytest.raises(ValueError, match="fraction of the context evicted"):
        n_kept(10, 1.0)


@pytest.mark.parametrize("n", [5, 30, 77])
def test_streaming_keeps_four_sinks_and_the_most_recent(layer, n: int) -> None:
    view = layer[0]
    want = set(range(4)) | set(range(T - (n - 4), T))
    assert kept("streaming", view, n) == [want, want]


@pytest.mark.parametrize("n", [70, 85])
def test_snapkv_window_of_64_votes_pooled_over_5(layer, n: int) -> None:
    view, _qn, _k, _v = layer
    q = view.query[0].double().numpy()
    w, pool = 64, 5
    for kv in range(K):
        group_votes = np.zeros(T - w)
        for h in range(kv * G, (kv + 1) * G):
            votes = np.zeros(T)
            for r in range(T - w, T):  # each query of the window, causal
                logits = np.array([q[h, r] @ _k[kv, j] / math.sqrt(D) for j in range(r + 1)])
                votes[: r + 1] += softmax(logits)
            votes = votes[: T - w] / w
            padded = np.concatenate([np.zeros(pool // 2), votes, np.zeros(pool // 2)])
            group_votes += np.array([padded[j: j + pool].sum() / pool for j in range(T - w)]) / G
        want = top(group_votes, n - w) | set(range(T - w, T))
        assert kept("snapkv", view, n)[kv] == want


@pytest.mark.parametrize("n", [10, 50])
def test_h2o_mean_attention_over_the_queries_that_saw_each_key(layer, n: int) -> None:
    view, _qn, k, _v = layer
    q = view.query[0].double().numpy()
    for kv in range(K):
        score = np.zeros(T)
        for h in range(kv * G, (kv + 1) * G):
            total = np.zeros(T)
            for i in range(T):
                total[: i + 1] += softmax(np.array([q[h, i] @ k[kv, j] / math.sqrt(D) for j in range(i + 1)]))
            score += total / np.arange(T, 0, -1) / G
        assert kept("h2o", view, n)[kv] == top(score, n)


@pytest.mark.parametrize("n", [10, 50])
def test_tova_last_query_averaged_over_every_head_one_set_a_layer(layer, n: int) -> None:
    view, _qn, k, _v = layer
    q = view.query[0].double().numpy()
    score = np.zeros(T - 1)
    for h in range(H):
        probs = softmax(np.array([q[h, T - 1] @ k[h // G, j] / math.sqrt(D) for j in range(T)]))
        score += probs[: T - 1] / H
    want = top(score, n - 1) | {T - 1}
    assert kept("tova", view, n) == [want, want]


@pytest.mark.parametrize("n", [10, 50])
def test_knorm_keeps_the_smallest_keys(layer, n: int) -> None:
    view, _qn, k, _v = layer
    for kv in range(K):
        norms = np.array([math.sqrt(sum(x * x for x in k[kv, j])) for j in range(T)])
        assert kept("knorm", view, n)[kv] == top(-norms, n)


@pytest.mark.parametrize("n", [10, 50])
def test_expected_attention_gaussian_queries_rotated_ahead(layer, n: int) -> None:
    view, qn, k, v = layer
    sinks, future = 4, 512
    basis = np.eye(D)
    rotation = np.zeros((D, D))  # the mean over positions T..T+511 of RoPE as a matrix, built column by column
    for p in range(T, T + future):
        rotation += np.stack([rotate(basis[j], p) for j in range(D)], axis=1) / future
    for kv in range(K):
        score = np.zeros(T - sinks)
        for h in range(kv * G, (kv + 1) * G):
            x = qn[h, sinks:]  # the queries before RoPE, the sinks left out
            mu = x.mean(0)
            cov = (x - mu).T @ (x - mu) / len(x)
            mu_r, cov_r = rotation @ mu, rotation @ cov @ rotation.T
            logits = np.array([k[kv, j] @ mu_r / math.sqrt(D) + k[kv, j] @ cov_r @ k[kv, j] / D / 2
                               for j in range(sinks, T)])
            score += softmax(logits) / G
        score *= np.linalg.norm(v[kv, sinks:], axis=-1)
        want = {j + sinks for j in top(score, n - sinks)} | set(range(sinks))
        assert kept("expected", view, n)[kv] == want


def test_every_press_cites_its_kvpress_file_and_says_whether_it_splits_heads() -> None:
    from core.models.evict.catalogue import PRESS_INFO

    assert {p.name: p.per_head for p in PRESS_INFO.values()} == {
        "streaming": False, "snapkv": True, "h2o": True, "tova": False, "knorm": True, "expected": True}
    for name, p in PRESS_INFO.items():
        assert p.source.startswith("kvpress/presses/") and p.source.endswith("_press.py")
        module = __import__(type(PRESSES[name]).__module__, fromlist=["_"])
        assert p.source in module.__doc__  # the press's module cites the file it follows
