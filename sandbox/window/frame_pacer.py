"""The runner's heatmaps shown at most once a screen frame (widgets/common/frame_gate.py).

In a fast slider drag the worker answered every 4 ms step, and the window set and painted a mosaic, then the
costs, for each: 5 ms of the window's thread per 4 ms step, so the thread never caught up and a step's own work,
a result's slot and a paint fell into one event-loop turn (bench/live_latency.py's max_stall, 8-11 ms). No screen
shows more than one of those mosaics per frame. A result that comes within FRAME_MS of the last one shown waits
for the frame's end and is shown then if it is still the newest request's; a newer request's result, once the
frame is over, is shown as it comes. A lone change (nothing shown within a frame) is shown at once, as before.

The sliders that ask for those maps (the config panel's) are paced to the same frames: a drag's step reaches the
panel, the request and the costs at most once a frame, with the newest value (widgets/controls/slider_spin.py). So are the
window's paints, new maps excepted (sandbox/window/paint_pacer.py).

A synchronous runner (tests) is never paced: its results are shown inside the request, as they come, and the
sliders emit every step."""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QWidget

from sandbox.window.paint_pacer import PaintPacer
from widgets.common.frame_gate import FRAME_MS, FrameGate
from widgets.controls.slider_spin import paced_sliders
from widgets.maps.maps_view import MapsView


class FramePacer(QObject):
    def __init__(self, show: Callable[[object], None], runner: QObject, parent: QObject | None = None,
                 clock: Callable[[], float] = time.perf_counter, sliders: QWidget | None = None,
                 maps: MapsView | None = None) -> None:
        """show: the window's slot for a runner's HeatmapResult; runner: is_current(request_id), and `paced`
        (False for a synchronous runner); clock: seconds (a test's own, so a busy machine cannot reorder it);
        sliders: a widget whose SliderSpins are paced too; maps: the view whose new maps paint at once, in a
        window (parent) whose other paints are paced."""
        super().__init__(parent)
        self._show = show
        self._runner = runner
        frame_ms = FRAME_MS if runner.paced else 0.0
        self.gate = FrameGate(self._show_if_current, frame_ms, self, clock)
        self.timer = self.gate.timer
        self.sliders = paced_sliders(sliders, frame_ms) if sliders is not None else []
        self.paints: PaintPacer | None = None
        if frame_ms and isinstance(parent, QWidget) and maps is not None:
            self.paints = PaintPacer(parent, clock)
            maps.maps_set.connect(self.paints.new_maps)
            for gate in [self.gate, *(s.gate for s in self.sliders)]:
                gate.called.connect(self.paints.after_work)
        if isinstance(parent, QWidget):
            parent.installEventFilter(self)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if event.type() == QEvent.Type.Close:  # before the window's closeEvent shuts its runner down
            self.drop()
        return False

    def drop(self) -> None:
        """Nothing held is shown or emitted any more (the window closes)."""
        self.gate.drop()
        for s in self.sliders:
            s.gate.drop()

    def after_work(self) -> None:
        """Work done outside the gates (a timing's result shown): its paint goes in a turn of its own."""
        if self.paints is not None:
            self.paints.after_work()

    def holding(self) -> bool:
        """A result, or a slider's step, waits for the end of its frame."""
        return self.gate.holding() or any(s.holding() for s in self.sliders)

    def offer(self, result: object) -> None:
        """A result from the runner (HeatmapResult): shown now, or at the end of this frame."""
        self.gate.offer(result)

    def _show_if_current(self, result: object) -> bool:
        if not self._runner.is_current(result.request_id):
            return False  # a newer request's result is on its way, and is shown when it comes
        self._show(result)
        return True
