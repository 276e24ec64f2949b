"""An eviction as the Heatmaps tab draws it: the keys each head's KV group kept of the text, as a per-head key
selection (core/kinds/selection.py), so the evicted keys show grey in every tile and the maps as trained show
when the dense box is ticked. Plain numpy."""

from __future__ import annotations

import numpy as np

from core.kinds.selection import KeySelection


def eviction_selection(kept: np.ndarray, scores: np.ndarray, before: np.ndarray, label: str) -> KeySelection:
    """kept, scores (K, T): each KV head's kept keys and the press's score; before (H, T, T): the maps as trained."""
    H, T = before.shape[0], kept.shape[-1]
    group = H // kept.shape[0]
    causal = np.tril(np.ones((T, T), dtype=bool))
    per_head = np.repeat(kept, group, axis=0)  # (K, T) -> (H, T)
    read = (per_head[:, None, :] | np.eye(T, dtype=bool)[None]) & causal[None]  # (H, T, T): a query sees itself
    score = np.where(causal[None], np.repeat(scores, group, axis=0)[:, None, :], -np.inf).astype(np.float32)
    rule = f"{label}: each KV head keeps its {int(kept[0].sum())} highest-scored of the text's {T} keys"
    return KeySelection(read, score, "press score", rule, before.astype(np.float32))
