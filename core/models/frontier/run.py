"""What each way of shrinking the KV cache costs a real model: every method's points run on an evaluation
text, with the unchanged model's run as the reference.

One run of the model per point and sample, through transformers' attention interface: each layer's
keys, values and mask are changed as the method says (core/models/kv/methods.py), then attended with
torch's SDPA. The cost of a point: next-token loss (causal) or the mean-pooled embedding's cosine
(encoder) against the unchanged run, the mean Jensen-Shannon divergence of attention rows (64 query rows
a layer, evenly spaced: the full maps of 30 layers at 1,024 tokens would be 1 GB), and the mean relative
error of the layers' attention outputs against the unchanged run's.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from core.models.inspect import INTERFACE_NAME, _active, attention_modules
from core.models.kv.apply import KVChange, attend, probabilities, rope_of
from core.models.kv.latent import LatentBasis, kv_rows, pca_basis, svd_basis, undo_rope
from core.models.kv.methods import (
    KVMethod,
    ModelShape,
    default_sweep,
    kv_bytes_per_token,
    setting_label,
)
from core.models.source import LoadedModel
from core.timing.timer import Cancelled

JS_ROWS = 64
CAUSAL_CONTEXT = 1024  # tokens per evaluation sample of a causal model
Progress = Callable[[str, float], None]


@dataclass
class FrontierPoint:
    method: str  # "baseline" for the unchanged model
    setting: int | str | None
    sinks: int
    label: str
    kv_bytes_per_token: float
    kv_fraction: float  # of the unchanged model's
    loss: float | None = None
    loss_change: float | None = None
    js_mean: float | None = None
    output_rel_error: float | None = None
    embedding_cosine: float | None = None
    seconds: float = 0.0

    @property
    def perplexity(self) -> float | None:
        if self.loss is None or not math.isfinite(self.loss) or self.loss > 700:  # exp would overflow a float
            return None
        return math.exp(self.loss)

    def cost(self) -> float | None:
        """What the chart's y axis shows: loss change (causal) or 1 - cosine (encoder)."""
        if self.loss_change is not None:
            return self.loss_change
        return None if self.embedding_cosine is None else 1.0 - self.embedding_cosine

    def to_json(self) -> dict[str, Any]:
        """Plain numbers; a figure that is not finite (a format that overflowed) becomes None."""
        out = asdict(self)
        out.update(perplexity=self.perplexity, cost=self.cost(), setting_label=setting_label(self.method, self.setting))
        return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in out.items()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FrontierPoint:
        return cls(**{f: data[f] for f in cls.__dataclass_fields__})


@dataclass
class FrontierResult:
    model: str
    kind: str
    context: int  # tokens per sample
    samples: int
    eval_tokens: int
    calib_tokens: int
    baseline: FrontierPoint
    points: list[FrontierPoint] = field(default_factory=list)
    seconds: float = 0.0
    complete: bool = True  # False: cancelled part way

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "kind": self.kind, "context": self.context, "samples": self.samples,
                "eval_tokens": self.eval_tokens, "calib_tokens": self.calib_tokens, "seconds": self.seconds,
                "complete": self.complete, "baseline": self.baseline.to_json(),
                "points": [p.to_json() for p in self.points]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FrontierResult:
        fields_ = {f: data[f] for f in cls.__dataclass_fields__ if f not in ("baseline", "points")}
        return cls(baseline=FrontierPoint.from_json(data["baseline"]),
                   points=[FrontierPoint.from_json(p) for p in data["points"]], **fields_)


def shape_of(m: LoadedModel) -> ModelShape:
    return ModelShape(m.n_layers, m.n_heads, m.n_kv_heads, m.head_dim, m.d_model)


