"""A byte budget instead of a ratio ("compress to a KV size", kvpress #102): how many tokens of the context a
sequence's cache of B MiB holds, and which layer-method setting fits it; one sentence when nothing does."""

from __future__ import annotations

import math

from core.models.kv.methods import KVMethod, ModelShape, kv_bytes_per_token

MIB = 2**20


def mib_words(n_bytes: float) -> str:
    return f"{n_bytes / MIB:,.2f} MiB"


def mib_up(n_bytes: float) -> str:
    """n_bytes in MiB rounded up to the hundredth: a budget of that size holds them."""
    return f"{math.ceil(n_bytes / MIB * 100) / 100:,.2f} MiB"


def budget_tokens(budget_mib: float, bytes_per_token: float, context: int, model: str) -> int:
    """Tokens a layer and head keeps so that the whole model's cache of one sequence fits in budget_mib."""
    if isinstance(budget_mib, bool) or not isinstance(budget_mib, int | float) or not math.isfinite(budget_mib) \
            or budget_mib <= 0:
        raise ValueError(f"a budget is a positive number of MiB, not {budget_mib!r:.30}.")
    budget = budget_mib * MIB
    whole = bytes_per_token * context
    if budget >= whole:
        raise ValueError(f"{model}'s cache of the whole {context:,}-token context is {mib_words(whole)} "
                         f"({bytes_per_token:,.0f} B a token), which already fits in {budget_mib:g} MiB: nothing to "
                         f"evict; give a budget below {mib_words(whole)}.")
    kept = int(budget // bytes_per_token)
    if kept < 1:
        raise ValueError(f"{budget_mib:g} MiB holds no token of {model}'s cache ({bytes_per_token:,.0f} B a token); "
                         f"give at least {mib_up(bytes_per_token)}.")
    return kept


def mildest_fitting(candidates: list[KVMethod], shape: ModelShape, context: int, budget_bytes: float) -> KVMethod | None:
    """Of a layer method's settings, the one whose cache at `context` is largest within the budget (the least
    change that fits), or None."""
    fitting = [(kv_bytes_per_token(shape, c, context) * context, c) for c in candidates]
    fitting = [(b, c) for b, c in fitting if b <= budget_bytes * (1 + 1e-9)]
    return max(fitting, key=lambda bc: bc[0])[1] if fitting else None


def gpu_budget_mib(memory_bytes: int, params: int, sequences: int, reserve: float = 0.10) -> float:
    """One sequence's share of a GPU's cache memory, as the planner counts it (core/plan/fit.py): the card's
    memory less its reserve (10%, vLLM's gpu_memory_utilization of 0.9) and the weights in bf16, over `sequences`."""
    if isinstance(sequences, bool) or not isinstance(sequences, int) or not 1 <= sequences <= 10**7:
        raise ValueError(f"the sequences sharing the GPU are a whole number from 1 to 10,000,000, not {sequences!r:.30}.")
    room = memory_bytes * (1 - reserve) - 2 * params
    if room <= 0:
        raise ValueError("the model's weights alone fill this GPU; choose a larger one.")
    return room / sequences / MIB
