"""The sliding window's band: which keys a local layer's query sees, how many score pairs it costs,
how many tokens its cache holds (../shared/REFERENCE.md, "2026 layouts").

Convention: W is the number of keys a query attends to, itself included: query i sees keys j with
i - W < j <= i (transformers' mask is q_idx - kv_idx < sliding_window). A layer with window None
is global.
"""

from __future__ import annotations

MAX_WINDOW = 2**20


def causal_pairs_x2(T: int, window: int | None) -> int:
    """Twice the score pairs of a causal layer, FlashAttention's convention (the diagonal counted half):
    T^2 for a global layer (pairs T^2/2) and, for T > W, 2*T*W - W^2 (pairs T*W - W^2/2). Doubled so
    the count stays an integer."""
    if window is None or T <= window:
        return T * T
    return 2 * T * window - window * window


def cached_tokens(T: int, window: int | None) -> int:
    """Tokens a layer's KV cache holds at context T: T, or min(T, W) for a local layer (the rolling
    buffer the next query reads; transformers keeps W - 1 between steps, vLLM whole blocks)."""
    return T if window is None else min(T, window)


def check_window(window: object) -> int | None:
    if window is None:
        return None
    if isinstance(window, bool) or not isinstance(window, int) or not 1 <= window <= MAX_WINDOW:
        shown = repr(window) if len(repr(window)) <= 24 else "a huge or odd value"
        raise ValueError(f"the window must be a whole number of tokens from 1 to {MAX_WINDOW:,} "
                         f"(the keys a query sees, itself included), not {shown}.")
    return window
