"""Memory against context for one sequence: the KV that grows with T, the fixed state of a hybrid stack's recurrent
layers, windows that cap, and a pure-attention baseline beside them; where the state stops dominating, for the bytes
kept and for the bytes one decode step reads. Torch-free: the Memory tab draws what this computes.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.format import format_bytes, format_tokens
from core.kinds.registry import kind_of

CONTEXTS = tuple(2**k for k in range(8, 21))  # 256 .. 1,048,576 tokens: the chart's points (log axes)
MAX_T = 2**30


@dataclass(frozen=True)
class MemoryCurve:
    contexts: tuple[int, ...]
    kv: tuple[int, ...]  # the attention layers' K and V a sequence at each T
    state: int  # the recurrent layers' fixed state a sequence (0: no recurrent layer)
    baseline: tuple[int, ...]  # the baseline model's cache a sequence at each T
    crossover_memory: int | None  # the T from which the KV outweighs the state (None: no state, or never)
    crossover_read: int | None  # the same for the bytes a decode step reads (the state read and written: 2x)
    sentence: str
    reads: tuple[int, ...] = ()  # the bytes one decode step reads at each T: the cache it attends to, the state twice
    baseline_reads: tuple[int, ...] = ()
    flops: dict[str, tuple[int, ...]] | None = None  # one decode step's attention-core FLOPs at each T, by part
    baseline_flops: tuple[int, ...] = ()
    indexer_passes: int | None = None  # the T from which the indexers' FLOPs pass the attention's (None: never)

    @property
    def total(self) -> tuple[int, ...]:
        return tuple(k + self.state for k in self.kv)


class Split:
    """One sequence's cache of a model at any T: its distinct layers counted once (a 4,096-layer stack has a few)."""

    def __init__(self, cfg: AttentionConfig) -> None:
        arch = cfg.architecture()
        self.kv_layers: list[tuple[LayerSpec, int, int]] = []  # (spec, layers, bytes a token a layer)
        self.kv_format, self.d_model = cfg.kv_format, cfg.d_model
        self.state = 0
        if arch.kind == "encoder":
            return
        for spec, n in arch.groups():
            kind = kind_of(spec)
            if kind.has_state:
                self.state += n * kind.state_bytes(spec, cfg.state_format, cfg.dtype)
            else:
                self.kv_layers.append((spec, n, kind.cache_bytes_per_token(spec, cfg.kv_format)))

    def kv(self, T: int) -> int:
        """The attention layers' K and V at T tokens (a window caps a local layer's)."""
        return sum(n * kind_of(spec).cache_bytes_at(spec, self.kv_format, T) for spec, n, _ in self.kv_layers)

    def flops(self, T: int) -> dict[str, int]:
        """One decode step's attention-core FLOPs at T over every attention layer, by part."""
        out: dict[str, int] = {}
        for spec, n, _ in self.kv_layers:
            for part, f in kind_of(spec).decode_flops_parts(self.d_model, spec, T).items():
                out[part] = out.get(part, 0) + n * f
        return out

    def indexer_passes(self) -> int | None:
        """The least T at which the indexers' FLOPs pass the attention's (both grow with T), None below MAX_T."""
        def ahead(T: int) -> bool:
            f = self.flops(T)
            return f.get("indexer", 0) > f.get("attention", 0)

        if not ahead(MAX_T):
            return None
        lo, hi = 1, MAX_T
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if ahead(mid) else (mid + 1, hi)
        return lo

    def read(self, T: int) -> int:
        """The bytes one decode step reads at T: what each attention layer attends to (a sparse layer's selection, a
        window's tokens) and the recurrent state, read and written."""
        return sum(n * kind_of(spec).decode_read_bytes(spec, self.kv_format, T) for spec, n, _ in self.kv_layers) + (
            2 * self.state)

    def first_t(self, above: int) -> int | None:
        """The least T whose KV exceeds above bytes (the KV only grows with T), or None below MAX_T."""
        if self.kv(MAX_T) <= above:
            return None
        lo, hi = 1, MAX_T
        while lo < hi:
            mid = (lo + hi) // 2
            if self.kv(mid) > above:
                hi = mid
            else:
                lo = mid + 1
        return lo


def split_at(cfg: AttentionConfig, T: int) -> tuple[int, int]:
    """(KV bytes, state bytes) of one sequence of T tokens under cfg's formats."""
    s = Split(cfg)
    return s.kv(T), s.state


def memory_curve(cfg: AttentionConfig, baseline: AttentionConfig, baseline_name: str, at: int = 32768,
                 name: str = "this stack") -> MemoryCurve:
    """cfg's per-sequence cache against T beside baseline's, and the sentence that reads it at T = at."""
    own, other = Split(cfg), Split(baseline)
    kv = tuple(own.kv(T) for T in CONTEXTS)
    state = own.state
    base = tuple(other.kv(T) + other.state for T in CONTEXTS)
    mem = own.first_t(state) if state else None
    read = own.first_t(2 * state) if state else None
    kv_at = own.kv(at)
    base_at = other.kv(at) + other.state
    total = kv_at + state
    share = f"{total / base_at:.0%}" if base_at else "-"
    text = (f"At {format_tokens(at)} tokens {name} caches {format_bytes(total)} a sequence "
            f"({format_bytes(kv_at)} KV + {format_bytes(state)} state), {share} of {baseline_name}'s "
            f"{format_bytes(base_at)}.")
    if state and mem is not None:
        text += (f" Its state dominates the memory below T = {format_tokens(mem)}, and the bytes a decode step reads "
                 f"(the state read and written) below T = {format_tokens(read) if read else 'any length'}.")
    elif state:
        text += " Its state dominates at every length: no attention layer's KV outgrows it."
    else:
        text += " It keeps no recurrent state: every byte is KV."
    read_at = own.read(at)
    if read_at < own.kv(at):  # a sparse or windowed model reads less than it keeps
        text += (f" A decode step at {format_tokens(at)} reads {format_bytes(read_at)} of it "
                 f"({read_at / max(1, own.kv(at)):.0%}), against {format_bytes(other.read(at))} for {baseline_name}.")
    reads = tuple(own.read(T) for T in CONTEXTS)
    per_t = [own.flops(T) for T in CONTEXTS]
    flops = {part: tuple(f.get(part, 0) for f in per_t) for part in dict.fromkeys(k for f in per_t for k in f)}
    passes = own.indexer_passes() if "indexer" in flops else None
    if passes is not None:
        text += (f" Its indexers' FLOPs pass the attention they select for at T = {format_tokens(passes)} (one "
                 "decode step).")
    return MemoryCurve(CONTEXTS, kv, state, base, mem, read, text, reads, tuple(other.read(T) for T in CONTEXTS),
                       flops, tuple(sum(other.flops(T).values()) for T in CONTEXTS), passes)
