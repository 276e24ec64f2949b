"""Which cached keys a sparse layer's queries read, for its heatmaps: a layer that attends to a selection of its causal
keys (DSA's top-k) says which it read and the score that chose them, so its maps show the keys it skipped as
skipped (not as a softmax's zeros), and the dense layer's map beside them. Plain numpy: the widgets read it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class KeySelection:
    read: np.ndarray  # (T, T) bool: query t reads key s (always within its causal keys); (H, T, T): per head
    scores: np.ndarray  # read's shape, float32: the score that chose them (-inf where a query may not look)
    score_name: str  # what the score is, as the hover names it ("index score"; '': no score to show)
    rule: str  # how the keys were chosen, as the legend says it ("its top 2,048 by the lightning indexer's score")
    dense: np.ndarray  # (H, T, T) float32: the same layer's maps with every causal key read

    def __post_init__(self) -> None:
        T = self.read.shape[-1]
        per_head = self.read.shape == (len(self.dense), T, T)
        if not (self.read.shape == (T, T) or per_head) or self.scores.shape != self.read.shape \
                or self.dense.shape[1:] != (T, T):
            raise ValueError(f"a key selection's read and score maps are T x T (or H x T x T, one a head) and its dense "
                             f"maps H x T x T alike; these are {self.read.shape}, {self.scores.shape} and "
                             f"{self.dense.shape}.")

    def skipped(self) -> np.ndarray:
        """(T, T) bool, or (H, T, T) one a head: causal keys a query did not read."""
        T = self.read.shape[-1]
        return np.tril(np.ones((T, T), dtype=bool)) & ~self.read

    def skipped_of(self, head: int) -> np.ndarray:
        """(T, T) bool: the causal keys head `head`'s queries did not read."""
        skipped = self.skipped()
        return skipped[head] if skipped.ndim == 3 else skipped

    def at(self, head: int, query: int, key: int) -> tuple[bool, float]:
        """Whether head `head`'s query read the key, and the score that decided it."""
        if self.read.ndim == 3:
            return bool(self.read[head, query, key]), float(self.scores[head, query, key])
        return bool(self.read[query, key]), float(self.scores[query, key])
