"""The process runner's Long tab jobs (sandbox/jobs/long.py runs them in the main worker): kept apart so the
runner's file stays about its workers."""

from __future__ import annotations

from typing import Any

from sandbox.jobs.long_types import LongDone, LongJob


class ProcessLong:
    _long_job: LongJob | None = None  # the job in progress, until its long_done

    @property
    def long_running(self) -> bool:
        return self._long_job is not None

    def submit_long(self: Any, job: LongJob) -> int:
        """Run a Long tab job on the main worker (an older one still running stops at its next check)."""
        with self._lock:
            self._long_job = job
            self._job(self._main, "long", job)
        return job.job_id

    def cancel_long(self: Any) -> None:
        """Stop between chunks, layers or decode steps: the job ends with the message "cancelled"."""
        self._send(self._main, ("cancel_long",))

    def _long_ended(self, done: LongDone) -> None:
        if self._long_job is not None and done.job_id == self._long_job.job_id:
            self._long_job = None

    def _long_lost(self: Any) -> None:
        """The main worker died: the Long tab's job ends, said in its tab (it is not rerun)."""
        job, self._long_job = self._long_job, None
        if job is not None:
            self.long_done.emit(LongDone(job.job_id, job.kind, message="the compute worker stopped during this job; "
                                         "run it again (a model open is loaded again first)"))
