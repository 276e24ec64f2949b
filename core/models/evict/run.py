"""The compress protocol one step at a time, so a worker serves other requests between points: step 0 prefills the
context once and measures the continuation against the whole cache; step n measures the n-th point, an eviction
press at one ratio or budget (scored on that one prefill), or a layer method at one setting.

Eviction follows kvpress: each KV head of each layer keeps the n_kept tokens its press scores highest
(core/models/evict/keep.py), every layer the same number; only TOVA and StreamingLLM keep the same tokens in every
head of a layer. The continuation's positions continue from the context's length."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from core.models.evict.budget import MIB, budget_tokens, mib_words, mildest_fitting
from core.models.evict.catalogue import PRESS_INFO, RATIOS
from core.models.evict.continuation import Layers, continuation_loss
from core.models.evict.keep import gather_tokens, kept_indices, n_kept
from core.models.evict.points import CompressPoint, CompressResult, pack_kept
from core.models.evict.prefill import Prefill
from core.models.evict.presses.registry import PRESSES, press_named
from core.models.evict.protocol import CONTEXT, CONTINUATION, compress_text
from core.models.frontier.run import fit_bases, samples_of, shape_of
from core.models.inspect import token_labels
from core.models.kv.apply import KVChange, rope_of
from core.models.kv.methods import (
    FAMILIES,
    METHOD_NAMES,
    KVMethod,
    default_sweep,
    kv_bytes_per_token,
    setting_label,
)
from core.models.source import LoadedModel
from core.timing.timer import Cancelled

Progress = Callable[[str, float], None]


@dataclass(frozen=True)
class Eviction:
    press: str
    kept: int
    ratio: float  # the ratio asked for, or the one a budget makes


def parse_ratios(text: str) -> tuple[float, ...]:
    """'0.25,0.5' -> (0.25, 0.5); a ValueError that names the range otherwise."""
    try:
        ratios = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        ratios = ()
    if not ratios or not all(0 < r < 1 for r in ratios):
        raise ValueError(f"--ratios takes fractions of the context to evict, each above 0 and below 1 (0.5 evicts "
                         f"half), comma-separated; not {text[:40]!r}.")
    return tuple(sorted(set(ratios)))


def parse_methods(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """'snapkv,tova,window' -> (presses, layer families), each in the registry's order."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in PRESSES and n not in FAMILIES]
    if bad or not names:
        raise ValueError(f"--methods takes a comma-separated list of {', '.join(PRESSES)} (eviction) and "
                         f"{', '.join(FAMILIES)} (layer methods), not {text[:60]!r}.")
    return tuple(p for p in PRESSES if p in names), tuple(f for f in FAMILIES if f in names)


