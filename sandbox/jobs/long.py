"""The Long tab's jobs as a worker runs them: an overview (the layer's queries and keys, then the pooled
map), a zoom into the last overview (its queries and keys kept, so a zoom costs only its rows), and a decode run,
one step a job so that heatmaps asked for meanwhile run between steps (as sweeps and the frontier do)."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import torch

from core.arch.config import short_int
from core.arch.layer import LayerSpec
from core.device import device_name, free_memory_bytes, resolve_device
from core.long.budget import check_fits, overview_budget
from core.long.inputs import LayerInputs, check_tokens, design_inputs, model_inputs
from core.long.map import DEFAULT_BAND, MAX_TOKENS, Stopped, block_for, long_map
from core.models.decode_run import (
    SERVED_FORMAT,
    CurveRun,
    DecodeCurve,
    DecodeStep,
    check_steps,
    curve_lengths,
    decode_model,
)
from core.models.source import LoadedModel
from core.timing.cpu_load import CpuTimes, other_cores, read_times
from sandbox.jobs.long_types import DecodeStepView, LongDone, LongJob, LongProgress, LongView

Emit = Callable[..., None]
LABELLED_TOKENS = 256  # a zoom this narrow shows single tokens with their labels (the Heatmaps tab's limit)


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def clean_text(text: str) -> str:
    """The text as a tokenizer takes it: a lone surrogate (an undecodable byte from a command line) becomes U+FFFD."""
    return text.encode("utf-8", "replace").decode("utf-8")


def token_ids(tokenizer: Any, text: str, n_tokens: int) -> tuple[list[int], int | None]:
    """The first n_tokens ids of the text, and the text's whole count when it was tokenised whole (None: longer than
    what was read). A prefix of characters is tokenised first, widened until it holds n_tokens: a 50 MB file is not
    tokenised whole for a 64-token map."""
    text = clean_text(text)
    chars = max(256, 16 * n_tokens)
    while True:
        ids = tokenizer(text[:chars])["input_ids"]
        if len(ids) > n_tokens or chars >= len(text):
            return ids[:n_tokens], (len(ids) if chars >= len(text) else None)
        chars *= 2


def check_job(job: LongJob) -> None:
    """What a job asks for, checked before anything is computed (a ValueError that says what to change)."""
    block_for(max(2, job.n_tokens), job.pixels)  # 16 to 4,096 cells
    band = job.band
    if band is not None and (isinstance(band, bool) or not isinstance(band, int) or not 1 <= band <= MAX_TOKENS):
        raise ValueError(f"the band W is 1 to {MAX_TOKENS:,} tokens, not {short_int(band)}.")
    if job.kind == "decode":
        check_steps(job.steps)


def design_spec(job: LongJob) -> LayerSpec:
    """The random-weight layer a job names (a ValueError for a layer the design does not have)."""
    n = job.config.n_layers
    if isinstance(job.layer, bool) or not isinstance(job.layer, int) or not 0 <= job.layer < n:
        raise ValueError(f"layer {short_int(job.layer)} does not exist; the design has layers 0 to {n - 1}.")
    return job.config.layer_spec(job.layer)


class LongWork:
    def __init__(self, emit: Emit, models: dict[str, LoadedModel], describe: Callable[[BaseException], str]) -> None:
        self.emit, self.models, self.describe = emit, models, describe
        self.stopped: Callable[[int], bool] = lambda _job_id: False  # the carrier says when a job was cancelled
        self.inputs: tuple[tuple, LayerInputs, int] | None = None  # the last overview's (key, inputs, text tokens)
        self.decoding: Iterator[DecodeStep] | None = None
        self.curve: DecodeCurve | None = None
        self.curve_run: CurveRun | None = None
        self.lengths: list[int] = []
        self.started = 0.0
        self.load_from: CpuTimes | None = None  # /proc's reading when the job started: others' load since

    def other_load(self) -> float | None:
        """Cores other processes kept busy since the job started (a timing beside them is inflated); None: unknown."""
        end = read_times()
        return None if self.load_from is None or end is None else round(other_cores(self.load_from, end), 2)

    # -- carrying ----------------------------------------------------------------------------------
    def step(self, job: LongJob, index: int) -> bool:
        """Step `index` of the job; True when there is a next one."""
        stop = lambda: self.stopped(job.job_id)  # noqa: E731
        try:
            if stop():
                raise Stopped
            if index == 0:
                check_job(job)
                self.load_from = read_times()
            if job.kind == "decode":
                return self._decode_step(job, index, stop)
            if job.kind == "layers":
                self.emit("done", "long", LongDone(job.job_id, "layers", layers=self._layers(job, stop)))
                return False
            view = self._overview(job, stop) if job.kind == "overview" else self._region(job, stop)
            self.emit("done", "long", LongDone(job.job_id, job.kind, view))
        except Stopped:
            self._end(job, "cancelled")
        except Exception as exc:  # said in the tab; the worker serves the next request
            self._end(job, self.describe(exc))
        return False

    def _end(self, job: LongJob, message: str) -> None:
        self.decoding, self.curve, self.curve_run = None, None, None
        self.emit("done", "long", LongDone(job.job_id, job.kind, message=message))

    def _progress(self, job: LongJob, what: str, lo: float, hi: float) -> Callable[[float], None]:
        last = [0.0]

        def say(fraction: float) -> None:
            now = time.perf_counter()
            if now - last[0] > 0.1 or fraction >= 1.0:
                last[0] = now
                done = lo + (hi - lo) * fraction
                elapsed = now - self.started
                eta = elapsed / done * (1 - done) if done > 0.02 else None
                self.emit("progress", "long", LongProgress(job.job_id, done, what, eta))
        return say

    # -- overview and zoom ---------------------------------------------------------------------------
    def _layer_inputs(self, job: LongJob, device: torch.device, stop: Callable[[], bool]) -> tuple[LayerInputs, int]:
        key = (job.model, job.config if job.model is None else None, job.layer, text_key(job.text), job.n_tokens,
               job.seed, str(device))
        if self.inputs is not None and self.inputs[0] == key:
            return self.inputs[1], self.inputs[2]
        self.inputs = None  # the old inputs go before the new ones are made
        if job.model is None:
            check_tokens(job.n_tokens)
            spec = design_spec(job)
            budget = overview_budget(spec.n_heads, spec.n_kv_heads, spec.head_dim, job.n_tokens, job.pixels,
                                     job.config.causal, spec.window, device.type)
            check_fits(budget, free_memory_bytes(device))
            self.emit("progress", "long", LongProgress(job.job_id, 0.0, "drawing the seeded inputs and projecting them"))
            li, n_text = design_inputs(job.config, spec, job.n_tokens, job.seed, job.layer, device, stop), job.n_tokens
        else:
            from core.models.inspect import token_labels

            m = self.models.get(job.model)
            if m is None:
                raise ValueError(f"the model {job.model} is not loaded; open it in the Model list first.")
            if not job.text.strip():
                raise ValueError("the text is empty; give a text of a few sentences at least.")
            check_tokens(job.n_tokens, m.max_tokens)
            ids, whole = token_ids(m.tokenizer, job.text, job.n_tokens)
            n_text = whole if whole is not None else -1  # -1: longer than it reads, not counted whole
            if len(ids) < 2:
                raise ValueError("the text is a single token; give a longer one.")
            budget = overview_budget(m.n_heads, m.n_kv_heads, m.head_dim, len(ids), job.pixels, m.kind == "causal",
                                     None, device.type, job.layer + 1, m.d_model)
            check_fits(budget, free_memory_bytes(torch.device("cpu")))
            self.emit("progress", "long", LongProgress(job.job_id, 0.0, f"reading {len(ids):,} tokens through "
                                                    f"{job.layer + 1} layer{'s' * (job.layer > 0)} of {m.name}"))
            li = model_inputs(m, ids, job.layer, token_labels(m, ids), stop)
            li.q, li.k = li.q.to(device), li.k.to(device)
        self.inputs = (key, li, n_text)
        return li, n_text

    def _overview(self, job: LongJob, stop: Callable[[], bool]) -> LongView:
        self.started = time.perf_counter()
        device = resolve_device(job.device)
        li, n_text = self._layer_inputs(job, device, stop)
        T = li.q.shape[1]
        m = long_map(li.q, li.k, li.rule, block_for(T, job.pixels), job.pool, band=job.band, should_stop=stop,
                     progress=self._progress(job, "scoring, normalising and pooling the rows", 0.3, 1.0))
        return self._view(job, li, m, n_text, device, time.perf_counter() - self.started)

    def _region(self, job: LongJob, stop: Callable[[], bool]) -> LongView:
        """A zoom of the overview the job names: its queries and keys are the last overview's when it is that one,
        else made again (a cancelled overview in between took their place)."""
        self.started = time.perf_counter()
        if job.region is None:
            raise ValueError("a zoom needs the region to show; zoom into an overview.")
        device = resolve_device(job.device)
        li, n_text = self._layer_inputs(job, device, stop)
        T = li.q.shape[1]
        r0, r1, c0, c1 = (max(0, min(T, int(v))) for v in job.region)
        if r1 - r0 < 1 or c1 - c0 < 1:
            raise ValueError("the zoomed region holds no tokens; zoom out a little.")
        span = max(r1 - r0, c1 - c0)
        block = 1 if span <= LABELLED_TOKENS else block_for(span, job.pixels)
        m = long_map(li.q, li.k, li.rule, block, job.pool, rows=(r0, r1), cols=(c0, c1), should_stop=stop,
                     progress=self._progress(job, "recomputing the zoomed rows", 0.0, 1.0))
        view = self._view(job, li, m, n_text, device, time.perf_counter() - self.started)
        if block == 1:
            view = replace(view, labels=li.tokens[c0:c1], row_labels=li.tokens[r0:r1])
        return view

    def _view(self, job: LongJob, li: LayerInputs, m: Any, n_text: int, device: torch.device, seconds: float) -> LongView:
        stats = m.stats.to_json() if m.stats is not None else None
        band = li.rule.window or job.band or DEFAULT_BAND
        manifest = {"what": li.what, "model": job.model, "layer": job.layer, "tokens": li.q.shape[1],
                    "text_tokens": n_text, "text_sha256_16": text_key(job.text) if job.model else None,
                    "seed": job.seed if job.model is None else None, "pool": job.pool, "block_tokens": m.block,
                    "rows": list(m.rows), "cols": list(m.cols), "band": band, "window": li.rule.window,
                    "causal": li.rule.causal, "learned_sinks": li.rule.sinks is not None,
                    "config": job.config.to_dict() if job.model is None else None, "device": device_name(device),
                    "seconds": round(seconds, 3), "other_load_cores": self.other_load(), "stats": stats,
                    "softmax_scale": li.rule.scale}
        return LongView(job.job_id, m.pooled, m.block, m.rows, m.cols, li.q.shape[1], job.pool, li.what,
                        li.k.shape[0], li.rule.window, stats, seconds=seconds, device=device_name(device),
                        text_tokens=n_text, manifest=manifest)

    def _layers(self, job: LongJob, stop: Callable[[], bool]) -> dict:
        """A real model's every layer x head figures over the job's text, in one forward (the Roles tab shows them)."""
        from core.long.inputs import model_layer_stats

        self.started = time.perf_counter()
        m = self.models.get(job.model or "")
        if m is None:
            raise ValueError("every layer's figures are a real model's: open one in the Model list first.")
        check_tokens(job.n_tokens, m.max_tokens)
        ids, _ = token_ids(m.tokenizer, job.text, job.n_tokens)
        if len(ids) < 2:
            raise ValueError("the text is a single token; give a longer one.")
        say = self._progress(job, "every layer's figures", 0.0, 1.0)
        out = model_layer_stats(m, ids, job.band, stop, lambda i: say((i + 1) / m.n_layers))
        return {**out, "model": m.name, "tokens": len(ids), "seconds": round(time.perf_counter() - self.started, 2),
                "other_load_cores": self.other_load()}

    # -- decode --------------------------------------------------------------------------------------
    def _decode_step(self, job: LongJob, index: int, stop: Callable[[], bool]) -> bool:
        if job.model is not None:
            return self._model_step(job, index, stop)
        return self._curve_step(job, index, stop)

    def _model_step(self, job: LongJob, index: int, stop: Callable[[], bool]) -> bool:
        m = self.models.get(job.model or "")
        if index == 0:
            if m is None:
                raise ValueError(f"the model {job.model} is not loaded; open it in the Model list first.")
            room = max(1, min(job.n_tokens, m.max_tokens - job.steps))  # the prompt leaves room for the steps
            ids = token_ids(m.tokenizer, job.text, room)[0] if job.text.strip() else []
            self.decoding = decode_model(m, ids, job.steps, job.layer, job.kv_format or SERVED_FORMAT, stop)
            self.started = time.perf_counter()
        assert self.decoding is not None
        try:
            s = next(self.decoding)
        except StopIteration:
            self.decoding = None
            self.emit("done", "long", LongDone(job.job_id, "decode", decode_meta=self._decode_meta(job, m)))
            return False
        view = DecodeStepView(s.step, s.n_cached, s.kv_bytes, s.step_ms, s.token, s.row)
        elapsed = time.perf_counter() - self.started
        eta = elapsed / (index + 1) * (job.steps - index - 1)
        self.emit("progress", "long", LongProgress(job.job_id, (index + 1) / job.steps,
                                                f"generated {index + 1} of {job.steps} tokens", eta, step=view))
        return True

    def _decode_meta(self, job: LongJob, m: LoadedModel | None) -> dict:
        return {"model": m.name if m is not None else job.model, "layer": job.layer, "kv_format": job.kv_format,
                "steps": job.steps, "n_heads": m.n_heads if m else None, "n_kv_heads": m.n_kv_heads if m else None,
                "device": device_name(torch.device("cpu")), "other_load_cores": self.other_load()}

    def _curve_step(self, job: LongJob, index: int, stop: Callable[[], bool]) -> bool:
        spec = design_spec(job)
        device = resolve_device(job.device)
        if index == 0:
            if not 16 <= job.n_tokens <= MAX_TOKENS:
                raise ValueError(f"the decode curve reaches 16 to {MAX_TOKENS:,} tokens of context, not {short_int(job.n_tokens)}.")
            self.lengths = curve_lengths(job.n_tokens, max(2, min(job.steps, 24)))
            self.curve = DecodeCurve(device=device.type, threads=torch.get_num_threads())
            self.curve_run = CurveRun(job.config, spec, device, job.seed)
            self.started = time.perf_counter()
        assert self.curve is not None and self.curve_run is not None
        point = self.curve_run.point(self.lengths[index], stop)
        self.curve.points.append(point)
        done = index + 1
        elapsed = time.perf_counter() - self.started
        self.emit("progress", "long", LongProgress(job.job_id, done / len(self.lengths),
                                                f"timed the step at {point.context:,} tokens of context",
                                                elapsed / done * (len(self.lengths) - done), point=point.to_json()))
        if done < len(self.lengths):
            return True
        self.curve.fit()
        curve, self.curve, self.curve_run = self.curve, None, None
        self.emit("done", "long", LongDone(job.job_id, "decode", curve=curve.to_json(), decode_meta={
            "layer": job.layer, "spec": spec.to_dict(), "label": spec.kind_label, "dtype": job.config.dtype,
            "device": device_name(device), "other_load_cores": self.other_load()}))
        return False