def samples_of(m: LoadedModel, text: str, n_samples: int | None, context: int | None = None) -> list[torch.Tensor]:
    """The text's token ids cut into samples of `context` tokens (an encoder's wrapped in [CLS] ... [SEP])."""
    limit = min(m.max_tokens, 512 if m.kind == "encoder" else CAUSAL_CONTEXT)
    if limit < 8 + (2 if m.kind == "encoder" else 0):
        raise ValueError(f"{m.name} reads at most {m.max_tokens} tokens; the frontier needs samples of at least 8.")
    context = min(context or limit, limit)
    body = context - 2 if m.kind == "encoder" else context
    cut = text
    if n_samples is not None:  # a huge file: only what the samples can use is tokenised (most tokens are < 64 chars)
        cut = text[: (n_samples + 1) * body * 64]
    ids = m.tokenizer(cut, add_special_tokens=False)["input_ids"]
    if n_samples is not None and len(ids) < n_samples * body and len(cut) < len(text):
        ids = m.tokenizer(text, add_special_tokens=False)["input_ids"]  # long runs of spaces: all of it after all
    chunks = [ids[i: i + body] for i in range(0, len(ids) - body + 1, body)] or [ids[:body]]
    if n_samples is not None:
        chunks = chunks[:n_samples]
    if not chunks or len(chunks[0]) < 8:
        raise ValueError(f"the text makes {len(ids)} token{'' if len(ids) == 1 else 's'} for {m.name}; give it at "
                         "least a few hundred words "
                         "(it needs 8 tokens at the very least).")
    if m.kind == "encoder":
        cls, sep = m.tokenizer.cls_token_id, m.tokenizer.sep_token_id
        chunks = [[cls, *c, sep] for c in chunks]
    return [torch.tensor([c]) for c in chunks]


