"""How much one measured time changed against another, with the confidence their repeats give."""

from __future__ import annotations

from typing import Any

from core.timing.noise import Ratio, ratio_ci

SAMPLES_OF = {"median_ms": "layer", "core_median_ms": "core", "prefill_ms": "prefill", "decode_ms": "decode"}


def timing_ratio(report: dict[str, Any], base: dict[str, Any], key: str) -> Ratio | None:
    """report's time over base's for a timing row, with its bootstrap interval, when both kept their repeats."""
    name = SAMPLES_OF.get(key)
    a, b = (((r.get("timing") or {}).get("samples_ms") or {}).get(name or "") for r in (report, base))
    return ratio_ci(a, b) if a and b else None


def change(report: dict[str, Any], base: dict[str, Any], key: str) -> str:
    """'-97%, 95% CI -97% to -96%' from both timings' repeats, 'no measurable difference (+2%)' when the interval
    holds no change, or just '-97%' for timings without repeats (older reports)."""
    ratio = report["timing"][key] / base["timing"][key]
    sure = timing_ratio(report, base, key)
    if sure is None:
        return f"{ratio - 1:+.0%}"
    if not sure.measurable:
        return f"no measurable difference: {ratio - 1:+.0%}, 95% CI {sure.low - 1:+.0%} to {sure.high - 1:+.0%}"
    return f"{ratio - 1:+.0%}, 95% CI {sure.low - 1:+.0%} to {sure.high - 1:+.0%}"


def ms(x: float) -> str:
    """A time as a caption writes it: '1,234 ms', '12.3 ms'."""
    return f"{x:,.0f} ms" if x >= 100 else f"{x:.3g} ms"
