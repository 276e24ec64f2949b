"""The one compute runner: all torch work on one worker thread, newest request wins.

- submit() returns a request id; a new request supersedes the pending one (queued jobs whose id
  is not the newest return at once) and wakes a job waiting for the sliders to settle.
- Heatmaps come first; timing starts only after `settle_s` without a newer request, and a newer
  request interrupts a timing between repeats (cooperative cancellation).
- Results are emitted with their id and the receiver drops any id that is not the newest
  (a Future cannot be stopped once running, napari's lesson).
- Tests use sync=True (everything runs inside submit) or wait on `idle` / is_idle().
"""

from __future__ import annotations

import logging
import sys
import threading
import time
import traceback
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

import torch
from PySide6.QtCore import QObject, Signal

from core.device import resolve_device
from core.layer_timing import run_timing
from core.models.forward_cache import ForwardCache
from core.models.source import LoadedModel, load_model, warm_imports
from core.sweep import SweepPoint, SweepResult, SweepRow, run_point
from core.timing import Cancelled
from sandbox.compute import ComputeRequest, Failure, LayerCache, compute_heatmaps, compute_timing
from sandbox.logfile import setup_log_file
from sandbox.model_compute import shape_of

log = logging.getLogger(__name__)
GIL_SWITCH_S = 0.001


