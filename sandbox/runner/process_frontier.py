"""The process runner's KV-frontier jobs (sandbox/jobs/frontier.py runs them in the main worker, one point
a step): kept apart so the runner's file stays about its workers."""

from __future__ import annotations

from typing import Any

from sandbox.jobs.types import FrontierDone, FrontierJob


class ProcessFrontier:
    _frontier_id = 0
    _frontier_active = False

    @property
    def frontier_running(self) -> bool:
        return self._frontier_active

    def submit_frontier(self: Any, model: str, families: tuple[str, ...], n_samples: int = 2) -> int:
        with self._lock:
            self._frontier_id += 1
            self._frontier_active = True
            self._job(self._main, "frontier", FrontierJob(self._frontier_id, model, tuple(families), n_samples))
        return self._frontier_id

    def cancel_frontier(self: Any) -> None:
        """Stop before the next point: the points done are shown, the run is not cached."""
        self._send(self._main, ("cancel_frontier",))

    def _frontier_ended(self, done: FrontierDone) -> None:
        if done.run_id == self._frontier_id:
            self._frontier_active = False

    def _frontier_lost(self: Any) -> None:
        """The main worker died: the frontier in progress ends, said in its tab (it is not rerun)."""
        if self._frontier_active:
            self._frontier_active = False
            self.frontier_done.emit(FrontierDone(self._frontier_id, None, "the compute worker stopped during the "
                                                 "frontier; run it again once the model is reloaded (the points "
                                                 "done stay on the chart, not in the cache)"))
