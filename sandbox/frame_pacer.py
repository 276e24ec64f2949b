"""The runner's heatmaps shown at most once a screen frame.

In a fast slider drag the worker answered every 4 ms step, and the window set and painted a mosaic, then the
costs, for each: 5 ms of the window's thread per 4 ms step, so the thread never caught up and a step's own work,
a result's slot and a paint fell into one event-loop turn (bench/live_latency.py's max_stall, 8-11 ms). No screen
shows more than one of those mosaics per frame. A result that comes within FRAME_MS of the last one shown waits
for the frame's end and is shown then if it is still the newest request's; a newer request's result, once the
frame is over, is shown as it comes. A lone change (nothing shown within a frame) is shown at once, as before.

A synchronous runner (tests) is never paced: its results are shown inside the request, as they come."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, QTimer

FRAME_MS = 16.0  # one frame of a 60 Hz screen


class FramePacer(QObject):
    def __init__(self, show: Callable[[object], None], runner: QObject, parent: QObject | None = None,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        """show: the window's slot for a runner's HeatmapResult; runner: is_current(request_id), and `paced`
        (False for a synchronous runner); clock: seconds (a test's own, so a busy machine cannot reorder it)."""
        super().__init__(parent)
        self._show = show
        self._clock = clock
        self._runner = runner
        self._held: object | None = None  # the newest result that came within a frame of the last one shown
        self._last = -math.inf  # perf_counter() when a result was last shown
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setTimerType(Qt.TimerType.PreciseTimer)  # a coarse timer may fire 5% of 16 ms late or early
        self.timer.timeout.connect(self._release)

    def holding(self) -> bool:
        """A result waits for the end of the frame."""
        return self._held is not None

    def offer(self, result: object) -> None:
        """A result from the runner (HeatmapResult): shown now, or at the end of this frame."""
        wait_ms = FRAME_MS - (self._clock() - self._last) * 1e3
        if wait_ms <= 0 or not self._runner.paced:
            self._held = None
            self.timer.stop()
            self._apply(result)
            return
        self._held = result  # a newer result replaces an older one that waits
        if not self.timer.isActive():
            self.timer.start(math.ceil(wait_ms))

    def _release(self) -> None:
        result, self._held = self._held, None
        if result is not None and self._runner.is_current(result.request_id):
            self._apply(result)  # else a newer request's result is on its way, and is shown when it comes

    def _apply(self, result: object) -> None:
        self._last = self._clock()
        self._show(result)
