"""The eviction methods by name, in the order the chart and the CLI list them."""

from __future__ import annotations

from core.models.evict.presses.expected import ExpectedAttention
from core.models.evict.presses.knorm import Knorm
from core.models.evict.presses.observed import ObservedAttention
from core.models.evict.presses.press import Press
from core.models.evict.presses.snapkv import SnapKV
from core.models.evict.presses.streaming import StreamingLLM
from core.models.evict.presses.tova import TOVA

PRESSES: dict[str, Press] = {p.name: p for p in (StreamingLLM(), SnapKV(), ObservedAttention(), TOVA(), Knorm(),
                                                 ExpectedAttention())}


def press_named(name: str) -> Press:
    if name not in PRESSES:
        shown = repr(name) if len(repr(name)) <= 30 else "that name"
        raise ValueError(f"eviction method {shown} is not known; choose from {', '.join(PRESSES)}.")
    return PRESSES[name]
