"""kvpress's count of the tokens a press keeps (kvpress/utils.py compute_n_kept, 0.5.5), without torch: the chart,
the planner's byte counts and the Heatmaps tab's view of an eviction point all count with it."""

from __future__ import annotations


def n_kept(length: int, ratio: float) -> int:
    """Tokens kept of `length` at compression ratio `ratio` (the fraction evicted): max(1, int(T * (1 - ratio)))."""
    if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not 0 <= ratio < 1:
        raise ValueError(f"a compression ratio is the fraction of the context evicted, from 0 up to (not including) "
                         f"1; {ratio!r:.30} is not one.")
    return max(1, int(length * (1 - ratio)))
