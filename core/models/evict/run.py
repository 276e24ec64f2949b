"""The compress protocol one step at a time, so a worker serves other requests between points: step 0 prefills the
context once and measures the continuation against the whole cache; step n measures the n-th point, an eviction
press at one ratio or budget (scored on that one prefill), or a layer method at one setting.

Eviction follows kvpress: each KV head of each layer keeps the n_kept tokens its press scores highest
(core/models/evict/keep.py), every layer the same number; only TOVA and StreamingLLM keep the same tokens in every
head of a layer. The continuation's positions continue from the context's length."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from core.models.evict.budget import MIB, budget_tokens, mib_up, mildest_fitting
from core.models.evict.catalogue import PRESS_INFO, RATIOS
from core.models.evict.continuation import Layers, continuation_loss
from core.models.evict.keep import gather_tokens, kept_indices, n_kept
from core.models.evict.points import CompressPoint, CompressResult, pack_kept, unpack_kept
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
)
from core.models.source import LoadedModel
from core.timing.timer import Cancelled

Progress = Callable[[str, float], None]
MAX_RATIOS = 32  # a chart's worth: six presses at 32 ratios are 192 points


@dataclass(frozen=True)
class Eviction:
    press: str
    kept: int
    ratio: float  # the ratio asked for, or the one a budget makes


def _finite(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def parse_ratios(text: str) -> tuple[float, ...]:
    """'0.25,0.5' -> (0.25, 0.5); a ValueError that names the range otherwise."""
    try:
        ratios = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        ratios = ()
    if not ratios or not all(0 < r < 1 for r in ratios):
        raise ValueError(f"--ratios takes fractions of the context to evict, each above 0 and below 1 (0.5 evicts "
                         f"half), comma-separated; not {text[:40]!r}.")
    ratios = tuple(sorted(set(ratios)))
    if len(ratios) > MAX_RATIOS:
        raise ValueError(f"--ratios takes at most {MAX_RATIOS} ratios, not {len(ratios):,}.")
    return ratios


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
        presses = tuple(dict.fromkeys(presses))  # each press once, in the order given
        families = tuple(dict.fromkeys(families))
        if not presses and not families:
            raise ValueError("give at least one method: an eviction press or a layer method.")
        self.m, self.calib_text = m, calib_text
        self.text = compress_text(m, text, context, continuation)
        self.shape = shape_of(m)
        C = self.text.length
        self.per_token = kv_bytes_per_token(self.shape, None, C)
        self.notes: list[str] = []  # methods left out or kept below their own window, said beside the chart
        self.specs: list[Eviction | KVMethod] = []
        for name in presses:
            press_named(name)
        layer_methods = default_sweep(self.shape, C, families) if families else []
        if budget_mib is not None:
            kept = budget_tokens(budget_mib, self.per_token, C, m.name)
            for name in presses:
                guarded = PRESSES[name].protected(C)
                if kept < guarded:
                    self.notes.append(f"{PRESS_INFO[name].short} is left out: it always keeps {guarded} tokens and "
                                      f"{budget_mib:g} MiB holds {kept} (give at least "
                                      f"{mib_up(guarded * self.per_token)} for it)")
                    continue
                self.specs.append(Eviction(name, kept, 1 - kept / C))
            for method in (x for family in families for x in FAMILIES[family]):  # each line of the chart
                fits = mildest_fitting([x for x in layer_methods if x.method == method], self.shape, C,
                                       budget_mib * MIB)
                if fits is None:
                    self.notes.append(f"{METHOD_NAMES[method]} is left out: no setting of it fits in {budget_mib:g} "
                                      "MiB")
                else:
                    self.specs.append(fits)
            if not self.specs:
                raise ValueError(f"No method fits {m.name}'s cache in {budget_mib:g} MiB: " + "; ".join(self.notes)
                                 + ".")
        else:
            for r in ratios or ():
                if n_kept(C, r) >= C:
                    raise ValueError(f"ratio {r:g} evicts no token of a {C:,}-token context; give ratios of at least "
                                     f"{1 / C:.2g}.")
            self.specs = [Eviction(name, n_kept(C, r), r) for name in presses for r in ratios or ()]
            for name in presses:
                guarded = PRESSES[name].protected(C)
                low = [r for r in ratios or () if n_kept(C, r) < guarded]
                if low:  # kvpress keeps part of the protected tokens then, chosen among equal scores
                    self.notes.append(f"{PRESS_INFO[name].short} at ratio {', '.join(f'{r:g}' for r in low)} keeps "
                                      f"fewer tokens than the {guarded} it always keeps; kvpress then keeps some of "
                                      "them, chosen among equal scores")
            self.specs += layer_methods
        self.budget_mib = budget_mib
        self.budget_words = f"{budget_mib:,.2f} MiB a sequence" if budget_mib is not None else ""  # the sentence's
        self.prefill: Prefill | None = None
        self.bases: tuple[dict, dict] | None = None
        self.result: CompressResult | None = None
        self.started = time.perf_counter()

    def fixed(self, spec: Eviction | KVMethod) -> CompressPoint:
        """A point's settings and bytes, which follow from its spec alone (its loss is measured)."""
        C = self.text.length
        if isinstance(spec, Eviction):
            label = f"{PRESS_INFO[spec.press].label}, ratio {spec.ratio:.4g} ({spec.kept:,} of {C:,} kept)"
            return CompressPoint(spec.press, "evict", spec.ratio, 0, label, spec.kept, spec.kept * self.per_token,
                                 spec.kept / C, 0.0, 0.0)
        kv = kv_bytes_per_token(self.shape, spec, C) * C
        kv = round(kv) if abs(kv - round(kv)) < 1e-6 else kv  # whole bytes where the cache holds whole tokens
        kept = min(C, int(spec.setting) + spec.sinks) if spec.method.startswith("window") else C
        return CompressPoint(spec.method, "layer", spec.setting, spec.sinks, spec.label, kept, kv,
                             kv / (self.per_token * C), 0.0, 0.0)

    def matches(self, result: CompressResult) -> bool:
        """Whether a result read from the disk is this run's: every point's settings and bytes as its spec makes
        them, each loss change its loss less the unchanged cache's, the kept tokens a layer and head as many as the
        point says (anything else is computed again)."""
        C, N = self.text.length, int(self.text.continuation.shape[1])
        r = result
        head = (r.model, r.context, r.continuation, r.layers, r.kv_heads, r.bytes_per_token, r.budget_mib)
        if head != (self.m.name, C, N, self.m.n_layers, self.m.n_kv_heads, self.per_token, self.budget_mib):
            return False
        if not _finite(r.seconds) or not _finite(r.baseline.loss) or len(r.points) != len(self.specs):
            return False
        if r.tokens != token_labels(self.m, self.text.context[0].tolist()):
            return False
        for spec, p in zip(self.specs, r.points, strict=True):
            want = self.fixed(spec)
            mine = (p.method, p.family, p.setting, p.sinks, p.label, p.kept_tokens, p.kv_bytes, p.kv_fraction)
            if mine != (want.method, want.family, want.setting, want.sinks, want.label, want.kept_tokens,
                        want.kv_bytes, want.kv_fraction):
                return False
            if not (_finite(p.loss) and _finite(p.seconds) and abs(p.loss_change - (p.loss - r.baseline.loss)) < 1e-9):
                return False
            if p.family == "evict" or p.kept_bits:
                rows = unpack_kept(p.kept_bits, (r.layers, r.kv_heads, C)).sum(-1)  # (layers, K)
                if not (rows == p.kept_tokens).all():
                    return False
        return True

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
                                         budget_mib=self.budget_mib, complete=False, notes=list(self.notes),
                                         budget_words=self.budget_words)
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
        press, C = PRESSES[spec.press], self.text.length
        layers: Layers = []
        kept = np.zeros((self.m.n_layers, self.m.n_kv_heads, C), dtype=bool)
        for i, view in enumerate(self.prefill.views):
            idx = kept_indices(self.prefill.scores(press, i, spec.kept), spec.kept)  # (1, K, n)
            kept[i][np.arange(view.n_kv_heads)[:, None], idx[0].numpy()] = True
            layers.append((gather_tokens(view.key, idx), gather_tokens(view.value, idx)))
        loss = continuation_loss(self.m, layers, self.text.continuation, C)
        point = self.fixed(spec)
        point.loss, point.loss_change, point.kept_bits = loss, loss - self.result.baseline.loss, pack_kept(kept)
        return point

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
        point = self.fixed(method)
        point.loss, point.loss_change = loss, loss - self.result.baseline.loss
        if method.method.startswith("window"):  # the context's tokens a window keeps: its sinks and the last W
            kept = np.zeros((self.m.n_layers, self.m.n_kv_heads, C), dtype=bool)
            kept[:, :, : method.sinks] = True
            kept[:, :, C - int(method.setting):] = True
            point.kept_bits = pack_kept(kept)
        return point

    def _seconds(self) -> None:
        if self.result is not None:
            self.result.seconds = time.perf_counter() - self.started


def run_compress(m: LoadedModel, text: str, presses: tuple[str, ...] = tuple(PRESSES),
                 ratios: tuple[float, ...] | None = RATIOS, budget_mib: float | None = None,
                 families: tuple[str, ...] = (), calib_text: str = "", progress: Progress | None = None,
                 should_stop: Callable[[], bool] | None = None, context: int = CONTEXT,
                 run: CompressRun | None = None) -> CompressResult:
    """Every point, one after another (the CLI and the benchmark; the app's worker steps a CompressRun itself);
    `run`: one made already (its settings then stand for the others)."""
    say = progress or (lambda _t, _f: None)
    stop = should_stop or (lambda: False)
    run = run or CompressRun(m, text, presses, ratios, budget_mib, families, calib_text, context)
    for i in range(run.steps):
        if stop():
            raise Cancelled()
        say(run.describe(i), i / run.steps)
        run.step(i)
    say("done", 1.0)
    assert run.result is not None
    return run.result


__all__ = ["RATIOS", "CompressRun", "Eviction", "parse_methods", "parse_ratios", "run_compress"]
