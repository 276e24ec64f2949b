"""The eviction methods by name, in the order the chart and the CLI list them."""

from __future__ import annotations

from core.models.evict.catalogue import PRESS_INFO, press_info
from core.models.evict.presses.expected import ExpectedAttention
from core.models.evict.presses.knorm import Knorm
from core.models.evict.presses.observed import ObservedAttention
from core.models.evict.presses.press import Press
from core.models.evict.presses.snapkv import SnapKV
from core.models.evict.presses.streaming import StreamingLLM
from core.models.evict.presses.tova import TOVA

PRESSES: dict[str, Press] = {p.name: p for p in (StreamingLLM(), SnapKV(), ObservedAttention(), TOVA(), Knorm(),
                                                 ExpectedAttention())}
assert list(PRESSES) == list(PRESS_INFO), "a press each entry of the catalogue, in its order"


def press_named(name: str) -> Press:
    press_info(name)  # a ValueError naming the choices
    return PRESSES[name]
