"""What the runner's worker computes: module-level functions from plain requests to plain results
(Orange3's pattern), so tests and the CLI call them without a thread."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.device import resolve_device
from core.display import display_bytes, display_layer
from core.inputs.embedding import embed_tokens
from core.inputs.tokens import display_tokens, simple_tokenize
from core.kinds.display_guard import check_display_bytes, guard_display_maps
from core.kinds.kernels import kernels_of
from core.kinds.registry import kind_of
from core.kinds.standard.layer import MAX_DISPLAY_TOKENS
from core.models.evict.selection import eviction_selection
from core.models.forward_cache import ForwardCache
from core.models.head_roles import head_scores, induction_probe_text
from core.models.kv.latent import LatentBasis
from core.models.kv.methods import KVMethod
from core.models.source import LoadedModel
from core.timing.layer import estimate_timing_s, run_timing
from core.timing.timer import Cancelled
from sandbox.jobs.model_compute import compute_model_view
from sandbox.jobs.types import ComputeRequest, Failure, HeatmapResult, TimingOutcome

__all__ = ["ComputeRequest", "Failure", "HeatmapResult", "TimingOutcome", "compute_heatmaps", "compute_timing"]


@contextmanager
def one_thread() -> Iterator[None]:
    """Run small work on one intra-op thread: with the GUI thread busy painting, a second OpenMP
    thread waits at barriers for a core and turns a 2 ms heatmap into 50 ms. Only the worker
    thread calls torch, so switching the global setting here is safe."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class LayerCache:
    """Display projections by architecture, so a slider moving back and forth rebuilds nothing;
    bounded in bytes, since one d_model 16384 layer alone holds 2 GiB."""

    def __init__(self, max_bytes: int = 512 * 2**20) -> None:
        self._layers: OrderedDict[tuple, Any] = OrderedDict()
        self._max_bytes = max_bytes

    def clear(self) -> None:
        self._layers.clear()

    def get(self, cfg: AttentionConfig, seed: int, spec: LayerSpec | None = None) -> Any:
        spec = spec or cfg.layer_spec()
        key = (cfg.d_model, spec, cfg.causal, seed)
        layer = self._layers.pop(key, None)
        if layer is None:
            layer = display_layer(cfg, seed, spec)
        if display_bytes(cfg) > self._max_bytes // 2:
            return layer  # too big to keep: built for this request and freed after it
        self._layers[key] = layer
        while len(self._layers) > 1 and sum(display_bytes(p.cfg) for p in self._layers.values()) > self._max_bytes:
            self._layers.popitem(last=False)
        return layer


