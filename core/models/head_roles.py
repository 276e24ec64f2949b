"""What each head does, scored from its attention pattern alone (pure numpy).

Detection scores follow TransformerLens' head detector (transformer_lens/head_detector.py,
error_measure="mul", no BOS or current-token exclusion):

    score = sum(A * P) / sum(A)

where A is one head's (T, T) attention pattern and P a 0/1 detection pattern:
- previous-token: P[i, i-1] = 1;
- duplicate-token: P[i, j] = 1 where token j equals token i and j < i;
- induction: P[i, j] = 1 where token j-1 equals token i and j-1 < i (the token after an earlier
  occurrence of the current token). On a random sequence of L tokens repeated twice, that is
  attention from position i to i-(L-1).
Since every row of A sums to 1, sum(A) = T and a score is the mean over rows of the mass on P.

On the induction probe (a random sequence of L tokens repeated twice) the induction score is
TransformerLens' probe score instead: the mean attention from each position i of the second copy
to i-(L-1), the token after its earlier occurrence. (The detector score cannot pass 0.5 there:
the first copy's rows have no earlier occurrence to attend to.)

Descriptive measures (mean over rows):
- sink: mass on the first token (rows after the first);
- self: mass on the diagonal;
- local: mass within LOCAL_WINDOW tokens of the query (|i - j| <= LOCAL_WINDOW);
- entropy: row entropy divided by the log of the number of keys the row can see (1 = uniform);
- distance: expected |i - j| under the row.
"""

from __future__ import annotations

import numpy as np

LOCAL_WINDOW = 2
BADGE_THRESHOLD = 0.5  # a head gets a role badge only when its best role scores at least this
BADGE_ROLES = ("previous", "duplicate", "induction", "sink", "self")
ROLES = ("previous", "duplicate", "induction", "sink", "self", "local", "entropy", "distance")
ROLE_TEXT = {
    "previous": "previous-token: attends to the token just before",
    "duplicate": "duplicate-token: attends to earlier copies of the current token",
    "induction": "induction: attends to the token after an earlier copy of the current token (in-context copying)",
    "sink": "sink: parks attention on the first token",
    "self": "self: attends to the current token",
    "local": f"local: attention within {LOCAL_WINDOW} tokens",
    "entropy": "entropy: 1 = spread evenly over every visible token, 0 = one token",
    "distance": "distance: how many tokens back (or away) the attention lands on average",
}
SHORT = {"previous": "prev", "duplicate": "dup", "induction": "ind", "sink": "sink", "self": "self"}


def previous_token_pattern(n: int) -> np.ndarray:
    return np.eye(n, k=-1, dtype=np.float64)


def duplicate_token_pattern(tokens: list) -> np.ndarray:
    t = np.asarray([hash(x) for x in tokens])
    same = (t[:, None] == t[None, :]).astype(np.float64)  # (T, T)
    return np.tril(same, k=-1)


def induction_pattern(tokens: list) -> np.ndarray:
    dup = duplicate_token_pattern(tokens)  # dup[i, j]: token j == token i, j < i
    pat = np.zeros_like(dup)
    pat[:, 1:] = dup[:, :-1]  # P[i, j] = dup[i, j - 1]
    return np.tril(pat)  # only keys the query can see (j <= i)


def detection_score(attn: np.ndarray, pattern: np.ndarray) -> np.ndarray:
    """attn (..., T, T), pattern (T, T) -> sum(A * P) / sum(A) per leading index."""
    a = attn.astype(np.float64)
    return (a * pattern).sum(axis=(-2, -1)) / a.sum(axis=(-2, -1))


def induction_stripe(attn: np.ndarray, offset: int, period: int) -> np.ndarray:
    """attn (H, T, T) -> (H,) mean of A[i, i - period + 1] over the second copy's positions."""
    rows = np.arange(offset + period, min(attn.shape[-1], offset + 2 * period))
    return attn[:, rows, rows - period + 1].astype(np.float64).mean(-1)


