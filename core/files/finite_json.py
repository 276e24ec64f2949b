"""JSON that any reader takes: a figure that is not finite (a loss of a broken model, 0/0) is written as null, never
as the bare NaN or Infinity that json.dumps writes by default and strict parsers refuse."""

from __future__ import annotations

import json
import math
from typing import Any


def finite(value: Any) -> Any:
    """value with every NaN and infinity, at any depth, replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def dumps(value: Any, **kw: Any) -> str:
    return json.dumps(finite(value), allow_nan=False, **kw)