def describe_error(exc: BaseException) -> str:
    if isinstance(exc, torch.OutOfMemoryError):
        return "out of memory on the device; lower seq_len, batch_size or d_model."
    if isinstance(exc, ValueError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


@dataclass
class SweepJob:
    sweep_id: int
    points: list[SweepPoint]
    device: str
    budget_s: float
    result: SweepResult
    started: float = field(default_factory=time.perf_counter)


@dataclass(frozen=True)
class SweepProgress:
    sweep_id: int
    done: int
    total: int
    eta_s: float  # seconds left, from the mean of the timed points so far
    row: SweepRow


class ComputeRunner(QObject):
    heatmaps_ready = Signal(object)  # HeatmapResult
    timing_started = Signal(int)  # request id
    timing_ready = Signal(object)  # TimingOutcome
    failed = Signal(object)  # Failure
    sweep_progress = Signal(object)  # SweepProgress
    sweep_step = Signal(int, str)  # sweep id, the timing step now running in a point ("naive prefill (3/7)")
    sweep_done = Signal(object)  # (sweep_id, SweepResult)
    model_progress = Signal(str, float)  # what is happening, fraction done
    model_loaded = Signal(object)  # (key, ModelShape)
    idle = Signal()

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
        self._cache = LayerCache()
        self._forwards = ForwardCache()  # a real model's unchanged run of the tokens on screen
        self._models: dict[str, LoadedModel] = {}  # loaded real models, by key or folder
        self._futures: list[Future] = []
        self._sweep_id = 0
        self._sweep_cancelled = False
        self._sweep_active = False
        self._warm_thread: threading.Thread | None = None

    @property
    def latest_id(self) -> int:
        return self._latest

    def is_current(self, request_id: int) -> bool:
        return request_id == self._latest

    def is_idle(self) -> bool:
        with self._lock:
            return self._pending == 0

    def force_sync(self, on: bool = True) -> None:
        self._sync = on

    def submit(self, request: ComputeRequest) -> int:
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

    def _fail(self, rid: int, stage: str, exc: BaseException) -> None:
        detail = "".join(traceback.format_exception(exc))
        message = describe_error(exc)
        if not isinstance(exc, ValueError):  # a user's input never lands here; a bug does
            path = setup_log_file()
            log.error("worker error in %s:\n%s", stage, detail)
            if path is not None:
                for handler in logging.getLogger().handlers:
                    handler.flush()
                message += f" (details in {path})"
        self.failed.emit(Failure(rid, stage, message, detail))

    def _run(self, rid: int, req: ComputeRequest, wake: threading.Event, settle_s: float) -> None:
        try:
            if self._stale(rid):
                return
            try:
                self.heatmaps_ready.emit(compute_heatmaps(req, rid, self._cache, self._models, self._forwards))
            except Exception as exc:  # shown in the window; the worker serves the next request
                self._fail(rid, "heatmaps", exc)
            if not req.want_timing or self._stale(rid):
                return
            if settle_s > 0 and wake.wait(settle_s):
                return  # a newer request arrived while the sliders were moving
            if self._stale(rid):
                return
            self.timing_started.emit(rid)
            try:
                outcome = compute_timing(req, rid, should_stop=lambda: self._stale(rid))
            except Cancelled:
                return
            except Exception as exc:
                self._fail(rid, "timing", exc)
                return
            if not self._stale(rid):
                self.timing_ready.emit(outcome)
        finally:
            self._job_done()

    def clear_caches(self) -> None:
        """Drop the cached display projections (bounded, but up to 512 MiB). The clearing runs on the
        worker, after what is queued, and this call waits for it (for memory checks, not the GUI)."""
        def clear() -> None:
            self._cache.clear()
            self._forwards.clear()

        if self._executor is None:
            clear()
        else:
            self._executor.submit(clear).result()

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
            if key not in self._models:
                self._models[key] = load_model(key, progress=self.model_progress.emit, allow_pickle=allow_pickle)
            self.model_loaded.emit((key, shape_of(self._models[key])))
        except Exception as exc:  # shown in the window; the app stays on the model it had
            self._fail(-1, "model", exc)
        finally:
            self._job_done()

    # -- sweeps: one point per job, so live requests queued meanwhile run between points ----------
    @property
    def current_sweep_id(self) -> int:
        return self._sweep_id

    @property
    def sweep_running(self) -> bool:
        return self._sweep_active

    def submit_sweep(self, knob: str, points: list[SweepPoint], timed: bool, device: str = "auto",
                     budget_s: float = 0.1) -> int:
        with self._lock:
            self._sweep_id += 1
            self._sweep_cancelled = False
            self._sweep_active = True
            job = SweepJob(self._sweep_id, points, device if timed else "", budget_s, SweepResult(knob, timed=timed))
        self._schedule_step(job, 0)
        return job.sweep_id

    def cancel_sweep(self) -> None:
        """Stop between points or between timing repeats; finished points are kept, marked partial."""
        self._sweep_cancelled = True

    def _sweep_stopped(self, sweep_id: int) -> bool:
        return self._sweep_cancelled or sweep_id != self._sweep_id

    def _schedule_step(self, job: SweepJob, index: int) -> None:
        with self._lock:
            self._pending += 1
        if self._sync or self._executor is None:
            self._sweep_step(job, index)
        else:
            self._futures = [f for f in self._futures if not f.done()] + [self._executor.submit(self._sweep_step, job, index)]

    def _sweep_step(self, job: SweepJob, index: int) -> None:
        result, sid = job.result, job.sweep_id
        finished = True
        try:
            if self._sweep_stopped(sid):
                result.partial, result.stopped_reason = True, "cancelled"
                return
            timing_fn = None
            if job.device:
                device = resolve_device(job.device)
                step = lambda text: self.sweep_step.emit(sid, f"point {index + 1} of {len(job.points)}: {text}")  # noqa: E731
                timing_fn = lambda cfg: run_timing(  # noqa: E731
                    cfg, device, budget_s=job.budget_s, should_stop=lambda: self._sweep_stopped(sid),
                    include_qkv=False, progress=step).to_report()
            t0 = time.perf_counter()
            try:
                row = run_point(job.points[index], timing_fn)
            except Cancelled:
                result.partial, result.stopped_reason = True, "cancelled"
                return
            except Exception as exc:  # shown on the row; the sweep goes on
                row = SweepRow(job.points[index].value, "failed", describe_error(exc))
            row.seconds = time.perf_counter() - t0
            result.rows.append(row)
            timed = [r.seconds for r in result.rows if r.status == "ok"]
            left = [p for p in job.points[index + 1:] if p.config is not None]
            eta = (sum(timed) / len(timed)) * len(left) if timed else 0.0
            self.sweep_progress.emit(SweepProgress(sid, index + 1, len(job.points), eta, row))
            if row.status == "refused":
                result.partial, result.stopped_reason = True, row.reason
                return
            if index + 1 < len(job.points):
                finished = False
                self._schedule_step(job, index + 1)
        finally:
            if finished:
                self._sweep_active = False
                self.sweep_done.emit((sid, result))
            self._job_done()

    def shutdown(self, wait_s: float | None = None) -> bool:
        """Cancel what is queued, interrupt what runs, and join the worker thread: fully (None), or for
        at most wait_s seconds (the app quitting must not wait on a kernel call that cannot be stopped).
        Returns whether the worker has finished."""
        with self._lock:
            self._latest += 1  # everything in flight is stale now
            self._wake.set()
            self._sweep_cancelled = True
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
        return finished
