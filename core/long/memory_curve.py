"""Memory against context for one sequence: the KV that grows with T, the fixed state of a hybrid stack's recurrent
layers, windows that cap, and a pure-attention baseline beside them; where the state stops dominating, for the bytes
kept and for the bytes one decode step reads. Torch-free: the Memory tab draws what this computes.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.arch.config import AttentionConfig
from core.counts import kind_counts, model_counts
from core.format import format_bytes, format_tokens

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

    @property
    def total(self) -> tuple[int, ...]:
        return tuple(k + self.state for k in self.kv)


def split_at(cfg: AttentionConfig, T: int) -> tuple[int, int]:
    """(KV bytes, state bytes) of one sequence of T tokens under cfg's formats."""
    one = cfg.with_(seq_len=T, batch_size=1)
    arch = one.architecture()
    state = sum(k.state_bytes for k in kind_counts(arch, one))
    return model_counts(arch, one).kv_bytes_total - state, state


def first_t(cfg: AttentionConfig, above: int) -> int | None:
    """The least T whose KV exceeds above bytes (the KV only grows with T), or None below MAX_T."""
    if split_at(cfg, MAX_T)[0] <= above:
        return None
    lo, hi = 1, MAX_T
    while lo < hi:
        mid = (lo + hi) // 2
        if split_at(cfg, mid)[0] > above:
            hi = mid
        else:
            lo = mid + 1
    return lo


def memory_curve(cfg: AttentionConfig, baseline: AttentionConfig, baseline_name: str, at: int = 32768,
                 name: str = "this stack") -> MemoryCurve:
    """cfg's per-sequence cache against T beside baseline's, and the sentence that reads it at T = at."""
    kv = tuple(split_at(cfg, T)[0] for T in CONTEXTS)
    state = split_at(cfg, CONTEXTS[0])[1]
    base = tuple(sum(split_at(baseline, T)) for T in CONTEXTS)
    mem = first_t(cfg, state) if state else None
    read = first_t(cfg, 2 * state) if state else None
    kv_at, _ = split_at(cfg, at)
    base_at = sum(split_at(baseline, at))
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
    return MemoryCurve(CONTEXTS, kv, state, base, mem, read, text)