class _Attend:
    """The attention function of every layer while a run is active: the method applied, SDPA, and the
    sampled rows' probabilities kept (reference run) or compared (changed run)."""

    def __init__(self, m: LoadedModel, method: KVMethod | None, bases: dict[int, LatentBasis] | None = None,
                 reference: dict[int, torch.Tensor] | None = None, capture_rows: bool = False) -> None:
        self.m, self.method, self.bases = m, method, bases or {}
        mods = attention_modules(m)
        self.index = {id(mod.self if m.kind == "encoder" else mod): i for i, mod in enumerate(mods)}
        self.reference = reference  # layer -> (B, H, rows, S) probabilities of the unchanged run
        self.rows_kept: dict[int, torch.Tensor] = {}
        self.js: list[float] = []
        self.capture_rows = capture_rows
        self.kv: dict[int, torch.Tensor] = {}  # layer -> (T, D) keys (before RoPE) and values, for PCA
        self.rope: tuple[torch.Tensor, torch.Tensor] | None = None

    def __call__(self, module: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                 attention_mask: torch.Tensor | None, scaling: float | None = None, dropout: float = 0.0,
                 **kwargs: Any) -> tuple[torch.Tensor, None]:
        i = self.index[id(module)]
        scaling = scaling if scaling is not None else query.shape[-1] ** -0.5
        if self.capture_rows:
            pre = undo_rope(key, *self.rope) if self.rope is not None else key
            self.kv[i] = kv_rows(pre, value)[0].double()  # (T, D)
        key, value, mask = self._change(i, key, value, attention_mask)
        out = attend(query, key, value, mask, scaling)  # (B, T, H, h)
        self._rows(i, query, key, mask, scaling)
        return out, None

    def _change(self, i: int, key: torch.Tensor, value: torch.Tensor,
                mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        if self.method is None:
            return key, value, mask
        change = KVChange(self.method, self.m.kind == "causal", self.bases or None, self.rope)
        return change.apply(i, key, value, mask)

    def _rows(self, i: int, query: torch.Tensor, key: torch.Tensor, mask: torch.Tensor | None, scaling: float) -> None:
        T = query.shape[2]
        picked = torch.linspace(0, T - 1, min(JS_ROWS, T)).round().long()
        probs = probabilities(query[:, :, picked], key, None if mask is None else mask[:, :, picked], scaling)
        if self.reference is None:
            self.rows_kept[i] = probs
        else:
            self.js.append(float(row_js(self.reference[i], probs).mean()))


def row_js(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Jensen-Shannon divergence in bits between rows (..., S) of two distributions, in float32 (surgery's
    js_divergence in float64 was a fifth of a run); exactly 0 for equal rows. Weights below 1e-30 count as
    0: half of the smallest subnormal float rounds to 0, and log(0) would make a row's divergence infinite."""
    p = torch.where(p < 1e-30, 0.0, p)
    q = torch.where(q < 1e-30, 0.0, q)
    m = 0.5 * (p + q)
    kl = torch.xlogy(p, p) - torch.xlogy(p, m) + torch.xlogy(q, q) - torch.xlogy(q, m)
    return (0.5 * kl.sum(-1) / math.log(2)).clamp_min(0.0)


@dataclass
class _Run:
    loss: float | None
    embedding: torch.Tensor | None
    outputs: dict[int, torch.Tensor]
    rows: dict[int, torch.Tensor]
    js: list[float]


def _forward(m: LoadedModel, ids: torch.Tensor, attend: _Attend) -> _Run:
    attend.rope = rope_of(m, ids)
    with torch.inference_mode(), _active(m, attend, every_layer=True) as outputs:
        if m.kind == "causal":
            out = m.model(input_ids=ids, labels=ids)
            loss, embedding = float(out.loss), None
        else:
            out = m.model(input_ids=ids, attention_mask=torch.ones_like(ids), token_type_ids=torch.zeros_like(ids))
            loss, embedding = None, out.last_hidden_state[0].mean(0)
        kept = dict(outputs)
    return _Run(loss, embedding, kept, attend.rows_kept, attend.js)


def fit_bases(m: LoadedModel, calib: list[torch.Tensor]) -> tuple[dict[int, LatentBasis], dict[int, LatentBasis]]:
    """Per layer: PCA of the calibration text's keys (before RoPE) and values, and SVD of [W_k; W_v]."""
    rows: dict[int, list[torch.Tensor]] = {}
    for ids in calib:
        attend = _Attend(m, None, capture_rows=True)
        _forward(m, ids, attend)
        for i, x in attend.kv.items():
            rows.setdefault(i, []).append(x)
    pca = {i: pca_basis(torch.cat(xs)) for i, xs in rows.items()}
    svd = {}
    for i, mod in enumerate(attention_modules(m)):
        k, v = (mod.k_proj, mod.v_proj) if m.kind == "causal" else (mod.self.key, mod.self.value)
        weight = torch.cat([k.weight, v.weight]).detach()
        bias = torch.cat([k.bias, v.bias]).detach() if k.bias is not None and v.bias is not None else None
        svd[i] = svd_basis(weight, bias)
    return pca, svd


def calibration_bases(m: LoadedModel, calib_text: str,
                      context: int | None = None) -> tuple[dict[int, LatentBasis], dict[int, LatentBasis]]:
    """fit_bases on all of the calibration text, in samples of `context` tokens (the frontier's own)."""
    return fit_bases(m, samples_of(m, calib_text, None, context))


class FrontierRun:
    """A frontier one step at a time, so a worker serves other requests between its points: step 0 runs the
    unchanged model, step n the n-th point (the latent bases fitted before the first latent point)."""

    def __init__(self, m: LoadedModel, eval_text: str, calib_text: str, methods: list[KVMethod] | None = None,
                 n_samples: int | None = 2, context: int | None = None) -> None:
        self.m, self.calib_text = m, calib_text
        self.samples = samples_of(m, eval_text, n_samples, context)
        self.context = int(self.samples[0].shape[1])
        self.shape = shape_of(m)
        self.methods = default_sweep(self.shape, self.context) if methods is None else methods
        self.native = kv_bytes_per_token(self.shape, None, self.context)
        self.refs: list[_Run] = []
        self.bases: tuple[dict[int, LatentBasis], dict[int, LatentBasis]] | None = None
        self.result: FrontierResult | None = None
        self.started = time.perf_counter()

    @property
    def steps(self) -> int:
        return 1 + len(self.methods)

    def describe(self, index: int) -> str:
        return "the unchanged model" if index == 0 else self.methods[index - 1].label

    @property
    def tokens_a_step(self) -> int:
        """Tokens one step runs through the model (every sample)."""
        return sum(int(ids.numel()) for ids in self.samples)

    def fit_to_come(self, done: int) -> bool:
        """Whether the latent bases are still to be fitted after `done` steps (a fit takes about a step)."""
        return self.bases is None and any(m.method.startswith("latent") for m in self.methods[done - 1:])

    def step(self, index: int) -> FrontierPoint:
        m = self.m
        previous = m.model.config._attn_implementation
        try:
            if index == 0:
                t0 = time.perf_counter()
                self.refs = [_forward(m, ids, _Attend(m, None)) for ids in self.samples]
                base = FrontierPoint("baseline", None, 0, f"{m.name} unchanged", self.native, 1.0,
                                     loss=_mean([r.loss for r in self.refs]),
                                     loss_change=0.0 if m.kind == "causal" else None, js_mean=0.0,
                                     output_rel_error=0.0, embedding_cosine=1.0 if m.kind == "encoder" else None,
                                     seconds=time.perf_counter() - t0)
                self.result = FrontierResult(m.name, m.kind, self.context, len(self.samples),
                                             self.context * len(self.samples), 0, base, complete=False)
                return base
            assert self.result is not None, "step 0 first"
            method = self.methods[index - 1]
            basis = None
            if method.method.startswith("latent"):
                if self.bases is None:
                    calib = samples_of(m, self.calib_text, None, self.context)  # all of it, in samples
                    self.result.calib_tokens = sum(int(c.shape[1]) for c in calib)
                    self.bases = fit_bases(m, calib)
                basis = self.bases[0] if method.method == "latent_pca" else self.bases[1]
            point = _point(m, self.shape, method, self.samples, self.refs, basis, self.native, self.context)
            self.result.points.append(point)
            if index == self.steps - 1:
                self.result.complete = True
            return point
        finally:
            m.model.set_attn_implementation(previous)
            self.result_seconds()

    def result_seconds(self) -> None:
        if self.result is not None:
            self.result.seconds = time.perf_counter() - self.started


def run_frontier(m: LoadedModel, eval_text: str, calib_text: str, methods: list[KVMethod] | None = None,
                 n_samples: int | None = 2, context: int | None = None, progress: Progress | None = None,
                 should_stop: Callable[[], bool] | None = None) -> FrontierResult:
    """Every point of `methods` (default_sweep when None) on the evaluation text's samples."""
    say = progress or (lambda _t, _f: None)
    stop = should_stop or (lambda: False)
    run = FrontierRun(m, eval_text, calib_text, methods, n_samples, context)
    for index in range(run.steps):
        if stop():
            raise Cancelled
        say(f"{run.describe(index)} ({index + 1} of {run.steps})…", index / run.steps)
        run.step(index)
    say("done", 1.0)
    assert run.result is not None
    return run.result


def _point(m: LoadedModel, shape: ModelShape, method: KVMethod, samples: list[torch.Tensor], refs: list[_Run],
           basis: dict[int, LatentBasis] | None, native: float, T: int) -> FrontierPoint:
    t0 = time.perf_counter()
    losses, js, errors, cosines = [], [], [], []
    for ids, ref in zip(samples, refs, strict=True):
        run = _forward(m, ids, _Attend(m, method, basis, reference=ref.rows))
        losses.append(run.loss)
        js += run.js
        errors += [float((run.outputs[i].double() - o.double()).norm() / o.double().norm()) for i, o in ref.outputs.items()]
        if run.embedding is not None and ref.embedding is not None:
            cosines.append(float(torch.nn.functional.cosine_similarity(run.embedding, ref.embedding, dim=0)))
    loss = _mean(losses)
    base_loss = _mean([r.loss for r in refs])
    kv = kv_bytes_per_token(shape, method, T)
    return FrontierPoint(method.method, method.setting, method.sinks, method.label, kv, kv / native, loss=loss,
                         loss_change=None if loss is None or base_loss is None else loss - base_loss,
                         js_mean=_mean(js), output_rel_error=_mean(errors), embedding_cosine=_mean(cosines),
                         seconds=time.perf_counter() - t0)


def _mean(xs: list[float | None]) -> float | None:
    vals = [x for x in xs if x is not None]
    return sum(vals) / len(vals) if vals else None


__all__ = ["INTERFACE_NAME", "FrontierPoint", "FrontierResult", "FrontierRun", "calibration_bases", "fit_bases",
           "run_frontier", "samples_of"]
