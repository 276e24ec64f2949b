"""A value axis that is always numbered: ticks chosen for the pixels the axis has, written short with units.

pyqtgraph's own axis draws nothing where its labels would crowd a short axis, and a log axis given fixed ticks
shows none when the data's range falls between two of them. This axis asks for as many ticks as its height
holds (never fewer than two inside the range shown) every time pyqtgraph lays it out, so a plot squeezed by a
small window or stretched in an export keeps its numbers.
"""

from __future__ import annotations

import pyqtgraph as pg

from widgets.common.plot_ticks import axis_ticks, short_number

TICK_TEXT_PX = 15.0  # one label's height with its gap, at the application's font


class ReadableAxis(pg.AxisItem):
    """kind: 'count' (1.5M), 'bytes' (256 MiB), 'ms', 'rate' or 'plain' (the value as %g)."""

    def __init__(self, orientation: str, kind: str = "count", **kw: object) -> None:
        super().__init__(orientation, **kw)
        self.kind = kind
        self.enableAutoSIPrefix(False)  # our labels carry their own unit; no "(x1e+06)" beside the title

    def tickValues(self, minVal: float, maxVal: float, size: float) -> list[tuple[float, list[float]]]:  # noqa: N802
        if self._tickLevels is not None:  # fixed ticks set by the owner (the swept values on an x axis)
            return super().tickValues(minVal, maxVal, size)
        spacing = TICK_TEXT_PX * 2.0 if self.orientation in ("left", "right") else 70.0
        most = max(2, int(size // spacing))
        ticks = axis_ticks(minVal, maxVal, self.logMode, self.kind, most)
        step = (ticks[1] - ticks[0]) if len(ticks) > 1 else 1.0
        return [(step, ticks)]

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:  # noqa: N802
        shown = [10.0**v if self.logMode else v * scale for v in values]
        return [short_number(v, self.kind) for v in shown]
