"""The windowed core on flex_attention: a sliding-window block mask (only the blocks the band touches are
computed), under torch.compile on CUDA, and learned sinks applied exactly from the log-sum-exp.

A sink joins each row's softmax with logit s and is dropped, so the keys' weights are the plain softmax's
scaled by Z / (Z + e^s) = sigmoid(lse - s), lse = log Z: out_sink = out * sigmoid(lse - s).
Compiling costs seconds to minutes a shape (about 25 s on a 2-core CPU), so the live layer uses this on
CUDA only; bench/window_timing.py and bench/gpu_check.py time it.
"""

from __future__ import annotations

import warnings
from functools import lru_cache
from typing import Any

import torch


@lru_cache(maxsize=16)
def _block_mask(Tq: int, Tk: int, window: int | None, offset: int, device: str) -> Any:
    from torch.nn.attention.flex_attention import create_block_mask

    def band(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        pos = q_idx + offset
        ok = kv_idx <= pos
        return ok & (pos - kv_idx < window) if window is not None else ok

    return create_block_mask(band, B=None, H=None, Q_LEN=Tq, KV_LEN=Tk, device=device)


@lru_cache(maxsize=1)
def _compiled() -> Any:
    from torch.nn.attention.flex_attention import flex_attention

    return torch.compile(flex_attention, dynamic=False)


def flex_band_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, window: int | None,
                        sinks: torch.Tensor | None, scale: float | None = None, offset: int = 0,
                        compile: bool = True) -> torch.Tensor:
    """q (B, H, Tq, h), k and v (B, K, Tk, h) -> (B, H, Tq, h): causal (window W) attention with sinks (H,).
    compile=False runs flex_attention eagerly (an unfused reference path: tests on the CPU)."""
    from torch.nn.attention.flex_attention import AuxRequest, flex_attention

    Tq, Tk, H = q.shape[-2], k.shape[-2], q.shape[1]
    mask = _block_mask(Tq, Tk, window, offset, q.device.type) if causal or window is not None else None
    fn = _compiled() if compile else flex_attention
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the eager path's "call me under torch.compile" warning
        out, aux = fn(q, k, v, block_mask=mask, scale=scale, enable_gqa=k.shape[1] != H,
                      return_aux=AuxRequest(lse=True))
    if sinks is not None:
        keep = torch.sigmoid(aux.lse - sinks.float().view(1, H, 1))  # (B, H, Tq): the keys' share of each row
        out = out * keep.unsqueeze(-1).to(out.dtype)
    return out
