"""Which background job of each kind is the newest, and whether it was cancelled: the one rule both runners and
the worker process keep (a step of an older or cancelled job stops; a cancel meant for an older job stops nothing
newer)."""

from __future__ import annotations

import threading


class JobBook:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._newest: dict[str, int] = {}
        self._cancelled: dict[str, bool] = {}

    def start(self, kind: str, job_id: int) -> None:
        """job_id is now kind's newest job: an older one still running stops at its next check. Ids of a kind only
        grow (a reused one would revive a cancelled job), so an id not above the newest is refused."""
        with self._lock:
            if job_id <= self._newest.get(kind, -1):
                raise ValueError(f"a {kind} job's id must be above the newest one's ({self._newest[kind]}), not {job_id}.")
            self._newest[kind], self._cancelled[kind] = job_id, False

    def cancel(self, kind: str, job_id: int | None = None) -> None:
        """Stop kind's job job_id (None: whichever is newest) at its next check."""
        with self._lock:
            if job_id is None or job_id == self._newest.get(kind):
                self._cancelled[kind] = True

    def cancel_all(self) -> None:
        with self._lock:
            for kind in self._newest:
                self._cancelled[kind] = True

    def stopped(self, kind: str, job_id: int) -> bool:
        """Whether kind's job job_id should stop: cancelled, or no longer the newest."""
        return self._cancelled.get(kind, False) or job_id != self._newest.get(kind)
