"""Calls at a deadline, all made by one thread kept for the purpose.

threading.Timer starts a thread per call, and starting one cost the window's thread 1.2 ms at each
slider step (two a step while a timing runs: its settle timer and its kill-if-stuck timer)."""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


class Deadline:
    """One call to come; cancel() before it is made and it is not made."""

    __slots__ = ("at", "fn", "args", "cancelled")

    def __init__(self, at: float, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.at, self.fn, self.args, self.cancelled = at, fn, args, False

    def cancel(self) -> None:
        self.cancelled = True


class Deadlines:
    def __init__(self, name: str = "deadlines") -> None:
        self._name = name
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Deadline]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def call_later(self, delay_s: float, fn: Callable[..., Any], *args: Any) -> Deadline:
        """fn(*args) on the deadlines' thread in delay_s seconds (in order, one after another)."""
        deadline = Deadline(time.monotonic() + delay_s, fn, args)
        with self._cond:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            heapq.heappush(self._heap, (deadline.at, next(self._order), deadline))
            if self._heap[0][2] is deadline:  # else the thread wakes for an earlier one first (a slider
                self._cond.notify()           # step's settle timer: its cancelled predecessor), then sees it
        return deadline

    def pending(self) -> int:
        with self._cond:
            return sum(not d.cancelled for _, _, d in self._heap)

    def _next_due(self) -> Deadline:
        with self._cond:
            while True:
                if self._heap:
                    wait = self._heap[0][0] - time.monotonic()
                    if wait <= 0:
                        return heapq.heappop(self._heap)[2]
                    self._cond.wait(wait)
                else:
                    self._cond.wait()

    def _run(self) -> None:
        while True:
            deadline = self._next_due()
            if deadline.cancelled:
                continue
            try:
                deadline.fn(*deadline.args)
            except Exception:  # one failing call must not stop the calls after it
                log.exception("a call at a deadline failed")
