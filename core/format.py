"""Figures as people read them: bytes in binary units, counts with K/M/G, nouns with their plural."""

from __future__ import annotations


def format_bytes(n: float) -> str:
    """1536 -> '1.5 KiB', binary units as memory is sold to engineers."""
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB"]  # 1.18e18 B read '1048 PiB' without EiB
    value = float(n)
    for unit in units:
        if abs(value) < 1024 or unit == units[-1]:
            if unit == "B":
                return f"{int(value)} B"
            return f"{value:.3g} {unit}" if abs(value) < 100 else f"{value:.0f} {unit}"
        value /= 1024
    return f"{value} B"


def format_noun(n: float, noun: str) -> str:
    """format_noun(1, "head") -> '1 head', (12, "head") -> '12 heads', (2.25, "head") -> '2.25 heads'."""
    figure = f"{int(n):,}" if float(n).is_integer() else f"{n:.3g}"
    return f"{figure} {noun}" if n == 1 else f"{figure} {noun}s"


def format_count(n: float) -> str:
    """2359296 -> '2.36M'. The unit follows the value rounded to 3 figures: 999,999 is '1M', not '1e+03K'."""
    rounded = float(f"{n:.3g}")
    for div, suffix in ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")):
        if abs(rounded) >= div:
            return f"{rounded / div:.3g}{suffix}"
    return f"{n:.0f}" if float(n).is_integer() else f"{n:.3g}"


def table_row(label: str, value: str, note: str = "") -> str:
    """One row of a text table: the label, the value right-aligned, a note after it."""
    return f"  {label:<28}{value:>18}  {note}".rstrip()


def format_tokens(n: int) -> str:
    """A context length as people say it: 32k for 32,768, 1M for 1,048,576, else the number (1,500)."""
    for size, unit in ((2**20, "M"), (2**10, "k")):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    return f"{n:,}"
