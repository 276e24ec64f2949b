"""Time a DeepSeek-V4 layer's prefill in torch, beside a dense layer of the same heads over the same one KV head (every
causal token read, no compressor), in the same run."""

from __future__ import annotations

from collections.abc import Callable

import torch

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.device import TORCH_DTYPES, device_name, guard_bytes
from core.kinds.dsv4.counts import v4_layer_flops
from core.kinds.dsv4.kind import DSV4
from core.kinds.dsv4.layer import V4Layer
from core.timing.result import TimingResult, tflops
from core.timing.steps import Steps
from core.timing.timer import measure

STEPS = ("allocating the layer and its caches", "the V4 prefill (window and compressed entries)",
         "the same layer reading every token", "the V4 decode step", "the dense decode step")


def run_v4_timing(cfg: AttentionConfig, device: torch.device, *, seed: int = 0, budget_s: float = 0.3,
                  should_stop: Callable[[], bool] | None = None, free_bytes: int | None = None,
                  progress: Callable[[str], None] | None = None, spec: LayerSpec | None = None) -> TimingResult:
    """The layer's prefill and one decode step against its window and entries, beside the same layer reading every
    causal token of its one KV head, in the same run."""
    spec = spec or cfg.layer_spec()
    guard_bytes(DSV4.timing_bytes(cfg, True), device, free_bytes, hint=DSV4.memory_hint())
    kw = {"budget_s": budget_s, "should_stop": should_stop}
    checkpoint = Steps(STEPS, should_stop, progress)

    B, T, d = cfg.batch_size, cfg.seq_len, cfg.d_model
    with torch.inference_mode():
        checkpoint(0)
        layer = V4Layer(d, spec, device=device, dtype=TORCH_DTYPES[cfg.dtype], seed=seed).eval()
        x = torch.randn(B, T, d, generator=torch.Generator(device=device).manual_seed(seed + 1), device=device,
                        dtype=TORCH_DTYPES[cfg.dtype])  # (B, T, d)
        keys = layer.kv_norm(layer.kv_proj(x))  # (B, T, D): every token's key, for the dense step
        window, entries, index = layer.caches(x)
        x_new = x[:, -1:]
        checkpoint(1)
        sparse = measure(lambda: layer(x), device, **kw)
        checkpoint(2)
        dense = measure(lambda: layer.dense(x), device, **kw)
        checkpoint(3)
        step = measure(lambda: layer.decode_step(x_new, window, entries, index), device, **kw)
        checkpoint(4)
        dense_step = measure(lambda: layer.decode_dense(x_new, keys), device, **kw)
    is_prefill = cfg.phase == "prefill"
    whole = sparse if is_prefill else step
    flops = v4_layer_flops(d, spec, cfg.with_(causal=True))
    forms = {"v4_prefill_ms": sparse.median_ms, "dense_prefill_ms": dense.median_ms,
             "v4_decode_ms": step.median_ms, "dense_decode_ms": dense_step.median_ms}
    return TimingResult(
        device=device.type, device_name=device_name(device), backend="torch (explicit scores, sinks)",
        dtype=cfg.dtype, layer=whole, core=whole, tflops=tflops(flops.total, whole.median_ms),
        core_tflops=tflops(flops.attention, whole.median_ms), fused_qkv=None, separate_qkv=None,
        prefill=sparse, decode=step,
        kernel="DeepSeek-V4 in torch: window and compressed entries (an indexer's top-k in a sparse layer), sinks, "
               "grouped output; beside the same layer reading every causal token",
        forms=forms, forms_key=DSV4.timing_forms_key)
