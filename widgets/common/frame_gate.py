"""At most one call a screen frame, the newest value winning: for work that a screen cannot show faster.

An offer a frame or more after the last call is called at once (a lone change waits for nothing). One that comes
within the frame is held until the frame's end, and a newer offer replaces it; the held value is called then.
The call may answer False ("nothing shown"): the frame then does not start, so the next offer goes at once.
frame_ms 0 turns the gate off: every offer is called at once (a synchronous runner's tests, a bare widget).

Used by the window's runner results (sandbox/window/frame_pacer.py) and by the sliders in a fast drag
(widgets/controls/slider_spin.py): a 4 ms-step drag set up a configuration, a request and a paint at every step, 5 ms of the
window's thread per 4 ms step (bench/live_latency.py's max_stall)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Qt, QTimer, Signal

FRAME_MS = 16.0  # one frame of a 60 Hz screen
MAX_WAIT_MS = 1000.0  # a longer "frame" is a mistake: the gate calls at once


class FrameGate(QObject):
    called = Signal()  # a call showed something (a window paints it in a turn of its own: sandbox/window/paint_pacer.py)

    def __init__(self, call: Callable[[Any], bool | None], frame_ms: float = FRAME_MS,
                 parent: QObject | None = None, clock: Callable[[], float] = time.perf_counter) -> None:
        """call(value): False when it showed nothing; clock: seconds (a test's own, so a busy machine cannot
        reorder it)."""
        super().__init__(parent)
        self.frame_ms = frame_ms
        self._call = call
        self._clock = clock
        self._held: tuple[Any] | None = None  # (value,): None is a value a gate may hold
        self._last = -math.inf  # clock() when a call last started a frame
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setTimerType(Qt.TimerType.PreciseTimer)  # a coarse timer may fire 5% of 16 ms late or early
        self.timer.timeout.connect(self._release)

    def holding(self) -> bool:
        """A value waits for the end of the frame."""
        return self._held is not None

    def held(self) -> Any:
        """The value that waits (None when none does)."""
        return self._held[0] if self._held is not None else None

    def offer(self, value: Any) -> None:
        """Called now, or at the end of this frame if no newer offer replaces it."""
        wait_ms = min(self.frame_ms, self.frame_ms - (self._clock() - self._last) * 1e3)  # a clock set back: a frame
        if not 0 < wait_ms < MAX_WAIT_MS:  # the frame is over, or the gate is off (0, NaN, inf)
            self.now(value)
            return
        if not self.timer.isActive():
            self.timer.start(math.ceil(wait_ms))
        self._held = (value,)

    def now(self, value: Any) -> None:
        """Called at once, whatever waits (dropped): one change that goes now, such as a typed value."""
        self.drop()
        self._apply(value)

    def drop(self) -> None:
        """The held value is not called (its owner has moved on)."""
        self._held = None
        self.timer.stop()

    def _release(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            self._apply(held[0])

    def _apply(self, value: Any) -> None:
        if self._call(value) is not False:
            self._last = self._clock()
            self.called.emit()
