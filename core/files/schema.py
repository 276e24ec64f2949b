"""Typed checks for data read from files (workspaces, model configs): each returns the value or
raises ValueError with a sentence naming the field, so a damaged file is refused whole with a
reason instead of failing later with a TypeError half-way through being used."""

from __future__ import annotations

import math
from typing import Any


def _show(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and len(str(value)) > 24:
        return f"a {len(str(value).lstrip('-'))}-digit number"  # never echoed whole: a 401-digit schema was
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def whole(value: Any, where: str, lo: int = 0, hi: int = 2**63) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{where} must be a whole number, not {_show(value)}")
    if not lo <= value <= hi:
        raise ValueError(f"{where} must be from {lo:,} to {hi:,}, not {_show(value) if len(str(value)) < 30 else 'a huge number'}")
    return value


def number(value: Any, where: str, lo: float = 0.0, hi: float = 1e300) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{where} must be a number, not {_show(value)}")
    if isinstance(value, int) and not -(10**300) < value < 10**300:
        raise ValueError(f"{where} is too large a number")
    if not math.isfinite(value) or not lo <= value <= hi:
        raise ValueError(f"{where} must be a finite number from {lo:g} to {hi:g}, not {_show(value)}")
    return float(value)


def optional_number(value: Any, where: str, lo: float = 0.0, hi: float = 1e300) -> float | None:
    return None if value is None else number(value, where, lo, hi)


def text(value: Any, where: str, max_len: int = 10**6) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{where} must be text, not {_show(value)}")
    if len(value) > max_len:
        raise ValueError(f"{where} is longer than {max_len:,} characters")
    return value


def flag(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{where} must be true or false, not {_show(value)}")
    return value


def choice(value: Any, where: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed or not isinstance(value, str):
        raise ValueError(f"{where} must be one of {', '.join(allowed)}, not {_show(value)}")
    return value


def mapping(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{where} must be an object, not {_show(value)}")
    return value


def sequence(value: Any, where: str, max_len: int) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"{where} must be a list, not {_show(value)}")
    if len(value) > max_len:
        raise ValueError(f"{where} has {len(value):,} entries; at most {max_len:,} are allowed")
    return value
