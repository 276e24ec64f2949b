"""A measurement's statistics, without torch: the window's process reads them (core/timing/timer.py takes them)."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass


class Cancelled(Exception):
    """A newer request superseded this measurement; raised between repeats."""


@dataclass(frozen=True)
class TimingStats:
    median_ms: float
    p25_ms: float
    p75_ms: float
    reps: int
    samples_ms: tuple[float, ...] = ()  # every repeat, in order: what a comparison's confidence is drawn from

    def to_dict(self) -> dict[str, float | int]:
        return {k: v for k, v in asdict(self).items() if k != "samples_ms"}


def quartiles(samples_ms: list[float]) -> TimingStats:
    kept = tuple(samples_ms)
    if len(samples_ms) == 1:
        s = samples_ms[0]
        return TimingStats(s, s, s, 1, kept)
    q1, q2, q3 = statistics.quantiles(samples_ms, n=4, method="inclusive")
    return TimingStats(median_ms=q2, p25_ms=q1, p75_ms=q3, reps=len(samples_ms), samples_ms=kept)
