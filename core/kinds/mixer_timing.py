"""Time a recurrent mixer (any kind whose layer has a prefill forward, an empty state and a decode step) beside the
softmax layer of the same heads and width, in the same run: the mixer's prefill and decode step, its core alone, and
the softmax layer's prefill and decode step against seq_len cached keys.

The result is the standard TimingResult plus `forms`: the four times, so the timing panel and the report say
"the GDN layer's decode step at 32k is xN the time of the attention layer's". Everything is allocated before any
timed region.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import torch

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.device import TORCH_DTYPES, device_name, guard_bytes
from core.kinds.mixer_kind import MixerKind
from core.kinds.standard.layer import AttentionLayer
from core.timing.result import TimingResult, tflops
from core.timing.steps import Steps
from core.timing.timer import measure

STEPS = ("allocating the mixer, the softmax layer and their states", "the mixer's prefill", "the mixer's decode step",
         "the mixer's core alone", "the softmax layer's prefill", "the softmax layer's decode step")


class MixerLayer(Protocol):
    def __call__(self, x: torch.Tensor) -> torch.Tensor: ...

    def empty_state(self, batch: int, device: torch.device | str) -> tuple[torch.Tensor, ...]: ...

    def decode_step(self, x_new: torch.Tensor, *state: torch.Tensor) -> torch.Tensor: ...

    def core_call(self, x: torch.Tensor, phase: str) -> Callable[[], Any]: ...


def run_mixer_timing(cfg: AttentionConfig, device: torch.device, spec: LayerSpec, kind: MixerKind,
                     build: Callable[[torch.device, torch.dtype, int], MixerLayer], kernel: str, *, seed: int = 0,
                     budget_s: float = 0.3, should_stop: Callable[[], bool] | None = None,
                     free_bytes: int | None = None, progress: Callable[[str], None] | None = None,
                     **_: Any) -> TimingResult:
    """Measure cfg's mixer layer spec on device (kernel: what runs its core, as the device row names it). Raises
    ValueError before allocating when it would not fit."""
    guard_bytes(kind.timing_bytes(cfg, False), device, free_bytes, hint="the heads or their widths")
    kw = {"budget_s": budget_s, "should_stop": should_stop}
    checkpoint = Steps(STEPS, should_stop, progress)

    B, T, d, dtype = cfg.batch_size, cfg.seq_len, cfg.d_model, TORCH_DTYPES[cfg.dtype]
    base = kind.baseline(spec)
    softmax_cfg = AttentionConfig(d_model=d, n_heads=base.n_heads, n_kv_heads=base.n_kv_heads,
                                  explicit_head_dim=base.head_dim, seq_len=T, batch_size=B, dtype=cfg.dtype,
                                  causal=True, n_layers=1)
    with torch.inference_mode():
        checkpoint(0)
        layer = build(device, dtype, seed)
        gen = torch.Generator(device=device).manual_seed(seed + 1)
        x = torch.randn(B, T, d, generator=gen, device=device, dtype=dtype)  # (B, T, d)
        x_new = torch.randn(B, 1, d, generator=gen, device=device, dtype=dtype)  # (B, 1, d)
        state = layer.empty_state(B, device)
        core_call = layer.core_call(x if cfg.phase == "prefill" else x_new, cfg.phase)
        softmax = AttentionLayer(softmax_cfg, device=device, dtype=dtype, seed=seed).eval()
        k_cache = torch.randn(B, base.n_kv_heads, T, base.head_dim, generator=gen, device=device, dtype=dtype)
        v_cache = torch.randn_like(k_cache)  # (B, K, T, h): T - 1 cached tokens and the new one's slot
        checkpoint(1)
        prefill = measure(lambda: layer(x), device, **kw)
        checkpoint(2)
        decode = measure(lambda: layer.decode_step(x_new, *state), device, **kw)
        checkpoint(3)
        core = measure(core_call, device, **kw)
        checkpoint(4)
        soft_prefill = measure(lambda: softmax(x), device, **kw)
        checkpoint(5)
        soft_decode = measure(lambda: softmax.decode_step(x_new, k_cache, v_cache), device, **kw)
    whole = prefill if cfg.phase == "prefill" else decode
    flops = kind.flops(d, spec, cfg)
    forms = {"prefill_ms": prefill.median_ms, "decode_ms": decode.median_ms,
             "softmax_prefill_ms": soft_prefill.median_ms, "softmax_decode_ms": soft_decode.median_ms}
    return TimingResult(
        device=device.type, device_name=device_name(device), backend="torch", dtype=cfg.dtype,
        layer=whole, core=core, tflops=tflops(flops.total, whole.median_ms),
        core_tflops=tflops(flops.attention, core.median_ms), fused_qkv=None, separate_qkv=None,
        prefill=prefill, decode=decode, kernel=kernel, forms=forms, forms_key=kind.timing_forms_key,
    )
