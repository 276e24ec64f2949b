"""Readable ticks for the sweep plots: on a log axis, labelled majors only (1, 2, 5 per decade when
the data spans few decades, every decade, or every few decades, when it spans many), written as 1K,
10M, 2G; on the swept axis, the swept values thinned so their labels never touch."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from core.counts import format_bytes, format_count


def short_number(v: float, kind: str = "count") -> str:
    """1e6 -> '1M', 2.5e-3 -> '0.0025', 1073741824 bytes -> '1 GiB'."""
    if kind == "bytes":
        return format_bytes(v)
    if v >= 1000:
        return format_count(v)
    return f"{v:g}"


def log_ticks(lo: float, hi: float, kind: str = "count", max_ticks: int = 7) -> list[tuple[float, str]]:
    """Ticks (log10 position, label) covering lo..hi (both > 0). Bytes tick at powers of two
    (1 KiB, 4 KiB, ... 1 MiB), everything else at 1, 2, 5 x 10^k."""
    if not (lo > 0 and hi > 0):
        return []
    lo, hi = min(lo, hi), max(lo, hi)
    if kind == "bytes":
        first2, last2 = math.floor(math.log2(lo)), math.ceil(math.log2(hi))
        step2 = max(1, math.ceil((last2 - first2 + 1) / max_ticks))
        if step2 > 2:
            step2 = 10 if step2 > 5 else (5 if step2 > 2 else step2)  # whole KiB/MiB/GiB steps when wide
        powers = [n for n in range(first2, last2 + 1) if n % step2 == 0] or [first2]
        return [(n * math.log10(2), format_bytes(2**n)) for n in powers]
    first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    decades = max(1, last - first)
    if decades <= 2:
        mantissas = [1, 2, 5]
    else:
        mantissas = [1]
    values = [m * 10.0**e for e in range(first, last + 1) for m in mantissas]
    values = [v for v in values if lo / 1.0001 <= v <= hi * 1.0001] or [10.0**first, 10.0**last]
    step = max(1, math.ceil(len(values) / max_ticks))
    values = values[::step]
    return [(math.log10(v), short_number(v, kind)) for v in values]


def spaced_values(values: list[Any], plot_px: float, log: bool, char_px: float = 7.0,
                  label: Callable[[Any], str] | None = None) -> list[Any]:
    """The swept values to label: every one whose label (label(v), or v with digit grouping) has room beside
    the last one shown."""
    if not values or plot_px <= 0:
        return values[:1]
    pos = [math.log10(v) if log else float(v) for v in values]
    span = (max(pos) - min(pos)) or 1.0
    xs = [(p - min(pos)) / span * plot_px for p in pos]
    width = lambda v: char_px * len(label(v) if label else f"{v:,}") + 10  # noqa: E731
    shown: list[Any] = [values[-1]]  # the last value is always labelled; then leftwards, each with room
    last_px = xs[-1]
    for v, x in zip(reversed(values[:-1]), reversed(xs[:-1]), strict=True):
        if last_px - x >= width(v) / 2 + width(shown[-1]) / 2:
            shown.append(v)
            last_px = x
    return sorted(shown, key=values.index)
