"""When the process runner starts its timing workers: the timing worker once the first heatmaps are done, its spare
once the timing worker is free (a torch import beside a timing inflates it), and the spare's promotion when the
timing worker is killed or dies. Kept apart so the runner's file stays about carrying jobs."""

from __future__ import annotations

from typing import Any


class WorkerSpares:
    def _spawn_timing_when_free(self: Any) -> None:
        """The timing worker, once the main worker has no heatmaps to compute (not beside the first ones)."""
        if (not self._closing and not self._timing_broken and self._timing is None and self._main.ready.is_set()
                and not any(kind == "heatmaps" for kind in self._main.jobs.values())):
            self._timing = self._spawn("timing")

    def _spawn_spare_when_free(self: Any) -> None:
        """The spare, once the timing worker is ready and has nothing to time: its torch import (about 2 s of a core)
        beside a timing made the app's first figure read "other processes kept 1 core busy"; a timing asked for
        while the spare starts waits for it (_start_timing)."""
        t = self._timing
        if (not self._closing and self._spare is None and not self._no_spare and t is not None and t.ready.is_set()
                and not t.jobs and self._timer is None):
            self._spare = self._spawn("timing")

    def _promote_spare(self: Any) -> None:
        """The spare becomes the timing worker (a cold one if there is none); a new spare starts once the promoted one
        is ready and free."""
        if self._spare is None and self._no_spare:
            self._timing, self._timing_broken = None, "the timing worker stopped and no spare could start"
            return
        self._timing, self._spare = (self._spare, None) if self._spare is not None else (self._spawn("timing"), None)
        self._spawn_spare_when_free()  # the promoted one is idle; a cold one starts its spare at its hello
