"""An axis that keeps the pictures of its last few views.

pyqtgraph's AxisItem draws its ticks and labels into a QPicture, dropped at every range change; a slider
dragged back and forth between a few grids refitted the view at every step, and regenerating both axes'
pictures was a third of the mosaic's repaint. Here the picture of each (range, size, ticks, style) is
kept, and a view seen before is replayed."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import pyqtgraph as pg

KEPT_PICTURES = 8


class CachedAxis(pg.AxisItem):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pictures: OrderedDict[tuple, Any] = OrderedDict()

    def _picture_key(self) -> tuple:
        """Everything generateDrawSpecs and drawPicture read (a grid also reads the linked view: not kept)."""
        g = self.geometry()
        pens = tuple((pen.color().rgba(), pen.widthF(), int(pen.style().value))
                     for pen in (self.pen(), self.textPen(), self.tickPen()))
        style = repr(sorted(self.style.items(), key=lambda kv: kv[0]))
        return (tuple(self.range), g.width(), g.height(), repr(self._tickLevels), style, pens, self.logMode,
                self.scale, self.autoSIPrefixScale, self.textWidth, self.textHeight, self.labelString())

    def paint(self, p: Any, opt: Any, widget: Any) -> None:
        if self.picture is None and self.grid is False:
            key = self._picture_key()
            picture = self._pictures.get(key)
            if picture is None:
                super().paint(p, opt, widget)  # draws a new picture and plays it
                self._pictures[key] = self.picture
                while len(self._pictures) > KEPT_PICTURES:
                    self._pictures.popitem(last=False)
                return
            self._pictures.move_to_end(key)
            self.picture = picture
        super().paint(p, opt, widget)
