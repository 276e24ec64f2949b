"""The app's runner: the same contract as sandbox/runner/thread_runner.py (ids, newest wins, `idle`, the same signals),
with every torch call in worker processes, so the window never imports torch, never shares its GIL,
and outlives a worker that crashes.

- The main worker computes heatmaps, loads models and runs sweeps (sandbox/runner/worker_process.py).
- Live timings run in a timing worker of their own: a newer request stops a timing in progress between
  two repeats; one whose kernel call outlasts KILL_AFTER_S is killed and a warm spare takes its place.
- A worker that dies unasked (a segfault, an out-of-memory kill) or stops answering for HANG_S is replaced;
  the window gets one sentence (`worker_died`), open models are loaded again, the running request is not
  retried, and what the window holds stays. Timing workers that cannot start leave the main one serving.
Signals are emitted from the reader threads; Qt queues them to the window's thread.
"""

from __future__ import annotations

import itertools
import logging
import subprocess
import threading
import time
from typing import Any

from PySide6.QtCore import QObject

from sandbox.jobs.book import JobBook
from sandbox.jobs.types import BackgroundJob, ComputeRequest, Failure, WorkerInfo, starting_info
from sandbox.runner.contract import RunnerSignals
from sandbox.runner.deadlines import Deadline, Deadlines
from sandbox.runner.shared_arrays import from_shared
from sandbox.runner.watchdog import START_HANG_S, watch
from sandbox.runner.worker_child import (
    STAGES,
    WorkerChild,
    cannot_start_message,
    death_cause,
    death_message,
    exit_code,
    start_worker,
)

log = logging.getLogger(__name__)
KILL_AFTER_S = 0.25  # a stale timing that has not stopped by then is killed
MAX_FAILED_STARTS = 3  # workers of one role dying before their hello, in a row: a broken install, not a crash
HANG_S = 30.0  # no answer for this long (its reader thread answers at once, kernels or not): it is frozen


