"""Readable ticks for the plots: round values for the pixels an axis has (on a log axis 1, 2, 5 x 10^k, or
whole decades when they are enough), written as 1K, 10M, 2G, 256 MiB; on the swept axis, the swept values
thinned so their labels never touch."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from core.format import format_bytes, format_count


def short_number(v: float, kind: str = "count") -> str:
    """1e6 -> '1M', 2.5e-3 -> '0.0025', 1073741824 bytes -> '1 GiB'; a tick's float noise is rounded away."""
    v = float(f"{v:.6g}")
    if kind == "bytes":
        return format_bytes(v)
    if abs(v) >= 1000:
        return format_count(v)
    return f"{v:g}"


def _nice_step(raw: float, binary: bool) -> float:
    """The smallest 1, 2, 5 x 10^k (or, for bytes of a KiB and more, power of two) at least raw."""
    if binary and raw >= 1024:
        return 2.0 ** math.ceil(math.log2(raw))
    base = 10.0 ** math.floor(math.log10(raw))
    return next(m * base for m in (1, 2, 5, 10) if m * base >= raw * (1 - 1e-9))


def linear_ticks(lo: float, hi: float, most: int, binary: bool = False) -> list[float]:
    """Evenly spaced round values inside lo..hi: at least two and at most `most` (when the range allows)."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo] if math.isfinite(lo) else []
    most = max(2, most)
    step = _nice_step((hi - lo) / most, binary)
    ticks = _multiples(lo, hi, step)
    while len(ticks) > most:  # 0..1 in steps of 0.2 is six ticks: take the next round step
        step = _nice_step(step * 1.01, binary)
        ticks = _multiples(lo, hi, step)
    while len(ticks) < 2:  # a range narrower than its round step: halve until two fit
        step /= 2
        ticks = _multiples(lo, hi, step)
    return ticks


def _multiples(lo: float, hi: float, step: float) -> list[float]:
    return [k * step for k in range(math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9) + 1)]


def axis_ticks(lo: float, hi: float, log: bool, kind: str = "count", most: int = 6) -> list[float]:
    """An axis's labelled ticks for the range it shows (in log10 units on a log axis): round values, at least
    two inside the range and at most `most`. A log axis ticks at 1, 2, 5 x 10^k (bytes at powers of two),
    thinned to fit; a range too narrow for two such ticks gets evenly spaced values instead."""
    lo, hi = min(lo, hi), max(lo, hi)
    if not log:
        return linear_ticks(lo, hi, most, binary=kind == "bytes")
    if kind == "bytes":
        candidates = [n * math.log10(2) for n in range(math.ceil(lo / math.log10(2) - 1e-9),
                                                         math.floor(hi / math.log10(2) + 1e-9) + 1)]
    else:
        candidates = [e + math.log10(m) for e in range(math.floor(lo) - 1, math.ceil(hi) + 1) for m in (1, 2, 5)]
        candidates = [c for c in candidates if lo - 1e-9 <= c <= hi + 1e-9]
        decades = [c for c in candidates if abs(c - round(c)) < 1e-9]
        if len(decades) >= 3:  # whole decades when they are enough: 1, 10, 100 reads better than 1, 2, 5, 10
            candidates = decades
    if len(candidates) < 2:
        values = linear_ticks(10.0**lo, 10.0**hi, most, binary=kind == "bytes")
        return [math.log10(v) for v in values if v > 0]
    step = max(1, math.ceil(len(candidates) / most))
    return candidates[::step]


def spaced_values(values: list[Any], plot_px: float, log: bool, char_px: float = 7.0,
                  label: Callable[[Any], str] | None = None) -> list[Any]:
    """The swept values to label: every one whose label (label(v), or v with digit grouping) has room beside
    the last one shown."""
    if not values or plot_px <= 0:
        return values[:1]
    order = sorted(values, key=lambda v: math.log10(v) if log else float(v))  # a sweep may run downwards (32..1)
    if order != list(values):
        shown = spaced_values(order, plot_px, log, char_px, label)
        return sorted(shown, key=values.index)
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
