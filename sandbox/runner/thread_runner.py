"""The thread runner: all torch work on one worker thread of this process, newest request wins (tests,
the CLI and benchmarks; the app runs the same jobs in a process of their own, sandbox/runner/process_runner.py).

- submit() returns a request id; a new request supersedes the pending one (queued jobs whose id
  is not the newest return at once) and wakes a job waiting for the sliders to settle.
- Heatmaps come first; timing starts only after `settle_s` without a newer request, and a newer
  request interrupts a timing between repeats (cooperative cancellation).
- Results are emitted with their id and the receiver drops any id that is not the newest
  (a Future cannot be stopped once running, napari's lesson).
- A background job (a sweep, the KV frontier, a Long tab job) runs one step a job on the same thread, so live
  requests queued meanwhile run between its steps; `cancel(kind)` stops it at its next check.
- Tests use sync=True (everything runs inside submit) or wait on `idle` / is_idle().
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from PySide6.QtCore import QObject

from core.models.source import warm_imports
from sandbox.jobs.book import JobBook
from sandbox.jobs.types import BackgroundJob, ComputeRequest, SweepProgress, WorkerInfo
from sandbox.jobs.worker import Worker, describe_error, worker_info
from sandbox.runner.contract import RunnerSignals

__all__ = ["ComputeRunner", "SweepProgress", "describe_error"]
log = logging.getLogger(__name__)
GIL_SWITCH_S = 0.001


class ComputeRunner(RunnerSignals):
    def __init__(self, sync: bool = False, settle_s: float = 0.35, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._sync = sync
        self._settle_s = settle_s
        self._lock = threading.Lock()
        self._latest = 0
        self._wake = threading.Event()
        self._pending = 0
        self._executor: ThreadPoolExecutor | None = None if sync else ThreadPoolExecutor(1, "sandbox-runner")
        if not sync:
            # The worker's Python code holds the GIL for up to the switch interval (5 ms by default)
            # before the GUI thread gets it back: 1 ms keeps a slider drag from stalling.
            sys.setswitchinterval(min(sys.getswitchinterval(), GIL_SWITCH_S))
        self._book = JobBook()
        self._running: dict[str, int] = {}  # kind -> the id of its background job in progress, until its `done`
        self._worker = Worker(self._emit, self._stale, self._book.stopped)
        self.info: WorkerInfo = worker_info()
        self._futures: list[Future] = []
        self._warm_thread: threading.Thread | None = None

    def is_idle(self) -> bool:
        with self._lock:
            return self._pending == 0

    def force_sync(self, on: bool = True) -> None:
        self._sync = on

    @property
    def paced(self) -> bool:  # type: ignore[override]  (RunnerSignals' class attribute)
        return not self._sync

    def submit(self, job: ComputeRequest | BackgroundJob) -> int:
        """A live request (its id: the newest wins), or a background job (its own id: the newest of its kind runs,
        one step a job, so live requests queued meanwhile run between its steps)."""
        if not isinstance(job, ComputeRequest):
            return self._submit_background(job)
        request = job
        with self._lock:
            self._latest += 1
            rid = self._latest
            self._wake.set()  # wake a job waiting to settle: it is stale now
            self._wake = threading.Event()
            wake = self._wake
            self._pending += 1
        if self._sync or self._executor is None:
            self._run(rid, request, wake, settle_s=0.0)
        else:
            fut = self._executor.submit(self._run, rid, request, wake, self._settle_s)
            self._futures = [f for f in self._futures if not f.done()] + [fut]
        return rid

    def _job_done(self) -> None:
        """Every job ends here: the runner is idle when the last one has."""
        with self._lock:
            self._pending -= 1
            done = self._pending == 0
        if done:
            self.idle.emit()

    def _stale(self, rid: int) -> bool:
        return rid != self._latest

    def _emit(self, name: str, *args: Any) -> None:
        if name == "done":
            with self._lock:
                if self._running.get(args[0]) == args[1].job_id:
                    del self._running[args[0]]  # before the window hears of it: running(kind) is False in its handler
        getattr(self, name).emit(*args)

    def _run(self, rid: int, req: ComputeRequest, wake: threading.Event, settle_s: float) -> None:
        try:
            self._worker.heatmaps(rid, req)
            if not req.want_timing or self._stale(rid):
                return
            if settle_s > 0 and wake.wait(settle_s):
                return  # a newer request arrived while the sliders were moving
            self._worker.timing(rid, req)
        finally:
            self._job_done()

    def clear_caches(self) -> None:
        """Drop the cached display projections (bounded, but up to 512 MiB). The clearing runs on the
        worker, after what is queued, and this call waits for it (for memory checks, not the GUI)."""
        if self._executor is None:
            self._worker.clear()
        else:
            self._executor.submit(self._worker.clear).result()

    def warm_up_models(self) -> None:
        """Import transformers in a thread of its own once the app is idle, so opening a model later
        takes its load alone (about 3 s less). Its own thread, not the worker's queue: a slider moved
        meanwhile never waits behind it. Nothing in sync mode (tests run compute inside submit)."""
        if self._sync or self._executor is None or self._warm_thread is not None:
            return
        self._warm_thread = threading.Thread(target=self._warm, name="sandbox-warm-imports", daemon=True)
        self._warm_thread.start()

    def _warm(self) -> None:
        try:
            warm_imports()
        except Exception:  # a broken install shows itself when a model is opened, with its message
            log.exception("warming the model imports failed")

    def wait_warm(self, timeout: float | None = None) -> bool:
        """For benchmarks and tests: wait until the warm-up imports are done (True) or not started."""
        if self._warm_thread is not None:
            self._warm_thread.join(timeout)
            return not self._warm_thread.is_alive()
        return True

    def submit_roof(self, device: str = "auto") -> None:
        """Measure this machine (roof_ready), after what is queued."""
        with self._lock:
            self._pending += 1
        if self._sync or self._executor is None:
            self._roof(device)
        else:
            self._futures.append(self._executor.submit(self._roof, device))

    def _roof(self, device: str) -> None:
        try:
            self._worker.roof(device)
        finally:
            self._job_done()

    # -- real models: loaded on the worker, kept there; the GUI gets their shape --------------------
    def submit_load(self, key: str, allow_pickle: bool = False) -> None:
        with self._lock:
            self._pending += 1
        if self._sync or self._executor is None:
            self._load(key, allow_pickle)
        else:
            self._futures.append(self._executor.submit(self._load, key, allow_pickle))

    def _load(self, key: str, allow_pickle: bool) -> None:
        try:
            self._worker.load(key, allow_pickle)
        finally:
            self._job_done()

    # -- background jobs: one step a job on the worker thread, so live requests queued meanwhile run between -----
    def _submit_background(self, job: BackgroundJob) -> int:
        with self._lock:
            self._book.start(job.job_kind, job.job_id)
            self._running[job.job_kind] = job.job_id
        self._schedule(self._step, job, 0)
        return job.job_id

    def cancel(self, kind: str, job_id: int | None = None) -> None:
        """Stop kind's job job_id (None: its newest) between steps or timing repeats; what it finished is kept (a
        sweep's points, marked partial). A cancel meant for an older job stops nothing newer."""
        self._book.cancel(kind, job_id)

    def running(self, kind: str) -> bool:
        """Whether a background job of kind has not reported its `done` yet."""
        return kind in self._running

    def _step(self, job: BackgroundJob, index: int) -> None:
        try:
            if self._worker.step(job, index):
                self._schedule(self._step, job, index + 1)
        finally:
            self._job_done()

    def _schedule(self, fn: Callable[..., None], *args: Any) -> None:
        with self._lock:
            self._pending += 1
        if self._sync or self._executor is None:
            fn(*args)
        else:
            self._futures = [f for f in self._futures if not f.done()] + [self._executor.submit(fn, *args)]

    def shutdown(self, wait_s: float | None = None) -> bool:
        """Cancel what is queued, interrupt what runs, and join the worker thread: fully (None), or for
        at most wait_s seconds (the app quitting must not wait on a kernel call that cannot be stopped).
        Returns whether the worker has finished."""
        with self._lock:
            self._latest += 1  # everything in flight is stale now
            self._wake.set()
            self._book.cancel_all()
        finished = True
        if self._executor is not None:
            if wait_s is None:
                self._executor.shutdown(wait=True, cancel_futures=True)
            else:
                self._executor.shutdown(wait=False, cancel_futures=True)
                _done, running = wait(self._futures, timeout=wait_s)
                finished = not running
            self._executor = None
        with self._lock:
            self._pending = 0  # cancelled futures never ran to count themselves down
        if finished:  # the loaded models and caches go with the runner (a window may outlive its runner, and with
            self._worker.release()  # them: about 550 MB a SmolLM2 held until the process ended)
        return finished
