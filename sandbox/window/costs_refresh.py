"""When the costs panel follows a change: after the change's heatmaps are painted, in an event-loop turn of
their own (or COSTS_WAIT_MS after the change when the heatmaps are slow), so the window's work for one
slider step never stands between the worker's result and its paint (bench/live_latency.py).

"Painted" means the maps' own paint, not the slot that set them: Qt paints every dirty widget of the window in one
pass, so costs set between the slot and that pass were painted with the maps (7-10 ms in one pass, measured);
now the maps paint, the heartbeat of the event loop runs, then the costs change and paint (1-2 ms).

In a drag the costs change at most every COSTS_GAP_MS: each refresh and its paint (2-4 ms of a 4 ms drag step) fell
beside a step's own work and a paint in one event-loop turn, the drag's longest stalls; 20 a second still read as
live (bench/live_latency.py's max_stall with the maps paced (sandbox/window/frame_pacer.py), 7 runs with costs after every
maps paint: 7.5-15.5 ms, median 9.2; 6 runs at most every 50 ms: 5.5-13.0, median 6.9). A lone change's costs still
follow its maps' paint at once."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer

COSTS_WAIT_MS = 40
COSTS_GAP_MS = 50  # a drag's costs at most this often


class CostsRefresh(QObject):
    def __init__(self, refresh: Callable[[], None], parent: QObject | None = None) -> None:
        """refresh: shows the costs of what the controls show now."""
        super().__init__(parent)
        self._refresh = refresh
        self.due = False  # a change's costs wait for its heatmaps' paint
        self.shown = False  # the change's heatmaps are set: the costs follow the maps' next paint
        self.timer = QTimer(self)  # the costs of a change whose heatmaps are slow to come
        self.timer.setSingleShot(True)
        self.timer.setInterval(COSTS_WAIT_MS)
        self.timer.timeout.connect(self.run_if_due)
        self.after_paint = QTimer(self)  # the next event-loop turn after the heatmaps' slot (one pending at most)
        self.after_paint.setSingleShot(True)
        self.after_paint.setInterval(0)
        self.after_paint.timeout.connect(self.run_if_due)
        self._last = -math.inf  # perf_counter() at the last refresh

    def run(self) -> None:
        self._last = time.perf_counter()
        self.due = self.shown = False
        self.timer.stop()
        self.after_paint.stop()
        self._refresh()

    def run_if_due(self) -> None:
        if self.due:
            self.run()

    def changed(self, done: bool) -> None:
        """A change was requested; done: its request has ended already (a synchronous runner showed its
        heatmaps or its error): the costs now."""
        if done:
            self.run()
            return
        self.due = True
        self.shown = False
        self.after_paint.stop()  # an older change's heatmaps must not bring this one's costs forward
        if not self.timer.isActive():  # not restarted: a long drag still refreshes them
            self.timer.start()

    def maps_shown(self, painted_later: bool = True) -> None:
        """The change's heatmaps are set: the costs next, after their paint (painted_later: the maps are on screen
        and will paint; False (a hidden tab): at once, in the next turn)."""
        if not self.due:
            return
        self.shown = True
        if not painted_later:
            self.after_paint.start(self._gap_left_ms())

    def maps_painted(self) -> None:
        """The maps have painted: the costs in the turn after this one, or COSTS_GAP_MS after the last refresh."""
        if self.due and self.shown:
            self.after_paint.start(self._gap_left_ms())

    def _gap_left_ms(self) -> int:
        """0 after a pause; in a drag, what is left of COSTS_GAP_MS since the last refresh."""
        return math.ceil(max(0.0, COSTS_GAP_MS - (time.perf_counter() - self._last) * 1e3))