class CompressRun:
    def __init__(self, m: LoadedModel, text: str, presses: tuple[str, ...] = tuple(PRESSES),
                 ratios: tuple[float, ...] | None = RATIOS, budget_mib: float | None = None,
                 families: tuple[str, ...] = (), calib_text: str = "", context: int = CONTEXT,
                 continuation: int = CONTINUATION) -> None:
        if m.kind != "causal":
            raise ValueError(f"{m.name} is an encoder: it keeps no KV cache to evict from; open a causal model.")
        if budget_mib is None and not ratios:
            raise ValueError("give ratios to evict, or a byte budget.")
        self.m, self.calib_text = m, calib_text
        self.text = compress_text(m, text, context, continuation)
        self.shape = shape_of(m)
        C = self.text.length
        self.per_token = kv_bytes_per_token(self.shape, None, C)
        self.notes: list[str] = []
        self.specs: list[Eviction | KVMethod] = []
        for name in presses:
            press_named(name)
        layer_methods = default_sweep(self.shape, C, families) if families else []
        if budget_mib is not None:
            kept = budget_tokens(budget_mib, self.per_token, C, m.name)
            for name in presses:
                guarded = PRESSES[name].protected(C)
                if kept < guarded:
                    self.notes.append(f"{PRESS_INFO[name].label} always keeps {guarded} tokens, more than {budget_mib:g} "
                                      f"MiB holds ({kept}); give at least {mib_words(guarded * self.per_token)} for it.")
                    continue
                self.specs.append(Eviction(name, kept, 1 - kept / C))
            for method in (x for family in families for x in FAMILIES[family]):  # each line of the chart
                fits = mildest_fitting([x for x in layer_methods if x.method == method], self.shape, C,
                                       budget_mib * MIB)
                if fits is None:
                    self.notes.append(f"No setting of {METHOD_NAMES[method]} fits in {budget_mib:g} MiB.")
                else:
                    self.specs.append(fits)
            if not self.specs:
                raise ValueError(f"No method fits {m.name}'s cache in {budget_mib:g} MiB: " + " ".join(self.notes))
        else:
            self.specs = [Eviction(name, n_kept(C, r), r) for name in presses for r in ratios or ()]
            self.specs += layer_methods
        self.budget_mib = budget_mib
        self.prefill: Prefill | None = None
        self.bases: tuple[dict, dict] | None = None
        self.result: CompressResult | None = None
        self.started = time.perf_counter()

    @property
    def steps(self) -> int:
        return 1 + len(self.specs)

    def describe(self, index: int) -> str:
        if index == 0:
            return f"the prefill of {self.text.length:,} tokens and the unchanged cache"
        spec = self.specs[index - 1]
        if isinstance(spec, Eviction):
            return f"{PRESS_INFO[spec.press].label}, {spec.kept:,} kept"
        return spec.label

    @property
    def tokens_a_step(self) -> int:
        """Tokens a step runs through the model, on average: the prefill's context, then a continuation a point."""
        n = int(self.text.continuation.shape[1])
        return (self.text.length + n * self.steps) // self.steps

    def fit_to_come(self, done: int) -> bool:
        """Whether the latent bases are still to be fitted after `done` steps (a fit takes about a step)."""
        return self.bases is None and any(isinstance(s, KVMethod) and s.method.startswith("latent")
                                          for s in self.specs[done - 1:])

    def step(self, index: int) -> CompressPoint:
        t0 = time.perf_counter()
        C = self.text.length
        if index == 0:
            self.prefill = Prefill(self.m, self.text.context)
            whole = [(v.key, v.value) for v in self.prefill.views]
            loss = continuation_loss(self.m, whole, self.text.continuation, C)
            base = CompressPoint("baseline", "baseline", None, 0, f"{self.m.name}, nothing evicted", C,
                                 self.per_token * C, 1.0, loss, 0.0, time.perf_counter() - t0)
            self.result = CompressResult(self.m.name, C, int(self.text.continuation.shape[1]), self.m.n_layers,
                                         self.m.n_kv_heads, self.per_token, base,
                                         tokens=token_labels(self.m, self.text.context[0].tolist()),
                                         budget_mib=self.budget_mib, complete=False)
            self._seconds()
            return base
        assert self.result is not None and self.prefill is not None, "step 0 first"
        spec = self.specs[index - 1]
        point = self._evict(spec) if isinstance(spec, Eviction) else self._layer(spec)
        point.seconds = time.perf_counter() - t0
        self.result.points.append(point)
        self.result.complete = index == self.steps - 1
        self._seconds()
        return point

    def _evict(self, spec: Eviction) -> CompressPoint:
        assert self.prefill is not None and self.result is not None
        press, info, C = PRESSES[spec.press], PRESS_INFO[spec.press], self.text.length
        layers: Layers = []
        kept = np.zeros((self.m.n_layers, self.m.n_kv_heads, C), dtype=bool)
        for i, view in enumerate(self.prefill.views):
            idx = kept_indices(self.prefill.scores(press, i, spec.kept), spec.kept)  # (1, K, n)
            kept[i][np.arange(view.n_kv_heads)[:, None], idx[0].numpy()] = True
            layers.append((gather_tokens(view.key, idx), gather_tokens(view.value, idx)))
        loss = continuation_loss(self.m, layers, self.text.continuation, C)
        base = self.result.baseline.loss
        return CompressPoint(spec.press, "evict", round(spec.ratio, 6), 0,
                             f"{info.label}, ratio {spec.ratio:.3g} ({spec.kept:,} of {C:,} kept)", spec.kept,
                             spec.kept * self.per_token, spec.kept / C, loss, loss - base, kept_bits=pack_kept(kept))

    def _layer(self, method: KVMethod) -> CompressPoint:
        assert self.prefill is not None and self.result is not None
        C, N = self.text.length, int(self.text.continuation.shape[1])
        bases = None
        if method.method.startswith("latent"):
            if self.bases is None:
                self.bases = fit_bases(self.m, samples_of(self.m, self.calib_text, None, C))
            bases = self.bases[0] if method.method == "latent_pca" else self.bases[1]
        change = KVChange(method, True, bases, rope_of(self.m, torch.zeros(1, C + N, dtype=torch.long)))
        whole = [(v.key, v.value) for v in self.prefill.views]
        loss = continuation_loss(self.m, whole, self.text.continuation, C, change)
        kv = kv_bytes_per_token(self.shape, method, C) * C
        kept = min(C, int(method.setting) + method.sinks) if method.method.startswith("window") else C
        return CompressPoint(method.method, "layer", method.setting, method.sinks, method.label, kept, kv,
                             kv / (self.per_token * C), loss, loss - self.result.baseline.loss)

    def _seconds(self) -> None:
        if self.result is not None:
            self.result.seconds = time.perf_counter() - self.started


def run_compress(m: LoadedModel, text: str, presses: tuple[str, ...] = tuple(PRESSES),
                 ratios: tuple[float, ...] | None = RATIOS, budget_mib: float | None = None,
                 families: tuple[str, ...] = (), calib_text: str = "", progress: Progress | None = None,
                 should_stop: Callable[[], bool] | None = None, context: int = CONTEXT) -> CompressResult:
    """Every point, one after another (the CLI and the benchmark; the app's worker steps a CompressRun itself)."""
    say = progress or (lambda _t, _f: None)
    stop = should_stop or (lambda: False)
    run = CompressRun(m, text, presses, ratios, budget_mib, families, calib_text, context)
    for i in range(run.steps):
        if stop():
            raise Cancelled()
        say(run.describe(i), i / run.steps)
        run.step(i)
    say("done", 1.0)
    assert run.result is not None
    return run.result


__all__ = ["RATIOS", "CompressRun", "Eviction", "parse_methods", "parse_ratios", "run_compress", "setting_label"]
