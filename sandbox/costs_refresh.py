"""When the costs panel follows a change: after the change's heatmaps are painted, in an event-loop turn of
their own (or COSTS_WAIT_MS after the change when the heatmaps are slow), so the window's work for one
slider step never stands between the worker's result and its paint (bench/live_latency.py)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer

COSTS_WAIT_MS = 40


class CostsRefresh(QObject):
    def __init__(self, refresh: Callable[[], None], parent: QObject | None = None) -> None:
        """refresh: shows the costs of what the controls show now."""
        super().__init__(parent)
        self._refresh = refresh
        self.due = False  # a change's costs wait for its heatmaps' paint
        self.timer = QTimer(self)  # the costs of a change whose heatmaps are slow to come
        self.timer.setSingleShot(True)
        self.timer.setInterval(COSTS_WAIT_MS)
        self.timer.timeout.connect(self.run_if_due)
        self.after_paint = QTimer(self)  # the next event-loop turn after the heatmaps' slot (one pending at most)
        self.after_paint.setSingleShot(True)
        self.after_paint.setInterval(0)
        self.after_paint.timeout.connect(self.run_if_due)

    def run(self) -> None:
        self.due = False
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
        self.after_paint.stop()  # an older change's heatmaps must not bring this one's costs forward
        if not self.timer.isActive():  # not restarted: a long drag still refreshes them
            self.timer.start()

    def maps_shown(self) -> None:
        """The change's heatmaps are on screen: the costs next, after this paint."""
        if self.due:
            self.after_paint.start()