def compute_heatmaps(req: ComputeRequest, request_id: int, cache: LayerCache | None = None,
                     models: dict[str, LoadedModel] | None = None,
                     forwards: ForwardCache | None = None,
                     latent_bases: Callable[[str, str], dict[int, LatentBasis]] | None = None) -> HeatmapResult:
    """Per-head probabilities of the request's text (at most 256 tokens, at most seq_len), on the CPU."""
    if req.model is not None:
        loaded = (models or {}).get(req.model)
        if loaded is None:
            raise ValueError(f"the model {req.model} is not loaded; pick it again in the Model list.")
        cfg = req.config
        with torch.inference_mode():
            kv = KVMethod(*req.kv_method) if req.kv_method is not None else None
            bases = None
            if kv is not None and kv.method.startswith("latent"):
                if latent_bases is None:
                    raise ValueError("a latent KV point needs the frontier's fitted bases; run it on the worker.")
                bases = latent_bases(req.model, kv.method)
            tokens, view = compute_model_view(loaded, req.model, req.text, req.layer, cfg.n_heads, cfg.kv_heads,
                                              req.all_layers, req.probe, req.seed, forwards, kv, bases)
        probs = view.after if view.after is not None else view.before
        selection = None
        if view.kept is not None and kv is not None and view.after is not None:  # an eviction: its keys kept a head
            selection = eviction_selection(*view.kept, view.before, kv.label)
        return HeatmapResult(request_id, cfg, tokens, probs, view.n_text_tokens, req.seed, view, view.roles,
                             view.shown_roles, req.probe, selection=selection)
    text, repeat = (induction_probe_text(seed=req.seed) if req.probe == "induction" else (req.text, None))
    tokens_all = simple_tokenize(text)
    tokens = display_tokens(tokens_all, req.config.seq_len, MAX_DISPLAY_TOKENS)
    if not tokens:
        raise ValueError("the text has no tokens to show; type a few words.")
    spec = view_spec(req)
    kind = kind_of(spec)
    guard_display_maps(kind.display_maps(spec), len(tokens))  # before any weight or map is allocated
    check_display_bytes(kind.display_work_bytes(spec, len(tokens)), f"{kind.title}'s implicit attention over "
                        f"{len(tokens)} tokens", "the text's length")
    layer = (cache or LayerCache()).get(req.config.focus(view_layer(req)), req.seed, spec)
    with torch.inference_mode(), one_thread():
        x = embed_tokens(tokens, req.config.d_model, req.seed)  # (1, T, d)
        probs, sinks = layer.probs_and_sinks(x)  # (1, H, T, T), (1, H, T) or None
        selection = kernels_of(spec).key_selection(layer, x)  # a sparse layer's keys read (None: all of them)
    probs_np = probs[0].numpy().copy()
    sink_np = sinks[0].numpy().copy() if sinks is not None else None
    signed = kind_of(spec).has_state  # implicit attention: signed, unnormalised weights that the roles' scores (made
    # for probabilities) would misread
    shown = head_scores(probs_np, tokens, repeat if repeat and len(tokens) == len(tokens_all) else None)
    if signed:
        shown = {role: np.zeros_like(v) for role, v in shown.items()}  # no badges: no role is claimed
    roles = {role: v[None, :] for role, v in shown.items()}  # one layer: (1, H)
    return HeatmapResult(request_id, req.config, tokens, probs_np, len(tokens_all), req.seed, None, roles, shown,
                         req.probe, sink_np, spec, view_layer(req), selection)


def view_layer(req: ComputeRequest) -> int:
    """The design's layer on screen: req.layer, kept within its layers."""
    return min(max(req.layer, 0), req.config.n_layers - 1)


def view_spec(req: ComputeRequest) -> LayerSpec:
    """The design's layer on screen, local or global as the pattern says."""
    return req.config.layer_spec(view_layer(req))


def timed_config(req: ComputeRequest) -> AttentionConfig:
    """The configuration a timing runs: a hybrid stack's shown layer as its own layer (its kind counts the bytes and
    the time); a real model's as it is."""
    return req.config.focus(view_layer(req)) if req.model is None else req.config


def duration_text(seconds: float) -> str:
    """'about 42 s', 'about 3 h', 'more than a year'."""
    if seconds >= 365 * 86400:
        return "more than a year"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= 2 * size:
            return f"about {seconds / size:,.0f} {unit}"
    return f"about {seconds:,.0f} s"


class TimingSkipped(ValueError):
    """The timing would take too long to run on every slider change; the user can ask for it."""


def compute_timing(req: ComputeRequest, request_id: int, should_stop: Callable[[], bool]) -> TimingOutcome:
    """A live timing (max_timing_s set) is skipped when its estimate exceeds max_timing_s, and stopped between two
    repeats once it has run twice that long (a busy machine, a low estimate): Measure now runs to the end."""
    device = resolve_device(req.device)
    deadline = None
    if req.max_timing_s is not None:
        seconds = estimate_timing_s(timed_config(req), device, req.timing_budget_s)
        if seconds > req.max_timing_s:
            raise TimingSkipped(f"timing skipped: this configuration needs {duration_text(seconds)} to measure on "
                                f"{device.type.upper()}; press Measure now (Ctrl+M) to run it anyway.")
        deadline = time.monotonic() + 2 * req.max_timing_s
    overran = lambda: deadline is not None and time.monotonic() > deadline  # noqa: E731
    spec = view_spec(req) if req.model is None else None
    try:
        result = run_timing(timed_config(req), device, seed=req.seed, budget_s=req.timing_budget_s,
                            should_stop=lambda: should_stop() or overran(), spec=spec)
    except Cancelled:
        if overran() and not should_stop():
            raise TimingSkipped(f"timing skipped: it ran over {duration_text(2 * req.max_timing_s)}, beyond its estimate "
                                f"of {duration_text(seconds)} (is the machine busy?); press Measure now (Ctrl+M) to run it "
                                "to the end.") from None
        raise
    return TimingOutcome(request_id, req.config, result, req.device, spec)
