"""What the window has on screen, asked for when needed: the results (heatmaps, timing), not the inputs (those are
the View). Controllers that pin, export or compare take this instead of the window."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sandbox.jobs.types import HeatmapResult, TimingOutcome


@dataclass(frozen=True)
class Shown:
    heatmaps: Callable[[], HeatmapResult | None]  # the last heatmaps shown
    is_current: Callable[[], bool]  # the maps and costs on screen are of the View, none waiting
    on_the_way: Callable[[], bool]  # maps of the View are being computed, or held for the next frame
    timing: Callable[[], TimingOutcome | None]  # the last measurement, if of the View's shapes and device
    last_timing: Callable[[], TimingOutcome | None]  # the last measurement, whatever it measured
