"""Masks and sinks shared by the layer's timing path (SDPA) and its display path (explicit softmax).

Positions: query i of Tq sits at position offset + i, key j at position j. A causal query sees keys up
to itself; a local one (window W) only the W keys up to itself, itself included (i - W < j <= i).
A sink is one learned logit per head that joins every softmax row and is then dropped: SDPA runs it as
one extra key whose K and V are zero and whose score the float mask sets to the sink's logit.
"""

from __future__ import annotations

import torch


def allowed_keys(Tq: int, Tk: int, causal: bool, window: int | None, offset: int = 0,
                 device: torch.device | str = "cpu") -> torch.Tensor | None:
    """(Tq, Tk) bool, True where query i may read key j; None when every key is allowed."""
    if not causal and window is None:
        return None
    ones = torch.ones(Tq, Tk, dtype=torch.bool, device=device)
    ok = ones.tril(offset)  # key j <= query position offset + i
    if window is not None:
        ok &= ~ones.tril(offset - window)  # and j > position - W: no int64 (Tq, Tk) temporary
    return ok


def softmax_with_sinks(scores: torch.Tensor, allowed: torch.Tensor | None,
                       sinks: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """scores (B, H, Tq, Tk) float32 -> probs (B, H, Tq, Tk) and the sink's share of each row (B, H, Tq).

    With sinks (H,), each row's softmax runs over its keys and the sink's logit; the sink's column is
    then dropped, so a row sums to 1 - its sink share."""
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    if sinks is None:
        return scores.softmax(dim=-1), None
    B, H, Tq, _ = scores.shape
    sink = sinks.float().view(1, H, 1, 1).expand(B, H, Tq, 1)
    full = torch.cat([scores, sink], dim=-1).softmax(dim=-1)  # (B, H, Tq, Tk + 1)
    return full[..., :-1], full[..., -1]


def sdpa_inputs(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, window: int | None,
                sinks: torch.Tensor | None, offset: int = 0
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, bool]:
    """k, v, attn_mask and is_causal for F.scaled_dot_product_attention.

    Without a window or sinks: today's call (is_causal, no mask). A window makes a bool mask (Tq, Tk);
    sinks append a zero key and value per KV head, (B, K, Tk + 1, h), and a float mask (1, H, Tq, Tk + 1)
    with 0 where allowed, -inf elsewhere and the head's sink logit in the last column."""
    Tq, Tk = q.shape[-2], k.shape[-2]
    if window is None and sinks is None:
        return k, v, None, causal
    allowed = allowed_keys(Tq, Tk, causal, window, offset, q.device)
    if sinks is None:
        return k, v, allowed, False
    zeros = k.new_zeros(*k.shape[:-2], 1, k.shape[-1])
    k, v = torch.cat([k, zeros], dim=-2), torch.cat([v, zeros], dim=-2)  # (B, K, Tk + 1, h)
    H = q.shape[1]
    mask = q.new_zeros(1, H, Tq, Tk + 1)
    if allowed is not None:
        mask[..., :Tk] = mask[..., :Tk].masked_fill(~allowed, float("-inf"))
    mask[..., Tk] = sinks.to(q.dtype).view(1, H, 1)
    return k, v, mask, False
