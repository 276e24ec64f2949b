"""Time an MLA layer in both forms: prefill and one decode step, naive and absorbed (core/kinds/mla/layer.py).

The result is the standard TimingResult (layer, core, prefill, decode of the form engines use in each phase:
naive prefill, absorbed decode) plus `forms`: all four measurements, so the timing panel and the report say
which form wins where. Everything is allocated before any timed region.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.device import TORCH_DTYPES, device_name, guard_bytes
from core.kinds.mla.counts import (
    FORMS_KEY,
    MEMORY_HINT,
    mla_layer_flops,
    mla_timing_bytes,
    usual_form,
)
from core.kinds.mla.layer import MLALayer
from core.timing.result import TimingResult, tflops
from core.timing.steps import Steps
from core.timing.timer import BACKEND_NAMES, measure, pick_backend

STEPS = ("allocating the layer, its latent and its decompressed cache", "choosing the SDPA backend",
         "naive prefill", "absorbed prefill", "naive decode (decompressed cache)", "absorbed decode (latent cache)",
         "the attention core")


# Measured on this kind of machine (2 cores) for MLA's shapes: far below a big GEMM's rate, and bf16 slower still.
def run_mla_timing(cfg: AttentionConfig, device: torch.device, *, seed: int = 0, budget_s: float = 0.3,
                   should_stop: Callable[[], bool] | None = None, free_bytes: int | None = None,
                   progress: Callable[[str], None] | None = None, spec: LayerSpec | None = None) -> TimingResult:
    """Measure cfg's MLA layer on device (a TimingResult with forms). Raises ValueError before allocating
    when it would not fit."""
    guard_bytes(mla_timing_bytes(cfg, False), device, free_bytes, hint=MEMORY_HINT)
    kw = {"budget_s": budget_s, "should_stop": should_stop}
    checkpoint = Steps(STEPS, should_stop, progress)

    B, T, d, causal = cfg.batch_size, cfg.seq_len, cfg.d_model, cfg.causal
    with torch.inference_mode():
        checkpoint(0)
        layer = MLALayer(cfg, device=device, dtype=TORCH_DTYPES[cfg.dtype], seed=seed, spec=spec).eval()
        gen = torch.Generator(device=device).manual_seed(seed + 1)
        x = torch.randn(B, T, d, generator=gen, device=device, dtype=TORCH_DTYPES[cfg.dtype])  # (B, T, d)
        x_new = torch.randn(B, 1, d, generator=gen, device=device, dtype=x.dtype)  # (B, 1, d)
        q_nope, q_pe = layer.query(x)  # (B, H, T, n), (B, H, T, r)
        c, k_pe = layer.latent(x)  # the latent cache: (B, T, r_kv), (B, T, r)
        k, v = layer.decompress(c, k_pe)  # the decompressed cache: (B, H, T, n + r), (B, H, T, v)
        qn_new, qp_new = layer.query(x_new)
        checkpoint(1)
        naive_core = lambda: layer.naive_core(q_nope, q_pe, k, v, causal)  # noqa: E731
        absorbed_decode_core = lambda: layer.absorbed_core(qn_new, qp_new, c, k_pe, False)  # noqa: E731
        prefill_backend = pick_backend(naive_core, device)
        decode_backend = pick_backend(absorbed_decode_core, device)
        if SDPBackend.MATH in (prefill_backend, decode_backend):
            guard_bytes(mla_timing_bytes(cfg, True), device, free_bytes, hint=MEMORY_HINT)
        with sdpa_kernel([prefill_backend]):
            checkpoint(2)
            naive_prefill = measure(lambda: layer(x, form="naive"), device, **kw)
            checkpoint(3)
            absorbed_prefill = measure(lambda: layer(x, form="absorbed"), device, **kw)
        with sdpa_kernel([decode_backend]):
            checkpoint(4)
            naive_decode = measure(lambda: layer.decode_naive(x_new, k, v), device, **kw)
            checkpoint(5)
            absorbed_decode = measure(lambda: layer.decode_absorbed(x_new, c, k_pe), device, **kw)
            checkpoint(6)
            if cfg.phase == "prefill":
                with sdpa_kernel([prefill_backend]):
                    core = measure(naive_core, device, **kw)
            else:
                core = measure(absorbed_decode_core, device, **kw)
    is_prefill = cfg.phase == "prefill"
    whole = naive_prefill if is_prefill else absorbed_decode
    flops = mla_layer_flops(d, layer.spec, cfg, usual_form(cfg.phase))
    forms = {"naive_prefill_ms": naive_prefill.median_ms, "absorbed_prefill_ms": absorbed_prefill.median_ms,
             "naive_decode_ms": naive_decode.median_ms, "absorbed_decode_ms": absorbed_decode.median_ms}
    return TimingResult(
        device=device.type, device_name=device_name(device),
        backend=BACKEND_NAMES[prefill_backend if is_prefill else decode_backend], dtype=cfg.dtype,
        layer=whole, core=core, tflops=tflops(flops.total, whole.median_ms),
        core_tflops=tflops(flops.attention, core.median_ms), fused_qkv=None, separate_qkv=None,
        prefill=naive_prefill, decode=absorbed_decode,
        kernel="MLA: naive prefill (decompressed per-head SDPA), absorbed decode (latent as one KV head)",
        forms=forms, forms_key=FORMS_KEY,
    )

