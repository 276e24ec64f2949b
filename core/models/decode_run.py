"""Decode, step by step: a real causal model generating greedily, each step's forward timed on the device,
the KV cache counted by the app's formulas at every length, and the new token's attention row at one layer;
or, for random weights, one layer's decode step timed at growing cache lengths (time against cached tokens: the
slope of a memory-bound step)."""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import torch

from core.arch.config import AttentionConfig, short_int
from core.arch.layer import LayerSpec
from core.counts import layer_kv_bytes_per_token, model_counts
from core.kinds.registry import kind_of
from core.kinds.standard.band import cached_tokens
from core.long.inputs import _Capture, sdpa_hooks
from core.long.map import Stopped
from core.timing.cpu_load import timing_threads
from core.timing.timer import measure, synchronize

MAX_STEPS = 256
MIN_R2, MIN_SPAN = 0.8, 512  # a decode curve's line must explain this much and span this many tokens read
SERVED_FORMAT = "bfloat16"  # the KV format a served model's cache is counted in unless another is asked for


@dataclass
class DecodeStep:
    step: int  # 0: the prompt's prefill; then one generated token each
    n_cached: int  # tokens in the cache after this step
    kv_bytes: int  # the whole model's cache at n_cached tokens, in the asked format (the costs' count)
    step_ms: float  # this step's forward, measured on the device
    token: str  # the token this step produced (greedy)
    row: np.ndarray  # (H, n_cached) the attention of this step's last query over every cached token, at the layer
    token_id: int = 0


def model_architecture(m: object):
    """A loaded model's attention as the app counts it (every layer alike, as trained)."""
    from core.models.choices import ModelShape

    return ModelShape.of(m).architecture()


def kv_bytes_at(arch, n_tokens: int, kv_format: str) -> int:
    """The whole-model cache at n_tokens (batch 1) in kv_format."""
    spec = arch.layers[0]
    cfg = AttentionConfig(d_model=arch.d_model, n_heads=spec.n_heads, n_kv_heads=spec.n_kv_heads,
                          seq_len=max(1, n_tokens), n_layers=arch.n_layers, causal=True,
                          explicit_head_dim=spec.head_dim, kv_dtype=kv_format)
    return model_counts(arch, cfg).kv_bytes_total


def check_steps(steps: object) -> int:
    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= MAX_STEPS:
        raise ValueError(f"a decode run generates 1 to {MAX_STEPS} tokens, not {short_int(steps)}.")
    return steps


