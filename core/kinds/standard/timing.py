"""Time one configuration end to end: the layer, its attention core, fused vs separate QKV,
prefill vs decode. Everything is allocated before any timed region."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.device import TORCH_DTYPES, device_name, guard_bytes
from core.kinds.standard.band import cached_tokens
from core.kinds.standard.counts import standard_flops, standard_timing_bytes
from core.kinds.standard.layer import AttentionLayer, SeparateQKV
from core.timing.result import TimingResult, tflops
from core.timing.timer import BACKEND_NAMES, Cancelled, measure, pick_backend

__all__ = ["measure_standard_layer", "allocate"]


@dataclass
class TimingInputs:
    """The tensors every timed call reads, allocated once."""

    layer: AttentionLayer
    separate: SeparateQKV
    x: torch.Tensor  # (B, T, d)
    x_new: torch.Tensor  # (B, 1, d)
    q: torch.Tensor  # (B, H, T, h)
    k: torch.Tensor  # (B, K, T, h)
    v: torch.Tensor  # (B, K, T, h)
    q_new: torch.Tensor  # (B, H, 1, h)
    k_cache: torch.Tensor  # (B, K, T, h)
    v_cache: torch.Tensor  # (B, K, T, h)


def allocate(cfg: AttentionConfig, device: torch.device, seed: int = 0, spec: LayerSpec | None = None) -> TimingInputs:
    dtype = TORCH_DTYPES[cfg.dtype]
    layer = AttentionLayer(cfg, device=device, dtype=dtype, seed=seed, spec=spec).eval()
    gen = torch.Generator(device=device).manual_seed(seed + 1)
    B, T, d = cfg.batch_size, cfg.seq_len, cfg.d_model
    cached = cached_tokens(T, layer.spec.window)  # a local layer's cache holds min(T, W) positions
    x = torch.randn(B, T, d, generator=gen, device=device, dtype=dtype)  # (B, T, d)
    x_new = torch.randn(B, 1, d, generator=gen, device=device, dtype=dtype)  # (B, 1, d)
    with torch.inference_mode():
        q, k, v = layer.project_qkv(x)
        q_new, _, _ = layer.project_qkv(x_new)
    return TimingInputs(
        layer=layer, separate=SeparateQKV(layer).eval(), x=x, x_new=x_new, q=q, k=k, v=v,
        q_new=q_new, k_cache=k[:, :, -cached:].clone(), v_cache=v[:, :, -cached:].clone(),
    )


def measure_standard_layer(
    cfg: AttentionConfig,
    device: torch.device,
    *,
    seed: int = 0,
    budget_s: float = 0.3,
    should_stop: Callable[[], bool] | None = None,
    free_bytes: int | None = None,
    include_qkv: bool = True,
    progress: Callable[[str], None] | None = None,
    spec: LayerSpec | None = None,
) -> TimingResult:
    """Measure cfg's layer spec (default layer 0) on device. Raises ValueError (before allocating) when it
    would not fit. progress(step) is told each step as it starts (the CLI prints it). An MLA layer is timed
    as every other kind times its own (its timing.py)."""
    guard_bytes(standard_timing_bytes(cfg, False), device, free_bytes)
    kw = {"budget_s": budget_s, "should_stop": should_stop}
    is_prefill = cfg.phase == "prefill"
    window = (spec or cfg.layer_spec()).window
    compare_full = is_prefill and cfg.causal and window is not None and cfg.seq_len > window
    steps = ["allocating the layer and its inputs", "choosing the SDPA backend", "the prefill layer",
             "the attention core" if is_prefill else "the decode step", "the decode step" if is_prefill else
             "the attention core"] + (["fused QKV", "separate QKV"] if include_qkv else []) + (
             ["the full causal core, for comparison"] if compare_full else [])
    done = [0]

    def checkpoint(step: int | None = None) -> None:
        """Stop between the steps that cannot be interrupted, not only between repeats; say the next step."""
        if should_stop is not None and should_stop():
            raise Cancelled
        if step is not None and progress is not None:
            done[0] += 1
            progress(f"{steps[step]} ({done[0]}/{len(steps)})")

    with torch.inference_mode():
        checkpoint(0)
        t = allocate(cfg, device, seed, spec)
        checkpoint(1)
        layer, causal = t.layer, cfg.causal
        prefill_core = lambda: layer.core(t.q, t.k, t.v, causal)  # noqa: E731
        decode_core = lambda: layer.core(t.q_new, t.k_cache, t.v_cache, False)  # noqa: E731
        prefill_backend = pick_backend(prefill_core, device)
        checkpoint()
        decode_backend = pick_backend(decode_core, device)
        checkpoint()
        if SDPBackend.MATH in (prefill_backend, decode_backend):
            # The math path materialises (B, H, T, T) scores: check that they fit too.
            guard_bytes(standard_timing_bytes(cfg, True), device, free_bytes)
        with sdpa_kernel([prefill_backend]):
            checkpoint(2)
            prefill = measure(lambda: layer(t.x), device, **kw)
            if is_prefill:
                checkpoint(3)
                core = measure(prefill_core, device, **kw)
        with sdpa_kernel([decode_backend]):
            checkpoint(4 if is_prefill else 3)
            decode = measure(lambda: layer.decode_step(t.x_new, t.k_cache, t.v_cache), device, **kw)
            if not is_prefill:
                checkpoint(4)
                core = measure(decode_core, device, **kw)
        x_in = t.x if is_prefill else t.x_new
        if include_qkv:
            checkpoint(5)
        fused = measure(lambda: layer.wqkv(x_in), device, **kw) if include_qkv else None
        if include_qkv:
            checkpoint(6)
        separate = measure(lambda: t.separate(x_in), device, **kw) if include_qkv else None
        full_core = None
        if compare_full:  # what the window saves: the same q, k, v through full causal SDPA
            checkpoint(len(steps) - 1)
            gqa = layer.n_kv_heads != layer.n_heads
            with sdpa_kernel([prefill_backend]):
                full_core = measure(lambda: F.scaled_dot_product_attention(t.q, t.k, t.v, is_causal=True, enable_gqa=gqa,
                                                                           scale=layer.spec.scale), device, **kw)
    backend = prefill_backend if is_prefill else decode_backend
    flops = standard_flops(cfg.d_model, t.layer.spec, cfg)
    whole = prefill if is_prefill else decode
    return TimingResult(
        device=device.type,
        device_name=device_name(device),
        backend=BACKEND_NAMES[backend],
        dtype=cfg.dtype,
        layer=whole,
        core=core,
        tflops=tflops(flops.total, whole.median_ms),
        core_tflops=tflops(flops.attention, core.median_ms),
        fused_qkv=fused,
        separate_qkv=separate,
        prefill=prefill,
        decode=decode,
        kernel=layer.kernel_name,
        full_core=full_core,
        band_flop_ratio=(flops.attention / standard_flops(cfg.d_model, replace(t.layer.spec, window=None),
                                                          cfg).attention) if compare_full else None,
    )

