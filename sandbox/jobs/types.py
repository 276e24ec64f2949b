"""What crosses between the window and the compute worker: plain requests and results (no torch, so the
window's process never loads it; pickled over the worker's pipe)."""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any, ClassVar

import numpy as np

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.kinds.selection import KeySelection
from core.study.sweep import SweepPoint, SweepResult, SweepRow
from core.timing.result import TimingResult
from sandbox.jobs.long_types import LongJob
from sandbox.jobs.model_view import ModelView
from sandbox.state.view import View


@dataclass(frozen=True)
class ComputeRequest:
    config: AttentionConfig
    text: str
    device: str = "auto"  # auto, cpu, cuda, mps (timing only; heatmaps run on the CPU)
    seed: int = 0
    want_timing: bool = True
    timing_budget_s: float = 0.15
    model: str | None = None  # a loaded real model's key (None: random weights)
    layer: int = 0  # the layer shown (real models: and changed; a design with a window: local or global)
    all_layers: bool = False  # real models: change every layer, not only `layer`
    probe: str = "text"  # text: the user's text; induction: a seeded random sequence repeated twice
    max_timing_s: float | None = 20.0  # skip (with the estimate) a timing expected to take longer
    kv_method: tuple[str, int | str, int] | None = None  # real models: a frontier point's (method, setting, sinks)

    @classmethod
    def of(cls, view: View, **run: Any) -> ComputeRequest:
        """The request for what the window shows; run: how to run it (seed, timing budget, want_timing, ...)."""
        return cls(config=view.config, text=view.text, device=view.device, model=view.model, layer=view.layer,
                   all_layers=view.all_layers, probe=view.probe, kv_method=view.kv_method, **run)


@dataclass(frozen=True)
class HeatmapResult:
    request_id: int
    config: AttentionConfig
    tokens: list[str]
    probs: np.ndarray  # (H, T, T) float32, rows sum to 1
    n_text_tokens: int  # before the display limit
    seed: int = 0
    model: ModelView | None = None  # real models: every layer, before and after, fidelity
    roles: dict[str, np.ndarray] | None = None  # {role: (L, H)}: every layer of a real model, one row here
    shown_roles: dict[str, np.ndarray] | None = None  # {role: (H,)} of the heads on screen
    probe: str = "text"
    sink_share: np.ndarray | None = None  # (H, T): the mass each row gives to its head's sink (None: no sinks)
    layer_spec: LayerSpec | None = None  # the layer shown (design mode)
    view_layer: int = 0  # its index (design mode)
    selection: KeySelection | None = None  # a sparse layer's keys read and its dense maps (None: it reads them all)


@dataclass(frozen=True)
class TimingOutcome:
    request_id: int
    config: AttentionConfig
    result: TimingResult
    device: str = "auto"  # the device choice it was asked for
    layer_spec: LayerSpec | None = None  # the layer timed (a design's local or global layer)

    def measures(self, config: AttentionConfig, device: str, spec: LayerSpec | None = None) -> bool:
        """Timing runs random inputs of the configured shapes: it holds for any text, layer or probe,
        except a layer of another kind (local or global) when spec is given."""
        return (self.config == config and self.device == device
                and (spec is None or self.layer_spec is None or self.layer_spec == spec))


@dataclass(frozen=True)
class Failure:
    request_id: int
    stage: str  # heatmaps or timing
    message: str
    detail: str = field(default="")


@dataclass
class SweepJob:
    """A sweep, one point a step: live requests queued meanwhile run between points."""

    job_kind: ClassVar[str] = "sweep"
    sweep_id: int
    points: list[SweepPoint]
    device: str  # where to time ('': counts only)
    budget_s: float
    result: SweepResult

    @property
    def job_id(self) -> int:
        return self.sweep_id

    def lost(self, progress: list[Any]) -> SweepDone:
        """Its end when the worker running it died: the points done, marked partial."""
        rows = [p.row for p in progress if isinstance(p, SweepProgress)]
        return SweepDone(self.sweep_id, SweepResult(self.result.knob, rows=rows, timed=self.result.timed, partial=True,
                                                    stopped_reason="the compute worker stopped"))


@dataclass(frozen=True)
class SweepProgress:
    sweep_id: int
    done: int
    total: int
    eta_s: float  # seconds left, from the mean of the timed points so far
    row: SweepRow

    @property
    def job_id(self) -> int:
        return self.sweep_id


@dataclass(frozen=True)
class SweepStep:
    """The timing step now running in a sweep's point ("point 3 of 8: naive prefill (3/7)")."""

    sweep_id: int
    text: str

    @property
    def job_id(self) -> int:
        return self.sweep_id


@dataclass(frozen=True)
class SweepDone:
    sweep_id: int
    result: SweepResult

    @property
    def job_id(self) -> int:
        return self.sweep_id


@dataclass(frozen=True)
class FrontierJob:
    """A KV frontier of a loaded model (its key as the Model list names it) over the given method families: the
    window protocol, or the compress protocol with its eviction presses at ratios or one byte budget."""

    job_kind: ClassVar[str] = "frontier"
    run_id: int
    model: str
    families: tuple[str, ...]
    n_samples: int = 2
    protocol: str = "window"  # or "compress"
    presses: tuple[str, ...] = ()  # compress: the eviction methods
    ratios: tuple[float, ...] = ()  # compress: the ratios (empty with a budget)
    budget_mib: float | None = None  # compress: one sequence's cache in MiB
    budget_gpu: str | None = None  # compress: or the share of this GPU (a catalogue id) ...
    sequences: int | None = None  # ... that each of this many sequences gets

    @property
    def job_id(self) -> int:
        return self.run_id

    def lost(self, progress: list[Any]) -> FrontierDone:
        """Its end when the worker running it died, said in its tab (it is not rerun)."""
        return FrontierDone(self.run_id, None, "the compute worker stopped during the frontier; run it again once the "
                                               "model is reloaded (the points done stay on the chart, not in the cache)")


@dataclass(frozen=True)
class FrontierProgress:
    """One step of a frontier done: the point as plain numbers (FrontierPoint.to_json)."""

    run_id: int
    done: int
    total: int
    eta_s: float
    text: str  # the step that runs next ('' when none)
    point: dict | None  # FrontierPoint.to_json() or CompressPoint.to_json()

    @property
    def job_id(self) -> int:
        return self.run_id


@dataclass(frozen=True)
class FrontierDone:
    run_id: int
    result: dict | None  # FrontierResult.to_json() or CompressResult.to_json(); None when it failed or was cancelled
    message: str = ""  # why, in a sentence, when result is None
    cached: bool = False

    @property
    def job_id(self) -> int:
        return self.run_id


BackgroundJob = SweepJob | FrontierJob | LongJob  # a job of several steps, one at a time on the main worker


@dataclass(frozen=True)
class WorkerInfo:
    """The compute side as the window names it: known once the worker has started."""

    devices: tuple[str, ...]  # the device choices: auto, cpu, and cuda or mps where present
    device_name: str  # what auto resolves to, by name
    default_dtype: str  # the dtype a first start picks for it
    torch_version: str


def starting_info() -> WorkerInfo:
    """Until the worker says otherwise: the CPU (torch's version read from its metadata, not imported)."""
    try:
        torch_version = version("torch")
    except PackageNotFoundError:
        torch_version = "?"
    return WorkerInfo(("auto", "cpu"), "CPU", "float32", torch_version)
