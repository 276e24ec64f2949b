"""Blockwise sliding-window attention from plain SDPA calls: a kernel-free windowed core.

Query block b (rows b*W .. b*W + W - 1) can only see keys from (b - 1)*W + 1 on, so each block is
attended against its own block and the one before (2W keys) under one shared (W, 2W) band mask: about
2*T*W scores instead of T^2/2. Block 0 has no block before it and runs on its own. Sinks join as one
zero key and value per block, their logits in a float mask. On a 2-core CPU this matches full causal
SDPA at T = 2W-4W and beats it from about 8W on (bench/window_timing.py), where SDPA with a T x T mask
is slower than full attention at every length.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from core.kinds.standard.masking import sdpa_inputs


def blockwise_band_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, window: int,
                             scale: float | None = None, sinks: torch.Tensor | None = None) -> torch.Tensor:
    """Causal attention with window W over q (B, H, T, h) and k, v (B, K, T, h) -> (B, H, T, h); sinks (H,)."""
    B, H, T, h = q.shape
    K, W = k.shape[1], window
    gqa = K != H
    first = min(T, W)
    k0, v0, mask0, causal0 = sdpa_inputs(q[:, :, :first], k[:, :, :first], v[:, :, :first], True, None, sinks)
    out0 = F.scaled_dot_product_attention(q[:, :, :first], k0, v0, attn_mask=mask0, is_causal=causal0,
                                          enable_gqa=gqa, scale=scale)  # block 0: plain causal
    if T <= W:
        return out0
    nb = -(-T // W) - 1  # the blocks after block 0
    pad = (nb + 1) * W - T
    if pad:  # pad the end: padded queries are dropped; padded keys sit after every real query (masked)
        q, k, v = (F.pad(t, (0, 0, 0, pad)) for t in (q, k, v))
    qb = q[:, :, W:].reshape(B, H, nb, W, h).transpose(1, 2).reshape(B * nb, H, W, h)  # (B*nb, H, W, h)
    kb = k.reshape(B, K, nb + 1, W, h)
    vb = v.reshape(B, K, nb + 1, W, h)
    k2 = torch.cat([kb[:, :, :-1], kb[:, :, 1:]], dim=3).transpose(1, 2).reshape(B * nb, K, 2 * W, h)  # [prev|own]
    v2 = torch.cat([vb[:, :, :-1], vb[:, :, 1:]], dim=3).transpose(1, 2).reshape(B * nb, K, 2 * W, h)
    i = torch.arange(W, device=q.device).view(W, 1)
    j = torch.arange(2 * W, device=q.device).view(1, 2 * W)
    band = (j > i) & (j <= i + W)  # key j of [prev | own] sits at (b-1)W + j, query i at bW + i
    mask: torch.Tensor = band
    if sinks is not None:
        zeros = k2.new_zeros(B * nb, K, 1, h)
        k2, v2 = torch.cat([k2, zeros], dim=2), torch.cat([v2, zeros], dim=2)  # (B*nb, K, 2W + 1, h)
        mask = q.new_zeros(1, H, W, 2 * W + 1)  # shared by every block
        mask[..., : 2 * W] = mask[..., : 2 * W].masked_fill(~band, float("-inf"))
        mask[..., 2 * W] = sinks.to(q.dtype).view(1, H, 1)
    out = F.scaled_dot_product_attention(qb, k2, v2, attn_mask=mask, enable_gqa=gqa, scale=scale)
    out = out.reshape(B, nb, H, W, h).transpose(1, 2).reshape(B, H, nb * W, h)  # (B, H, T + pad - W, h)
    return torch.cat([out0, out], dim=2)[:, :, :T]
