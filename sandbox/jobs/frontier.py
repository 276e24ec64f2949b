"""The frontier as a worker runs it: one step a job (the unchanged model, then one point), the run kept
between steps, so heatmaps and timings asked for meanwhile run between points; a frontier computed
before is read from the disk cache at once."""

from __future__ import annotations

import time
from collections.abc import Callable

from core.models.evict import cache as compress_cache
from core.models.evict.budget import gpu_budget_mib
from core.models.evict.protocol import CONTEXT, CONTINUATION
from core.models.evict.run import CompressRun
from core.models.frontier import cache as frontier_cache
from core.models.frontier.run import FrontierRun, samples_of, shape_of
from core.models.kv.latent import LatentBasis
from core.models.kv.methods import default_sweep
from core.models.source import LoadedModel, cache_identity
from core.plan.gpus import find_gpu
from resources import CALIB_TEXT, EVAL_TEXT
from sandbox.jobs.types import FrontierDone, FrontierJob, FrontierProgress

Emit = Callable[..., None]
# A first guess of a step's time before one is measured: every step is a forward pass over the samples, about
# 2 x parameters x tokens FLOPs, at a rate a float32 transformer forward reaches (the measured steps replace it).
GUESS_FLOPS_S = {"cpu": 40e9, "cuda": 20e12, "mps": 2e12}


def first_guess_s(m: LoadedModel, run: FrontierRun | CompressRun, seconds_per_step: float | None) -> float:
    """The whole run's time before its first step ends: this model's last measured step time in this worker, or the
    model's size over a device's usual rate."""
    if seconds_per_step is not None:
        return seconds_per_step * run.steps
    params = sum(p.numel() for p in m.model.parameters())
    tokens = run.tokens_a_step
    device = next(m.model.parameters()).device.type
    return run.steps * 2.0 * params * tokens / GUESS_FLOPS_S.get(device, GUESS_FLOPS_S["cpu"])


class FrontierWork:
    def __init__(self, emit: Emit, models: dict[str, LoadedModel], describe: Callable[[BaseException], str],
                 bases: dict[str, tuple[dict[int, LatentBasis], dict[int, LatentBasis]]] | None = None) -> None:
        self.emit, self.models, self.describe = emit, models, describe
        self.bases = {} if bases is None else bases  # the worker's, by model key: kept for the Heatmaps tab
        self.stopped: Callable[[int], bool] = lambda _rid: False  # the carrier says when a run was cancelled
        self.run: FrontierRun | CompressRun | None = None
        self.run_id = 0  # the job the run in progress belongs to
        self.key = ""
        self.step_seconds: list[float] = []
        # by model and protocol: the last run's mean step, for the next run's first guess
        self.seconds_per_step: dict[tuple[str, str], float] = {}

    def step(self, job: FrontierJob, index: int) -> bool:
        """Step `index` of the job; True when there is a next one."""
        rid = job.run_id
        try:
            if self.stopped(rid):
                self._end(FrontierDone(rid, None, "cancelled"))
                return False
            if index == 0 and not self._start(job):
                return False
            run = self.run
            assert run is not None
            t0 = time.perf_counter()
            point = run.step(index)
            if run.bases is not None:  # the shipped calibration text's: the Heatmaps tab's too
                self.bases.setdefault(job.model, run.bases)
            self.step_seconds.append(time.perf_counter() - t0)
            self.seconds_per_step[(job.model, job.protocol)] = sum(self.step_seconds) / len(self.step_seconds)
            done = index + 1
            fit_to_come = run.fit_to_come(done)
            eta = sum(self.step_seconds) / len(self.step_seconds) * (run.steps - done + fit_to_come)  # a fit ~ a step
            text = run.describe(done) if done < run.steps else ""
            data = point.to_json()
            if index == 0 and isinstance(run, CompressRun):  # the budget, so the tab's sentence is its from the start
                data.update(budget_mib=run.budget_mib, budget_words=run.budget_words)
            self.emit("progress", "frontier", FrontierProgress(rid, done, run.steps, eta, text, data))
            if done < run.steps:
                return True
            assert run.result is not None
            if isinstance(run, CompressRun):
                compress_cache.save(self.key, run.result)
            else:
                frontier_cache.save(self.key, run.result)
            self._end(FrontierDone(rid, run.result.to_json()))
            return False
        except Exception as exc:  # said in the tab; the worker serves the next request
            self._end(FrontierDone(rid, None, self.describe(exc)))
            return False

    def _start(self, job: FrontierJob) -> bool:
        m = self.models.get(job.model)
        if m is None:
            raise ValueError(f"the model {job.model} is not loaded; pick it in the Model list first.")
        eval_text, calib_text = EVAL_TEXT.read_text(encoding="utf-8"), CALIB_TEXT.read_text(encoding="utf-8")
        if job.protocol == "compress":
            return self._start_compress(job, m, eval_text, calib_text)
        context = int(samples_of(m, eval_text, 1)[0].shape[1])
        methods = default_sweep(shape_of(m), context, job.families)
        self.key = frontier_cache.cache_key(m.name, cache_identity(m), eval_text, calib_text, methods, job.n_samples,
                                            context)
        everything = default_sweep(shape_of(m), context)
        cached = frontier_cache.load(self.key) or frontier_cache.load(frontier_cache.cache_key(
            m.name, cache_identity(m), eval_text, calib_text, everything, job.n_samples, context))  # all methods: a subset
        if cached is not None:
            wanted = {m.method for m in methods}
            cached.points = [p for p in cached.points if p.method in wanted]
            self._end(FrontierDone(job.run_id, cached.to_json(), cached=True))
            return False
        self.run = FrontierRun(m, eval_text, calib_text, methods, job.n_samples, context)
        # Said before the first (slowest) step: how many steps and about how long, so the tab shows time left at once.
        self._begin(job, m)
        return True

    def _start_compress(self, job: FrontierJob, m: LoadedModel, text: str, calib_text: str) -> bool:
        budget, words = job.budget_mib, ""
        if job.budget_gpu is not None:
            gpu = find_gpu(job.budget_gpu)
            budget = gpu_budget_mib(gpu.memory_bytes, sum(p.numel() for p in m.model.parameters()), job.sequences or 0)
            words = f"{job.sequences:,} sequences on one {gpu.name} ({budget:,.2f} MiB of cache each)"
        ratios = None if budget is not None else job.ratios
        calib = calib_text if "latent" in job.families else ""
        self.key = compress_cache.cache_key(m.name, cache_identity(m), text, calib, job.presses, ratios,
                                            budget, job.families, CONTEXT, CONTINUATION)
        run = CompressRun(m, text, job.presses, ratios, budget, job.families, calib)
        run.budget_words = words or run.budget_words
        cached = compress_cache.load(self.key)
        if cached is not None and run.matches(cached):  # another run's result, or a damaged one, is computed again
            self._end(FrontierDone(job.run_id, cached.to_json(), cached=True))
            return False
        self.run = run
        self._begin(job, m)
        return True

    def _begin(self, job: FrontierJob, m: LoadedModel) -> None:
        assert self.run is not None
        self.run_id = job.run_id
        self.step_seconds = []
        guess = first_guess_s(m, self.run, self.seconds_per_step.get((job.model, job.protocol)))
        self.emit("progress", "frontier", FrontierProgress(job.run_id, 0, self.run.steps, guess,
                                                        f"{self.run.describe(0)} (time left estimated until a step "
                                                        "is measured)", None))

    def _end(self, done: FrontierDone) -> None:
        if done.run_id == self.run_id:  # a cancelled run's last step must not drop the run that replaced it
            self.run = None
        self.emit("done", "frontier", done)
