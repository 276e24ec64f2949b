import numpy as np
import pytest

from core.models.head_roles import (
    BADGE_THRESHOLD,
    badge,
    detection_score,
    duplicate_token_pattern,
    head_scores,
    induction_pattern,
    induction_probe_ids,
    induction_probe_text,
    previous_token_pattern,
    similar_heads,
)


def perfect_previous(T):
    a = np.zeros((T, T))
    a[0, 0] = 1.0  # the first token has nothing before it
    a[np.arange(1, T), np.arange(T - 1)] = 1.0
    return a


def test_perfect_previous_token_head():
    T = 40
    tokens = [f"t{i}" for i in range(T)]
    s = head_scores(perfect_previous(T)[None], tokens)
    # TransformerLens' score is sum(A*P)/sum(A): every row but the first lands on P.
    assert s["previous"][0] == pytest.approx((T - 1) / T) and s["previous"][0] > 0.97
    assert s["induction"][0] == pytest.approx(0.0) and s["duplicate"][0] == 0.0
    assert s["distance"][0] == pytest.approx((T - 1) / T)
    assert badge(s, 0) == ("previous", pytest.approx((T - 1) / T))


def test_uniform_pattern_has_entropy_one():
    T = 16
    assert head_scores(np.full((1, T, T), 1 / T), list("abcdefghijklmnop"))["entropy"][0] == pytest.approx(1.0)
    causal = np.tril(np.ones((T, T)))
    causal /= causal.sum(-1, keepdims=True)
    assert head_scores(causal[None], list(range(T)))["entropy"][0] == pytest.approx(1.0)


def test_transformerlens_definitions_on_a_worked_example():
    tokens = ["A", "B", "A", "B"]
    assert previous_token_pattern(4).tolist() == [[0, 0, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]
    assert duplicate_token_pattern(tokens).tolist() == [[0, 0, 0, 0], [0, 0, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0]]
    # induction: the token after an earlier copy of the current token
    assert induction_pattern(tokens).tolist() == [[0, 0, 0, 0], [0, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]
    attn = np.array([[1.0, 0, 0, 0],
                     [0.5, 0.5, 0, 0],
                     [0.2, 0.6, 0.2, 0],
                     [0.1, 0.1, 0.7, 0.1]])
    # By hand: induction mass 0.6 (row 2 -> key 1) + 0.7 (row 3 -> key 2) over sum(A) = 4.
    assert detection_score(attn, induction_pattern(tokens)) == pytest.approx(1.3 / 4)
    assert detection_score(attn, duplicate_token_pattern(tokens)) == pytest.approx((0.2 + 0.1) / 4)
    assert detection_score(attn, previous_token_pattern(4)) == pytest.approx((0.5 + 0.6 + 0.7) / 4)
    s = head_scores(attn[None], tokens)
    assert s["sink"][0] == pytest.approx((0.5 + 0.2 + 0.1) / 3)
    assert s["self"][0] == pytest.approx((1 + 0.5 + 0.2 + 0.1) / 4)


def test_induction_probe_score_is_the_stripe_on_the_second_copy():
    L = 10
    ids, repeat = induction_probe_ids(1000, length=L, seed=3, bos=1)
    assert ids[0] == 1 and ids[1:L + 1] == ids[L + 1:] and repeat == (1, L)
    T = len(ids)
    attn = np.zeros((1, T, T))
    attn[0, np.arange(T), np.arange(T)] = 1.0
    rows = np.arange(1 + L, T)
    attn[0, rows] = 0.0
    attn[0, rows, rows - L + 1] = 1.0  # a perfect induction head
    assert head_scores(attn, ids, repeat)["induction"][0] == pytest.approx(1.0)
    text, rep = induction_probe_text(length=5, seed=1)
    words = text.split()
    assert words[:5] == words[5:] and rep == (0, 5)


def test_no_badge_below_the_threshold_and_similar_heads():
    T = 12
    flat = np.full((3, T, T), 1 / T)
    s = head_scores(flat, list(range(T)))
    assert all(badge(s, h) is None for h in range(3)) and BADGE_THRESHOLD == 0.5
    patterns = np.stack([perfect_previous(T), perfect_previous(T) * 0.9 + 0.1 / T, np.full((T, T), 1 / T)])
    near = similar_heads(patterns, 0, k=2)
    assert [j for j, _ in near] == [1, 2] and near[0][1] < near[1][1]
