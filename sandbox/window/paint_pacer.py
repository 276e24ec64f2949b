"""The window paints at most once a screen frame; new maps paint at once.

Qt paints a window in every event-loop turn that dirtied it: in a 4 ms-step drag, 250 paints a second of a slider,
its number, its labels and the panel behind them (about 1 ms each here, the largest share of the window's thread
in bench/live_latency.py's drag). No screen shows more than one a frame. A paint that Qt asks for (UpdateRequest)
within FRAME_MS of the last one waits for the frame's end. Qt asks for no other until that one is delivered, so all
that was dirtied meanwhile paints together then.

New maps paint at once (new_maps(): the frame pacer already holds them to one a frame). A change's latency is then
the worker's time, not a frame more. A lone change paints at once too: its frame has long ended.

A paint never shares an event-loop turn with a frame's work (after_work(): a slider's step set up, or maps set).
Qt delivers the layouts and the paint that work asks for in the same turn, so a step's 2-5 ms and a paint's 5-9 ms
made one 8-14 ms gap, in which no input or timer was served (bench/live_latency.py's max_stall). The paint goes in
the next turn instead, after the input and timers already due: the same frame, on time, in two shorter gaps.

Only a paced runner's window is paced (sandbox/window/frame_pacer.py); a synchronous runner's (tests) paints as Qt asks."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QWidget

from widgets.common.frame_gate import FRAME_MS

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
        self._turn = QTimer(self)  # runs once the turn of a frame's work has ended, after what was already due
        self._turn.setSingleShot(True)
        self._turn.setTimerType(Qt.TimerType.PreciseTimer)
        self._turn.setInterval(0)
        self._turn.timeout.connect(self._turn_ended)
        self._after_turn = False  # a paint was asked for in the turn of a frame's work
        self._held_at = 0.0  # clock() when it was
        window.installEventFilter(self)

    def holding(self) -> bool:
        """A paint waits for the end of the frame, or of the turn of a frame's work."""
        return self.timer.isActive() or self._turn.isActive() or self._after_turn

    def after_work(self) -> None:
        """A frame's work was done in this turn (a step's config, new maps): its paint goes in the next. A paint held
        for a frame already goes at the end of this turn, so work in every turn cannot hold it for ever."""
        if self._after_turn and (self._clock() - self._held_at) * 1e3 >= FRAME_MS and self._turn.isActive():
            return
        self._turn.start()

    def new_maps(self) -> None:
        """New maps are set: they paint in the next turn, whenever the last paint was."""
        if self.timer.isActive():
            self._paint_now()  # a held paint: Qt asks for no other until it is delivered
        else:
            self._now = True

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if obj is not self._window or event.type() != UPDATE:
            return False
        if self._turn.isActive():
            if not self._after_turn:
                self._after_turn, self._held_at = True, self._clock()
            return True  # held, as below: delivered once the turn's other work is done
        wait_ms = min(FRAME_MS, FRAME_MS - (self._clock() - self._last) * 1e3)  # a clock set back: one frame
        if wait_ms > 0 and not self._now:
            if not self.timer.isActive():
                self.timer.start(math.ceil(wait_ms))
            return True  # held: Qt's flag that a paint is asked for stays set until the frame's end delivers one
        self._now = False
        self.timer.stop()
        self._last = self._clock()
        return False

    def _turn_ended(self) -> None:
        if self._after_turn:
            self._after_turn = False
            self._post()  # now within the frame or not: new maps at once, a slider's paint at the frame's end

    def _paint_now(self) -> None:
        """Deliver the held paint, after the work already posted (layouts) as Qt's own request would be."""
        self.timer.stop()
        self._now = True
        self._post()

    def _post(self) -> None:
        QCoreApplication.postEvent(self._window, QEvent(UPDATE), Qt.EventPriority.LowEventPriority.value)