def head_scores(attn: np.ndarray, tokens: list, repeat: tuple[int, int] | None = None) -> dict[str, np.ndarray]:
    """attn (H, T, T) for one layer -> {role: (H,) scores}. repeat=(offset, L) marks the induction
    probe: L tokens from position offset, then the same L again."""
    H, T, _ = attn.shape
    a = attn.astype(np.float64)
    i = np.arange(T)
    dist = np.abs(i[:, None] - i[None, :])  # (T, T)
    visible = (a > 0).sum(-1)  # keys each row can see (causal: i + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ent = -np.where(a > 0, a * np.log(a), 0.0).sum(-1)  # (H, T)
        norm = np.where(visible > 1, ent / np.log(np.maximum(visible, 2)), np.nan)
    rows = slice(1, None) if T > 1 else slice(0, None)
    return {
        "previous": detection_score(a, previous_token_pattern(T)),
        "duplicate": detection_score(a, duplicate_token_pattern(tokens)),
        "induction": (induction_stripe(a, *repeat) if repeat else detection_score(a, induction_pattern(tokens))),
        "sink": a[:, rows, 0].mean(-1),
        "self": np.diagonal(a, axis1=-2, axis2=-1).mean(-1),
        "local": (a * (dist <= LOCAL_WINDOW)).sum(-1).mean(-1),
        "entropy": np.nan_to_num(np.nanmean(norm, axis=-1), nan=0.0) if np.isfinite(norm).any() else np.zeros(H),
        "distance": (a * dist).sum(-1).mean(-1),
    }


def all_layer_scores(attentions: list[np.ndarray], tokens: list,
                     repeat: tuple[int, int] | None = None) -> dict[str, np.ndarray]:
    """Per layer (H_l, T, T) -> {role: (L, H) scores} (layers must share H)."""
    per_layer = [head_scores(a, tokens, repeat) for a in attentions]
    return {role: np.stack([s[role] for s in per_layer]) for role in ROLES}


def badge(scores: dict[str, np.ndarray], head: int, threshold: float = BADGE_THRESHOLD) -> tuple[str, float] | None:
    """The head's strongest badge role and its score, or None below the threshold."""
    best = max(BADGE_ROLES, key=lambda r: float(scores[r][head]))
    value = float(scores[best][head])
    return (best, value) if value >= threshold else None


def similar_heads(patterns: np.ndarray, index: int, k: int = 5) -> list[tuple[int, float]]:
    """patterns (N, T, T) -> the k heads whose mean pattern is closest to head `index`, with the
    mean absolute difference of their attention (0 = identical), nearest first."""
    flat = patterns.reshape(len(patterns), -1).astype(np.float64)
    d = np.abs(flat - flat[index]).mean(-1) * patterns.shape[-1]  # per-row L1, averaged
    order = [int(j) for j in np.argsort(d, kind="stable") if j != index][:k]
    return [(j, float(d[j])) for j in order]


PROBE_LENGTH = 50


def induction_probe_ids(vocab_size: int, length: int = PROBE_LENGTH, seed: int = 0, bos: int | None = None,
                        low: int = 100) -> tuple[list[int], tuple[int, int]]:
    """A seeded random sequence of `length` token ids repeated twice, after a BOS token when the
    model has one (TransformerLens' probe). Returns the ids and repeat=(offset, length)."""
    rng = np.random.default_rng(seed)
    first = rng.integers(low, max(low + length, vocab_size - 1), size=length).tolist()
    head = [bos] if bos is not None else []
    return head + first + first, (len(head), length)


PROBE_WORDS = ("apple river stone cloud garden silver window forest lamp music paper ocean tiger violin "
               "candle bridge meadow rocket pencil harbor mirror thunder velvet orchard compass lantern "
               "marble falcon glacier saddle").split()


def induction_probe_text(length: int = 20, seed: int = 0) -> tuple[str, tuple[int, int]]:
    """Random-weight mode's probe: `length` seeded random words, repeated twice, and repeat=(0, length)."""
    rng = np.random.default_rng(seed)
    words = [PROBE_WORDS[i] for i in rng.integers(0, len(PROBE_WORDS), size=length)]
    return " ".join(words + words), (0, length)
