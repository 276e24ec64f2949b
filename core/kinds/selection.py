"""Which cached keys a sparse layer's queries read, for its heatmaps: a layer that attends to a selection of its causal
keys (DSA's top-k) says which it read and the score that chose them, so its maps show the keys it skipped as
skipped (not as a softmax's zeros), and the dense layer's map beside them. Plain numpy: the widgets read it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class KeySelection:
    read: np.ndarray  # (T, T) bool: query t reads key s (always within its causal keys)
    scores: np.ndarray  # (T, T) float32: the score that chose them (-inf where a query may not look)
    score_name: str  # what the score is, as the hover names it ("index score"; '': no score to show)
    rule: str  # how the keys were chosen, as the legend says it ("its top 2,048 by the lightning indexer's score")
    dense: np.ndarray  # (H, T, T) float32: the same layer's maps with every causal key read

    def __post_init__(self) -> None:
        T = len(self.read)
        if self.read.shape != (T, T) or self.scores.shape != (T, T) or self.dense.shape[1:] != (T, T):
            raise ValueError(f"a key selection's read and score maps are T x T and its dense maps H x T x T alike; "
                             f"these are {self.read.shape}, {self.scores.shape} and {self.dense.shape}.")

    def skipped(self) -> np.ndarray:
        """(T, T) bool: causal keys a query did not read."""
        T = len(self.read)
        return np.tril(np.ones((T, T), dtype=bool)) & ~self.read