class ProcessRunner(RunnerSignals):
    def __init__(self, settle_s: float = 0.35, parent: QObject | None = None, hang_s: float = HANG_S,
                 main: WorkerChild | None = None) -> None:
        """main: a main worker already started (sandbox/window/app.py starts it before importing this module)."""
        super().__init__(parent)
        self._settle_s = settle_s
        self._hang_s = hang_s
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)  # a job ended, a worker started or died
        self._tokens = itertools.count(1)
        self._latest = 0
        self._closing = False
        self.closed = threading.Event()  # set with _closing: the watchdog waits on it (not on _changed, which
        # every job's end notifies: a thread woken for nothing at each slider step)
        self.info: WorkerInfo = starting_info()
        self._loaded: dict[str, bool] = {}  # models open in the main worker: key -> allow_pickle
        self._asked: dict[str, bool] = {}  # models asked for and not loaded yet: key -> allow_pickle
        self._warm_sent = False
        # kind -> its background job in progress and the progress it reported, until its `done` (a worker's death
        # ends it with what it had done: BackgroundJob.lost)
        self._running: dict[str, tuple[BackgroundJob, list[Any]]] = {}
        self._book = JobBook()  # the ids sent: a kind's only grow
        self._timer: Deadline | None = None  # a timing waiting for the sliders to settle
        self._deadlines = Deadlines("runner-deadlines")
        self.deaths = 0  # workers replaced after a crash (tests, the soak)
        self.kills = 0  # stale timings killed because they did not stop in time
        self._failed_starts: dict[str, int] = {}  # by role: workers that died before their hello, in a row
        self._timing_broken = ""  # why timing workers are no longer started (the main worker serves on)
        self._no_spare = False  # spares could not start: the timing worker goes on alone
        self._stopped = ""  # why the runner stopped (its main worker could not start)
        self.start_hang_s = START_HANG_S  # a worker without its hello this long after its start is killed
        # Started one after another (main; timing once the first heatmaps are done; then the spare), so the
        # first heatmaps never share the two cores with another torch import.
        self._main = self._spawn("main") if main is None else self._adopt(main)
        self._timing: WorkerChild | None = None
        self._spare: WorkerChild | None = None
        threading.Thread(target=watch, args=(self,), name="sandbox-watchdog", daemon=True).start()

    # -- processes ---------------------------------------------------------------------------------
    def _spawn(self, role: str) -> WorkerChild:
        return self._adopt(start_worker(role))

    def _adopt(self, child: WorkerChild) -> WorkerChild:
        threading.Thread(target=self._read, args=(child,), name=f"sandbox-reader-{child.role}", daemon=True).start()
        return child

    def _read(self, child: WorkerChild) -> None:
        try:
            while True:
                message = child.conn.recv()
                child.last_answer = time.monotonic()
                kind = message[0]
                if kind == "emit":
                    self._on_emit(child, message[1], message[2])
                elif kind == "done":
                    self._on_done(child, message[1])
                elif kind == "hello":
                    self._on_hello(child, message[1])
        except (EOFError, OSError):
            pass
        self._on_exit(child)

    def _on_hello(self, child: WorkerChild, info: WorkerInfo) -> None:
        with self._lock:
            child.ready.set()
            self._failed_starts[child.role] = 0
            if child.role == "main":
                self._spawn_timing_when_free()
            elif child is self._timing:
                self._spawn_spare_when_free()
            self._changed.notify_all()
        if child.role == "main":
            self.info = info
            self.ready.emit(info)

    def _send(self, child: WorkerChild | None, message: tuple[Any, ...]) -> None:
        if child is None:
            return
        try:
            child.conn.send(message)
        except (OSError, ValueError):
            pass  # a dead worker: its reader reports the death

    def _job(self, child: WorkerChild, kind: str, *args: Any) -> None:
        with self._lock:
            token = next(self._tokens)
            child.jobs[token] = args[0].job_kind if kind == "job" else kind  # what it is doing, as a death names it
        self._send(child, (kind, token, *args))

    # -- the contract ------------------------------------------------------------------------------
    def is_idle(self) -> bool:
        with self._lock:
            return not self._main.jobs and not (self._timing and self._timing.jobs) and self._timer is None

    def submit(self, job: ComputeRequest | BackgroundJob) -> int:
        """A live request (its id: the newest wins), or a background job on the main worker (its own id: the newest of
        its kind runs, one step at a time, live requests between its steps)."""
        if not isinstance(job, ComputeRequest):
            with self._lock:
                self._book.start(job.job_kind, job.job_id)  # a reused id is refused here, before the worker hears it
                self._running[job.job_kind] = (job, [])
                self._job(self._main, "job", job)
            return job.job_id
        request = job
        with self._lock:
            self._latest += 1
            rid = self._latest
            if self._stopped:
                self.failed.emit(Failure(rid, "heatmaps", f"{self._stopped}; start the app again."))
                return rid
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._timing is not None and self._timing.jobs:
                self._send(self._timing, ("latest", rid))  # the timing in progress stops between two repeats
                self._cancel_timing()
            self._job(self._main, "heatmaps", rid, request)  # its rid is the main worker's latest: one message
            if request.want_timing:
                self._timer = self._deadlines.call_later(self._settle_s, self._start_timing, rid, request)
            else:
                self._spawn_spare_when_free()  # a timing that was waiting to start is no longer coming
        return rid

    def _start_timing(self, rid: int, request: ComputeRequest) -> None:
        """After the sliders settled: once the main worker has no older heatmaps queued, time it."""
        with self._lock:
            if self._closing:
                self._timer = None
                self._changed.notify_all()
                return
            if rid != self._latest:
                return  # a newer request has its own timer
            if self._timing_broken:
                self._timer = None
                self.failed.emit(Failure(rid, "timing", f"timing is unavailable: {self._timing_broken}."))
                return
            if (self._timing is None or self._timing.jobs or not self._timing.ready.is_set()  # stopping, or starting
                    or any(kind == "heatmaps" for kind in self._main.jobs.values())
                    or (self._spare is not None and not self._spare.ready.is_set())):  # a torch import beside it
                self._timer = self._deadlines.call_later(0.02, self._start_timing, rid, request)  # heatmaps first
                return
            self._timer = None
            self._job(self._timing, "timing", rid, request)  # its rid is the timing worker's latest

    def _cancel_timing(self) -> None:
        """A newer request: the timing in progress stops between two repeats when it hears of it (the
        "latest" message sent just before); one whose kernel call outlasts KILL_AFTER_S is killed and the spare
        takes its place. Killing every time would cost a torch import a change on two cores."""
        child = self._timing
        if child is None or not child.jobs:
            return
        self._deadlines.call_later(KILL_AFTER_S, self._kill_if_stuck, child, set(child.jobs))

    def _kill_if_stuck(self, child: WorkerChild, tokens: set[int]) -> None:
        with self._lock:
            if self._closing or child is not self._timing or not tokens & child.jobs.keys():
                return  # it stopped in time
            child.retired = True
            child.process.kill()
            child.jobs.clear()
            self.kills += 1
            self._promote_spare()
            self._changed.notify_all()

    def _on_emit(self, child: WorkerChild, name: str, args: tuple[Any, ...]) -> None:
        if name in ("heatmaps_ready", "done"):  # a mosaic, or a job's end (a long map): big arrays
            result, names = from_shared(args[-1])  # copied out here, in the reader thread
            if names:
                self._send(child, ("release", names))
            args = (*args[:-1], result)
        if child.retired:
            return
        if name == "model_loaded":
            key = args[0][0]
            with self._lock:
                self._loaded.setdefault(key, self._asked.pop(key, False))
        elif name in ("progress", "done"):
            with self._lock:
                running = self._running.get(args[0])
                if running is not None and running[0].job_id == args[1].job_id:  # a superseded job changes nothing
                    if name == "done":
                        del self._running[args[0]]
                    else:
                        running[1].append(args[1])
        getattr(self, name).emit(*args)

    def _on_done(self, child: WorkerChild, token: int) -> None:
        with self._lock:
            child.jobs.pop(token, None)
            if child is self._main:
                self._spawn_timing_when_free()
            elif child is self._timing:
                self._spawn_spare_when_free()
            now_idle = self.is_idle()
            self._changed.notify_all()
        if now_idle:
            self.idle.emit()

    def _on_exit(self, child: WorkerChild) -> None:
        with self._lock:
            if child.retired or self._closing:
                return
            stages = sorted({STAGES.get(kind, kind) for kind in child.jobs.values()})
            child.jobs.clear()
            self.deaths += 1
            cause = death_cause(exit_code(child.process)) if not child.hung else (
                f"stopped answering for {self._hang_s:.0f} s and was stopped" if child.ready.is_set()
                else f"had not started after {self.start_hang_s:.0f} s and was stopped")
            role = child.role
            if not child.ready.is_set():
                self._failed_starts[role] = self._failed_starts.get(role, 0) + 1
                if self._failed_starts[role] >= MAX_FAILED_STARTS:  # no more restarts: they would fail the same way
                    self._give_up(role, cause)
                    return
            lost_loads: list[str] = []
            lost_jobs: list[tuple[BackgroundJob, list[Any]]] = []
            if role == "main":
                self._main = self._spawn("main")
                for key, allow_pickle in self._loaded.items():
                    self._job(self._main, "load", key, allow_pickle, True)
                lost_jobs, self._running = list(self._running.values()), {}
                lost_loads, self._asked = list(self._asked), {}
            elif child is self._timing:
                self._promote_spare()
            else:  # the spare: another one, once the timing worker is ready and free (else its hello or done)
                self._spare = None
                self._spawn_spare_when_free()
            reloading = ", ".join(self._loaded) if role == "main" else ""
            now_idle = self.is_idle()
            self._changed.notify_all()
            # Said under the lock, as _give_up says its own: each reader thread posts its death's sentence in the
            # order the deaths were handled (said after the lock, the second start's "a new one has started" once
            # arrived after the third's "could not start", and the window ended on the wrong sentence).
            self._say(death_message(cause, stages, reloading, role))
        for key in lost_loads:  # the picker stops waiting: the user can pick it again
            self.failed.emit(Failure(-1, "model", f"the compute worker stopped while loading {key}; pick it again "
                                                  "in the Model list."))
        for job, progress in lost_jobs:  # each background job ends with what it had done, said in its tab (not rerun)
            self.done.emit(job.job_kind, job.lost(progress))
        if now_idle:
            self.idle.emit()

    def _give_up(self, role: str, cause: str) -> None:
        """Workers of one role died before their hello MAX_FAILED_STARTS times in a row (under the lock). The
        main role: the runner stops, and requests fail with the reason. The timing role: a ready timing worker
        goes on without a spare; without one, timings fail with the reason and the main worker serves on."""
        keep = self._timing if role == "timing" and self._timing is not None and self._timing.ready.is_set() else None
        for child in (self._timing, self._spare) if role == "timing" else ():
            if child is not None and child is not keep:
                child.retired = True
                child.process.kill()
        if role == "main":
            self._closing = True
            self.closed.set()
            self._stopped = f"the compute worker could not start ({cause}, {MAX_FAILED_STARTS} times)"
        else:
            self._timing, self._spare, self._no_spare = keep, None, True
            if keep is None:
                self._timing_broken = f"the timing worker could not start ({cause}, {MAX_FAILED_STARTS} times)"
        self._timer = None
        self._changed.notify_all()
        self._say(cannot_start_message(role, cause, MAX_FAILED_STARTS, keep is not None))
        self.idle.emit()

    def _say(self, message: str) -> None:
        try:
            self.worker_died.emit(message)
        except RuntimeError:  # the window was deleted as the worker went: nobody to tell
            log.warning("%s", message)

    # -- models --------------------------------------------------------------------------------------
    def submit_load(self, key: str, allow_pickle: bool = False) -> None:
        with self._lock:
            self._asked[key] = allow_pickle
            self._job(self._main, "load", key, allow_pickle, False)

    def submit_roof(self, device: str = "auto") -> None:
        """Measure this machine on the main worker (the roof_ready signal, or a failure of stage roof)."""
        with self._lock:
            self._job(self._main, "roof", device)

    def warm_up_models(self) -> None:
        """Import transformers in the main worker once the app is idle (opening a model then takes its load alone)."""
        if not self._warm_sent:
            self._warm_sent = True
            self._job(self._main, "warm")

    def wait_warm(self, timeout: float | None = None) -> bool:
        return self.wait_idle(timeout)

    def clear_caches(self) -> None:
        self._job(self._main, "clear")
        self.wait_idle(30.0)

    def cancel(self, kind: str, job_id: int | None = None) -> None:
        """Stop kind's job job_id (None: its newest) between steps or timing repeats (read by the worker at once); a
        cancel meant for an older job stops nothing newer."""
        self._send(self._main, ("cancel", kind, job_id))

    def running(self, kind: str) -> bool:
        """Whether a background job of kind has not reported its `done` yet."""
        return kind in self._running

    # -- when the timing workers start (the timing worker once the first heatmaps are done, its spare once the
    # timing worker is free: a torch import beside a timing inflates it) ---------------------------------
    def _spawn_timing_when_free(self) -> None:
        """The timing worker, once the main worker has no heatmaps to compute (not beside the first ones)."""
        if (not self._closing and not self._timing_broken and self._timing is None and self._main.ready.is_set()
                and not any(kind == "heatmaps" for kind in self._main.jobs.values())):
            self._timing = self._spawn("timing")

    def _spawn_spare_when_free(self) -> None:
        """The spare, once the timing worker is ready and has nothing to time: its torch import (about 2 s of a core)
        beside a timing made the app's first figure read "other processes kept 1 core busy"; a timing asked for
        while the spare starts waits for it (_start_timing)."""
        t = self._timing
        if (not self._closing and self._spare is None and not self._no_spare and t is not None and t.ready.is_set()
                and not t.jobs and self._timer is None):
            self._spare = self._spawn("timing")

    def _promote_spare(self) -> None:
        """The spare becomes the timing worker (a cold one if there is none); a new spare starts once the promoted one
        is ready and free."""
        if self._spare is None and self._no_spare:
            self._timing, self._timing_broken = None, "the timing worker stopped and no spare could start"
            return
        self._timing, self._spare = (self._spare, None) if self._spare is not None else (self._spawn("timing"), None)
        self._spawn_spare_when_free()  # the promoted one is idle; a cold one starts its spare at its hello

    # -- what tests, benchmarks and the soak ask from outside the window's event loop -----------------------
    def wait_idle(self, timeout: float | None = None) -> bool:
        """For benchmarks and the soak, outside the window's event loop: wait until nothing is left."""
        with self._changed:
            return self._changed.wait_for(self.is_idle, timeout)

    def wait_ready(self, timeout: float = 60.0) -> bool:
        """For tests and benchmarks: until every worker has loaded torch (main, timing and its spare)."""
        with self._changed:
            return self._changed.wait_for(lambda: self._main.ready.is_set() and self._spare is not None
                                          and self._spare.ready.is_set(), timeout)

    def worker_pids(self) -> list[int]:
        """The worker processes still running (the main, timing and spare workers while the app is open)."""
        children = [c for c in (self._main, self._timing, self._spare) if c is not None]
        return [c.process.pid for c in children if c.process.poll() is None]

    def kill_worker(self, role: str = "main") -> int:
        """Tests and the soak: kill a worker as the kernel's OOM killer would; returns its pid."""
        child = self._main if role == "main" else self._timing
        child.process.kill()
        return child.process.pid

    def shutdown(self, wait_s: float | None = None) -> bool:
        """Stop every worker: ask, give them wait_s (None: 2 s) to leave, then kill what is left (a worker
        holds nothing to save). True: nothing of the runner's runs any more."""
        with self._lock:
            self._closing = True
            self.closed.set()
            self._latest += 1
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            children = [c for c in (self._main, self._timing, self._spare) if c is not None]
            for child in children:
                child.retired = True
                child.jobs.clear()
                self._send(child, ("stop",))
        end = time.monotonic() + (2.0 if wait_s is None else wait_s)
        for child in children:
            try:
                child.process.wait(max(0.0, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.process.kill()
                child.process.wait()
            child.conn.close()
        return True
