"""The compute jobs, apart from how they are carried: a thread of the window's process (sandbox/runner/thread_runner.py,
tests and the CLI) or a worker process of its own (sandbox/runner/process_runner.py, the app).

A Worker holds what lives between requests (display layers, a real model's forward, loaded models) and
reports through `emit(signal_name, *args)` (a background job's through `emit("progress" | "done", kind, payload)`);
the carrier decides what is stale (`stale(rid)`) and whether a background job was cancelled
(`stopped(kind, job_id)`, a sandbox/jobs/book.py JobBook's rule).
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

import torch

from core.device import default_dtype, device_name, mps_available, resolve_device
from core.models.forward_cache import ForwardCache
from core.models.frontier.run import calibration_bases
from core.models.kv.latent import LatentBasis
from core.models.source import LoadedModel, load_model
from core.study.sweep import SweepRow, run_point
from core.timing.layer import run_timing
from core.timing.timer import Cancelled
from resources import CALIB_TEXT
from sandbox.jobs.compute import LayerCache, compute_heatmaps, compute_timing
from sandbox.jobs.frontier import FrontierWork
from sandbox.jobs.long import LongWork
from sandbox.jobs.model_compute import shape_of
from sandbox.jobs.types import (
    BackgroundJob,
    ComputeRequest,
    Failure,
    SweepDone,
    SweepJob,
    SweepProgress,
    SweepStep,
    WorkerInfo,
)
from sandbox.window.logfile import setup_log_file

log = logging.getLogger(__name__)
Emit = Callable[..., None]


def describe_error(exc: BaseException) -> str:
    if isinstance(exc, torch.OutOfMemoryError):
        return "out of memory on the device; lower seq_len, batch_size or d_model."
    if isinstance(exc, ValueError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def worker_info() -> WorkerInfo:
    """What the window shows of the compute side: the devices it can pick and their names."""
    devices = ["auto", "cpu"]
    if torch.cuda.is_available():
        devices.append("cuda")
    if mps_available():
        devices.append("mps")
    auto = resolve_device("auto")
    return WorkerInfo(tuple(devices), device_name(auto), default_dtype(auto), version("torch"))


class Worker:
    def __init__(self, emit: Emit, stale: Callable[[int], bool], stopped: Callable[[str, int], bool]) -> None:
        self.emit = emit
        self.stale = stale
        self.stopped = stopped
        self.cache = LayerCache()
        self.forwards = ForwardCache()  # a real model's unchanged run of the tokens on screen
        self.models: dict[str, LoadedModel] = {}  # loaded real models, by key or folder
        # a model's latent bases (PCA, SVD) per layer, fitted on the calibration text by its frontier or
        # on the first frontier point shown in the Heatmaps tab
        self.bases: dict[str, tuple[dict[int, LatentBasis], dict[int, LatentBasis]]] = {}
        self.frontier = FrontierWork(emit, self.models, describe_error, self.bases)
        self.frontier.stopped = lambda rid: stopped("frontier", rid)
        self.long = LongWork(emit, self.models, describe_error)  # the Long tab's jobs
        self.long.stopped = lambda job_id: stopped("long", job_id)
        self.steps: dict[str, Callable[[Any, int], bool]] = {
            "sweep": self.sweep_step, "frontier": self.frontier.step, "long": self.long.step}

    def step(self, job: BackgroundJob, index: int) -> bool:
        """Step index of a background job; True when the next step is to be scheduled (live requests run between)."""
        return self.steps[job.job_kind](job, index)

    def fail(self, rid: int, stage: str, exc: BaseException) -> None:
        detail = "".join(traceback.format_exception(exc))
        message = describe_error(exc)
        if not isinstance(exc, ValueError):  # a user's input never lands here; a bug does
            path = setup_log_file()
            log.error("worker error in %s:\n%s", stage, detail)
            if path is not None:
                for handler in logging.getLogger().handlers:
                    handler.flush()
                message += f" (details in {path})"
        self.emit("failed", Failure(rid, stage, message, detail))

    def heatmaps(self, rid: int, req: ComputeRequest) -> None:
        if self.stale(rid):
            return
        try:
            self.emit("heatmaps_ready", compute_heatmaps(req, rid, self.cache, self.models, self.forwards,
                                                         self.latent_bases))
        except Exception as exc:  # shown in the window; the worker serves the next request
            self.fail(rid, "heatmaps", exc)

    def latent_bases(self, key: str, method: str) -> dict[int, LatentBasis]:
        """Model `key`'s bases for latent_pca or latent_svd, fitted once (the calibration text's forwards)."""
        if key not in self.bases:
            self.bases[key] = calibration_bases(self.models[key], CALIB_TEXT.read_text(encoding="utf-8"))
        pca, svd = self.bases[key]
        return pca if method == "latent_pca" else svd

    def timing(self, rid: int, req: ComputeRequest) -> None:
        if self.stale(rid):
            return
        self.emit("timing_started", rid)
        try:
            outcome = compute_timing(req, rid, should_stop=lambda: self.stale(rid))
        except Cancelled:
            return
        except Exception as exc:
            self.fail(rid, "timing", exc)
            return
        if not self.stale(rid):
            self.emit("timing_ready", outcome)

    def load(self, key: str, allow_pickle: bool) -> None:
        try:
            if key not in self.models:
                self.models[key] = load_model(key, progress=lambda text, f: self.emit("model_progress", text, f),
                                              allow_pickle=allow_pickle)
            self.emit("model_loaded", (key, shape_of(self.models[key])))
        except Exception as exc:  # shown in the window; the app stays on the model it had
            self.fail(-1, "model", exc)

    def roof(self, device: str) -> None:
        """This machine's peak FLOP/s, bandwidth and memory, measured (the planner's "this machine")."""
        from core.timing.machine_roof import measure_roof

        try:
            self.emit("roof_ready", measure_roof(device).to_json())
        except Exception as exc:  # said in the Plan tab
            self.fail(-1, "roof", exc)

    def release(self) -> None:
        """Everything loaded or cached: models, their forwards and calibration bases, the display caches."""
        self.models.clear()
        self.bases.clear()
        self.clear()

    def clear(self) -> None:
        self.cache.clear()
        self.forwards.clear()

    def sweep_step(self, job: SweepJob, index: int) -> bool:
        """One point of a sweep; True when the next point is to be scheduled (live requests run between)."""
        result, sid = job.result, job.sweep_id
        finished = True
        try:
            if self.stopped("sweep", sid):
                result.partial, result.stopped_reason = True, "cancelled"
                return False
            if index >= len(job.points):  # a sweep of no points ends at once, with no rows
                return False
            timing_fn = None
            if job.device:
                device = resolve_device(job.device)
                step = lambda text: self.emit(  # noqa: E731
                    "progress", "sweep", SweepStep(sid, f"point {index + 1} of {len(job.points)}: {text}"))
                timing_fn = lambda cfg: run_timing(  # noqa: E731
                    cfg, device, budget_s=job.budget_s, should_stop=lambda: self.stopped("sweep", sid),
                    include_qkv=False, progress=step).to_report()
            t0 = time.perf_counter()
            try:
                row = run_point(job.points[index], timing_fn)
            except Cancelled:
                result.partial, result.stopped_reason = True, "cancelled"
                return False
            except Exception as exc:  # shown on the row; the sweep goes on
                row = SweepRow(job.points[index].value, "failed", describe_error(exc))
            row.seconds = time.perf_counter() - t0
            result.rows.append(row)
            timed = [r.seconds for r in result.rows if r.status == "ok"]
            left = [p for p in job.points[index + 1:] if p.config is not None]
            eta = (sum(timed) / len(timed)) * len(left) if timed else 0.0
            self.emit("progress", "sweep", SweepProgress(sid, index + 1, len(job.points), eta, row))
            if row.status == "refused":
                result.partial, result.stopped_reason = True, row.reason
                return False
            finished = index + 1 >= len(job.points)
            return not finished
        finally:
            if finished:
                self.emit("done", "sweep", SweepDone(sid, result))
