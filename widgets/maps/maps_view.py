"""The maps' view: a pyqtgraph GraphicsLayoutWidget that says when it has painted, and whose new maps paint with the
window's own next paint instead of forcing one.

QGraphicsScene, with nothing connected to its `changed` signal, delivers item updates straight to its views and then,
from inside its own queued call, sends the window's pending repaint at once (QGraphicsViewPrivate::
dispatchPendingUpdateRequests): everything dirty so far paints, ahead of the posted work still waiting in the same
turn (the next result's slot, layout requests), which dirties the window again, so it paints twice in one turn. That
was the drag's longest stalls (bench/live_latency.py, five pairs: max_stall 10.8-18.3 ms without, 5.6-10.8 with).
With a slot on `changed`, Qt takes its compatible path, and a scene update pending when the scene processes its dirty
items (paint_later, after each set of new maps) keeps it from sending the window's repaint: the maps paint in the
window's UpdateRequest, once, after the turn's other posted work."""

from __future__ import annotations

from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import Signal


class MapsView(pg.GraphicsLayoutWidget):
    """The maps' view, saying when it has painted (painted: a signal to emit after each paint)."""

    painted: Any = None
    maps_set = Signal()  # new maps will paint with the window's next paint (the window's paint pacer lets it go)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.scene().changed.connect(_scene_changed)  # see the docstring: Qt's compatible path, no forced repaint

    def paint_later(self) -> None:
        """The whole scene repaints with the window's next paint, after the work queued before it: a pending scene
        update keeps QGraphicsScene from sending the window's repaint from inside its own (see the docstring)."""
        self.scene().update()
        self.maps_set.emit()

    def paintEvent(self, event: Any) -> None:  # noqa: N802 (Qt's name)
        super().paintEvent(event)
        if self.painted is not None:
            self.painted.emit()


def _scene_changed(_rects: object) -> None:
    """Nothing to do: being connected is what takes the compatible path."""