def _row(hooks: _Capture) -> np.ndarray:
    """The captured last query's probabilities over the captured keys: (H, n)."""
    assert hooks.q is not None and hooks.k is not None
    q = hooks.q[:, -1:].float()  # (H, 1, h)
    k = hooks.k.float()  # (K, n, h)
    H, K = q.shape[0], k.shape[0]
    scores = torch.matmul(q.reshape(K, H // K, q.shape[-1]), k.transpose(1, 2)).reshape(H, -1) * hooks.scaling  # (H, n)
    if hooks.window is not None:
        scores[:, : max(0, scores.shape[1] - hooks.window)] = float("-inf")
    if hooks.sinks is not None:
        full = torch.cat([scores, hooks.sinks.view(H, 1)], dim=-1).softmax(-1)  # (H, n + 1)
        return full[:, :-1].numpy()
    return scores.softmax(-1).numpy()


def decode_model(m, prompt_ids: list[int], steps: int, layer: int, kv_format: str = SERVED_FORMAT,
                 should_stop: Callable[[], bool] | None = None) -> Iterator[DecodeStep]:
    """Greedy decoding of `steps` tokens after the prompt, one DecodeStep as each is made: the prefill makes the
    first, each later step reads the token before it and makes the next."""
    from core.models.inspect import attention_modules

    if m.kind != "causal":
        raise ValueError(f"{m.name} is an encoder: it reads its input at once and generates nothing; open a causal "
                         "model (SmolLM2) for a decode run.")
    check_steps(steps)
    if not prompt_ids:
        raise ValueError("the prompt is empty; type a few words.")
    if len(prompt_ids) + steps > m.max_tokens:
        raise ValueError(f"the prompt ({len(prompt_ids):,} tokens) and {steps} new tokens exceed {m.name}'s "
                         f"{m.max_tokens:,}; shorten the prompt or generate fewer.")
    if not 0 <= layer < m.n_layers:
        raise ValueError(f"layer {layer} does not exist; {m.name} has layers 0 to {m.n_layers - 1}.")
    arch = model_architecture(m)
    hooks = _Capture(attention_modules(m), layer, should_stop, stop_after=False)
    device = next(m.model.parameters()).device
    ids = torch.tensor([prompt_ids], device=device)
    cache = None
    # transformers 5.x renames past_key_values to cache (the old name warns that it will go)
    cache_arg = "cache" if "cache" in inspect.signature(m.model.forward).parameters else "past_key_values"
    n = 0
    with torch.inference_mode(), sdpa_hooks(m, hooks):
        for step in range(steps):  # step 0 reads the prompt and makes the first token; each next step one more
            if should_stop is not None and should_stop():
                raise Stopped
            synchronize(device)
            t0 = time.perf_counter()
            out = m.model(input_ids=ids, use_cache=True, **{cache_arg: cache})
            synchronize(device)
            ms = (time.perf_counter() - t0) * 1e3
            cache = getattr(out, "cache", None) or out.past_key_values
            n += ids.shape[1]
            nxt = int(out.logits[0, -1].argmax())
            yield DecodeStep(step, n, kv_bytes_at(arch, n, kv_format), ms, m.tokenizer.decode([nxt]), _row(hooks), nxt)
            ids = torch.tensor([[nxt]], device=device)


@dataclass
class CurvePoint:
    cached: int  # tokens the step reads (a local layer: min(context, W))
    context: int  # tokens of context
    median_ms: float
    p25_ms: float
    p75_ms: float
    kv_bytes: int  # the layer's K and V the step reads, in the compute dtype

    def to_json(self) -> dict[str, float | int]:
        return {"context": self.context, "cached": self.cached, "median_ms": round(self.median_ms, 5),
                "p25_ms": round(self.p25_ms, 5), "p75_ms": round(self.p75_ms, 5), "kv_bytes": self.kv_bytes}


@dataclass
class DecodeCurve:
    """A random-weight layer's decode step against its context."""

    points: list[CurvePoint] = field(default_factory=list)
    slope_ms_per_1k: float = math.nan  # least squares over the points: ms per 1,000 cached tokens
    intercept_ms: float = math.nan  # the step with nothing cached: projections and overhead
    bandwidth_gbs: float = math.nan  # the cache bytes per ms the slope implies, GB/s (only where the line holds)
    r2: float = math.nan  # how much of the times' spread the line explains
    device: str = "cpu"
    threads: int = 1

    def fit(self) -> None:
        """Least squares of the median step time on the tokens read (needs two distinct lengths)."""
        xs = np.array([p.cached for p in self.points], dtype=np.float64)
        ys = np.array([p.median_ms for p in self.points], dtype=np.float64)
        if len(set(xs.tolist())) < 2:
            return
        slope, intercept = np.polyfit(xs, ys, 1)
        self.slope_ms_per_1k, self.intercept_ms = float(slope * 1000), float(intercept)
        spread = float(((ys - ys.mean()) ** 2).sum())
        self.r2 = 1 - float(((ys - (slope * xs + intercept)) ** 2).sum()) / spread if spread > 0 else math.nan
        per_token = self.points[-1].kv_bytes / max(1, self.points[-1].cached)
        # a bandwidth only from a line that holds (R^2 >= 0.8) over at least 512 tokens of cache: a slope fitted to
        # noise, or to a window's few dozen tokens, is no measurement of the cache read
        holds = slope > 0 and self.r2 >= MIN_R2 and xs.max() - xs.min() >= MIN_SPAN
        self.bandwidth_gbs = float(per_token / (slope * 1e-3) / 1e9) if holds else math.nan

    def to_json(self) -> dict[str, object]:
        return {"points": [p.to_json() for p in self.points], "slope_ms_per_1k_tokens": _r(self.slope_ms_per_1k),
                "intercept_ms": _r(self.intercept_ms), "bandwidth_gbs": _r(self.bandwidth_gbs), "r2": _r(self.r2),
                "device": self.device,
                "threads": self.threads}


def _r(x: float) -> float | None:
    return None if not math.isfinite(x) else round(x, 5)


def curve_lengths(max_tokens: int, n: int = 12) -> list[int]:
    """n context lengths from 16 to max_tokens, evenly spaced (a straight line shows best on a linear axis)."""
    if max_tokens < 16:
        return [max_tokens]
    return sorted({int(round(16 + (max_tokens - 16) * i / (n - 1))) for i in range(n)})


class CurveRun:
    """A random-weight layer, its new token and its cache, made once; point(context) times one decode step."""

    def __init__(self, cfg: AttentionConfig, spec: LayerSpec, device: torch.device, seed: int = 0,
                 budget_s: float = 0.1) -> None:
        from core.device import TORCH_DTYPES
        from core.kinds.standard.layer import AttentionLayer

        if spec.kind != "standard":
            raise ValueError(f"the decode curve runs standard layers, not {kind_of(spec).title}; its decode is timed "
                             "in the Heatmaps tab's timing panel.")
        self.spec, self.device, self.budget_s = spec, device, budget_s
        self.dtype = TORCH_DTYPES[cfg.dtype]
        self.layer = AttentionLayer(cfg, device=device, dtype=self.dtype, seed=seed, spec=spec).eval()
        self.gen = torch.Generator(device=device).manual_seed(seed + 1)
        self.x_new = torch.randn(1, 1, cfg.d_model, generator=self.gen, device=device, dtype=self.dtype)  # (1, 1, d)
        self.bytes_per_token = layer_kv_bytes_per_token(spec, cfg.dtype)

    def point(self, context: int, should_stop: Callable[[], bool] | None = None) -> CurvePoint:
        spec = self.spec
        n = cached_tokens(context, spec.window)
        shape = (1, spec.n_kv_heads, n, spec.head_dim)  # (B, K, n, h): the cache the step reads whole
        k_cache = torch.randn(shape, generator=self.gen, device=self.device, dtype=self.dtype)
        v_cache = torch.randn(shape, generator=self.gen, device=self.device, dtype=self.dtype)
        before = torch.get_num_threads()
        if self.device.type == "cpu":  # as a live timing does: a thread waiting for a busy core would multiply it
            torch.set_num_threads(timing_threads(before)[0])
        try:
            with torch.inference_mode():
                stats = measure(lambda: self.layer.decode_step(self.x_new, k_cache, v_cache), self.device,
                                budget_s=self.budget_s, warmup=5, should_stop=should_stop)
        finally:
            torch.set_num_threads(before)
        return CurvePoint(n, context, stats.median_ms, stats.p25_ms, stats.p75_ms, self.bytes_per_token * n)


def decode_curve(cfg: AttentionConfig, spec: LayerSpec, lengths: list[int], device: torch.device,
                 budget_s: float = 0.1, seed: int = 0, should_stop: Callable[[], bool] | None = None,
                 on_point: Callable[[CurvePoint], None] | None = None) -> DecodeCurve:
    """One decode step of the layer timed at each context length (each cache allocated before its timed region)."""
    run = CurveRun(cfg, spec, device, seed, budget_s)
    curve = DecodeCurve(device=device.type, threads=torch.get_num_threads())
    for context in lengths:
        if should_stop is not None and should_stop():
            raise Stopped
        point = run.point(context, should_stop)
        curve.points.append(point)
        if on_point is not None:
            on_point(point)
    curve.fit()
    return curve
