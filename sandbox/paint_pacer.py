"""The window paints at most once a screen frame; new maps paint at once.

Qt paints a window in every event-loop turn that dirtied it: in a 4 ms-step drag, 250 paints a second of a slider,
its number, its labels and the panel behind them (about 1 ms each here, the largest share of the window's thread
in bench/live_latency.py's drag). No screen shows more than one a frame. A paint that Qt asks for (UpdateRequest)
within FRAME_MS of the last one waits for the frame's end. Qt asks for no other until that one is delivered, so all
that was dirtied meanwhile paints together then.

New maps paint at once (new_maps(): the frame pacer already holds them to one a frame). A change's latency is then
the worker's time, not a frame more. A lone change paints at once too: its frame has long ended.

Only a paced runner's window is paced (sandbox/frame_pacer.py); a synchronous runner's (tests) paints as Qt asks."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QWidget

from widgets.frame_gate import FRAME_MS

UPDATE = QEvent.Type.UpdateRequest


class PaintPacer(QObject):
    def __init__(self, window: QWidget, clock: Callable[[], float] = time.perf_counter) -> None:
        """window: a top-level widget whose paints are paced from now on."""
        super().__init__(window)
        self._window = window
        self._clock = clock
        self._last = -math.inf  # clock() at the last paint let through
        self._now = False  # the next paint goes at once: new maps, or the frame's end
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setTimerType(Qt.TimerType.PreciseTimer)
        self.timer.timeout.connect(self._paint_now)
        window.installEventFilter(self)

    def holding(self) -> bool:
        """A paint waits for the end of the frame."""
        return self.timer.isActive()

    def new_maps(self) -> None:
        """New maps are set: they paint in the next turn, whenever the last paint was."""
        if self.timer.isActive():
            self._paint_now()  # a held paint: Qt asks for no other until it is delivered
        else:
            self._now = True

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if obj is not self._window or event.type() != UPDATE:
            return False
        wait_ms = min(FRAME_MS, FRAME_MS - (self._clock() - self._last) * 1e3)  # a clock set back: one frame
        if wait_ms > 0 and not self._now:
            if not self.timer.isActive():
                self.timer.start(math.ceil(wait_ms))
            return True  # held: Qt's flag that a paint is asked for stays set until the frame's end delivers one
        self._now = False
        self.timer.stop()
        self._last = self._clock()
        return False

    def _paint_now(self) -> None:
        """Deliver the held paint, after the work already posted (layouts) as Qt's own request would be."""
        self.timer.stop()
        self._now = True
        QCoreApplication.postEvent(self._window, QEvent(UPDATE), Qt.EventPriority.LowEventPriority.value)
