"""How sure a comparison of two timings is: the ratio of their medians with a 95% bootstrap interval.

Each timing keeps its repeats (TimingStats.samples_ms). Resampling both sets of repeats with replacement, the
ratio of the resampled medians gives an interval; when it holds 1.0 the two figures are not measurably
different and the app says so instead of a direction. Seeded, so a figure shown twice reads the same.
numpy only (a widget may call it): 2000 resamples of 200 repeats take about 10 ms.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.ma  # noqa: F401  np.median imports it on first use: 7-28 ms of the window's thread at the first timing
import numpy.random  # noqa: F401  so does default_rng: 13 modules, 7-10 ms more in the first timing's slot

BOOTSTRAP = 2000  # resamples: the 2.5% and 97.5% points move by about 1% of the interval between seeds
MAX_SAMPLES = 1000  # repeats a report keeps per measurement (measure() takes at most 200)
SAMPLED = ("layer", "core", "prefill", "decode", "fused_qkv", "separate_qkv")  # the measurements a timing keeps


@dataclass(frozen=True)
class Ratio:
    ratio: float  # median(a) / median(b)
    low: float  # 95% bootstrap interval of the ratio
    high: float

    @property
    def measurable(self) -> bool:
        """Whether the interval excludes 1.0: a and b differ beyond their noise."""
        return not self.low <= 1.0 <= self.high

    def cell(self) -> str:
        """'x0.53 (0.50-0.56)' or '≈ x1.02 (0.97-1.08: no measurable difference)', for a table cell."""
        ci = f"{self.low:.3g}-{self.high:.3g}"
        return f"x{self.ratio:.3g} ({ci})" if self.measurable else f"≈ x{self.ratio:.3g} ({ci}: no measurable difference)"

    def short(self) -> str:
        """'x0.53, CI 0.50-0.56', or 'x5.41, but CI 0.62-14 holds x1: too noisy to tell' for a narrow panel: a ratio
        far from 1 beside "no measurable difference" read as a contradiction without its interval."""
        ci = f"CI {self.low:.2g}-{self.high:.2g}" if self.high >= 10 else f"CI {self.low:.2f}-{self.high:.2f}"
        if self.measurable:
            return f"x{self.ratio:.2f}, {ci}"
        return f"x{self.ratio:.2f}, but {ci} holds x1: too noisy to tell"

    def text(self) -> str:
        """'x0.53 (95% CI 0.50-0.56)', or 'no measurable difference (x1.02, 95% CI 0.97-1.08)'."""
        ci = f"95% CI {self.low:.3g}-{self.high:.3g}"
        return f"x{self.ratio:.3g} ({ci})" if self.measurable else f"no measurable difference (x{self.ratio:.3g}, {ci})"


def ratio_ci(a: Sequence[float], b: Sequence[float], seed: int = 0, n_boot: int = BOOTSTRAP) -> Ratio | None:
    """median(a) / median(b) with its 95% percentile-bootstrap interval; None without repeats to resample (or a
    zero median: nothing to divide by)."""
    if len(a) < 2 or len(b) < 2:
        return None
    xa, xb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if np.median(xb) <= 0:
        return None
    rng = np.random.default_rng(seed)
    ma = np.median(xa[rng.integers(0, len(xa), (n_boot, len(xa)))], axis=1)  # (n_boot,) resampled medians
    mb = np.median(xb[rng.integers(0, len(xb), (n_boot, len(xb)))], axis=1)
    ratios = ma[mb > 0] / mb[mb > 0]
    if not len(ratios):
        return None
    low, high = np.quantile(ratios, [0.025, 0.975])
    return Ratio(float(np.median(xa) / np.median(xb)), float(low), float(high))
