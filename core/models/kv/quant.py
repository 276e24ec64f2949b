"""A KV cache stored in a smaller format, simulated: quantise then dequantise, so the layer reads the values
a real cache in that format would hand it.

- float16 / bfloat16: a cast and back.
- fp8_e4m3 / fp8_e5m2: one scale per tensor (its absolute maximum maps to the format's largest finite
  value, as vLLM's fp8 KV cache does with a computed scale), then torch's float8 types round.
- q8_0 / q4_0: llama.cpp's block formats: blocks of 32 values along head_dim, one fp16 scale each.
  q8_0: d = max|x| / 127, q = round(x / d). q4_0: m = the value of largest magnitude (with its sign),
  d = m / -8, q = min(15, trunc(x / d + 8.5)), read back as (q - 8) * d.
"""

from __future__ import annotations

import torch

from core.arch.formats import KV_FORMATS

FP8 = {"fp8_e4m3": torch.float8_e4m3fn, "fp8_e5m2": torch.float8_e5m2}
BLOCK = 32


def quant_dequant(x: torch.Tensor, fmt: str) -> torch.Tensor:
    """x (..., head_dim) -> the values a cache in fmt returns, in x's dtype and shape."""
    if fmt not in KV_FORMATS:
        raise ValueError(f"KV format {fmt!r} is not known; choose one of {', '.join(KV_FORMATS)}.")
    if fmt == "float32" or x.numel() == 0:
        return x
    if x.dim() == 0:
        raise ValueError("a KV tensor has a head_dim axis; give at least one dimension.")
    if fmt in ("float16", "bfloat16"):
        return x.to(getattr(torch, fmt)).to(x.dtype)
    if fmt in FP8:
        return _fp8(x, FP8[fmt])
    if x.shape[-1] % BLOCK:
        raise ValueError(f"the {fmt} format stores blocks of {BLOCK} values along head_dim, and head_dim "
                         f"{x.shape[-1]} is not a multiple of {BLOCK}; choose another format.")
    return _q8_0(x) if fmt == "q8_0" else _q4_0(x)


def _fp8(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    top = torch.finfo(dtype).max
    finite = x[torch.isfinite(x)]
    amax = finite.abs().amax().float() if finite.numel() else torch.tensor(0.0)  # one inf must not scale all to inf
    scale = amax / top if amax > 0 else torch.tensor(1.0)
    return ((x.float() / scale).to(dtype).float() * scale).to(x.dtype)


def _blocks(x: torch.Tensor) -> torch.Tensor:
    """(..., h) -> (..., h / 32, 32) in float32."""
    return x.float().reshape(*x.shape[:-1], x.shape[-1] // BLOCK, BLOCK)


def _inverse(d: torch.Tensor) -> torch.Tensor:
    """1 / d, and 0 where d is 0 (an all-zero block), as llama.cpp's `id = d ? 1/d : 0`."""
    return torch.where(d != 0, 1.0 / torch.where(d != 0, d, 1.0), 0.0)


def _q8_0(x: torch.Tensor) -> torch.Tensor:
    b = _blocks(x)
    d = b.abs().amax(-1, keepdim=True) / 127.0  # (..., blocks, 1)
    v = b * _inverse(d)
    q = torch.sign(v) * torch.floor(v.abs() + 0.5)  # C's roundf: halves away from zero
    return (q * d.half().float()).reshape(x.shape).to(x.dtype)  # read back with the scale as stored (fp16)


def _q4_0(x: torch.Tensor) -> torch.Tensor:
    b = _blocks(x)
    m = torch.gather(b, -1, b.abs().argmax(-1, keepdim=True))  # the value of largest magnitude, with its sign
    d = m / -8.0
    q = torch.clamp(torch.floor(b * _inverse(d) + 8.5), max=15.0)  # 0..15: x / d + 8.5 >= 0.5 by construction
    return ((q - 8.0) * d.half().float()).reshape(x.shape).to(x.dtype)
