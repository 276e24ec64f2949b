"""Timing that an expert would trust.

- Warm-up on the same shape first (the first call may build a cuDNN graph or touch pages).
- Inputs are allocated before the timed region; nothing is allocated inside it but the result.
- CUDA: one pair of events per repeat, read after one synchronize. CPU: perf_counter per repeat.
- Median and quartiles, never a mean of three.
- The SDPA backend is pinned with torch.nn.attention.sdpa_kernel (first viable in torch's own
  priority order, the choice the default dispatcher makes) so that it can be reported.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from core.timing.stats import Cancelled, TimingStats, quartiles

__all__ = ["BACKEND_NAMES", "Cancelled", "TimingStats", "measure", "pick_backend", "quartiles"]

BACKEND_NAMES = {
    SDPBackend.MATH: "math",
    SDPBackend.FLASH_ATTENTION: "flash",
    SDPBackend.EFFICIENT_ATTENTION: "efficient",
    SDPBackend.CUDNN_ATTENTION: "cudnn",
}


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def measure(
    fn: Callable[[], object],
    device: torch.device,
    *,
    budget_s: float = 0.3,
    min_reps: int = 5,
    max_reps: int = 200,
    warmup: int = 2,
    should_stop: Callable[[], bool] | None = None,
) -> TimingStats:
    """Time fn: warm up, size the repeat count to budget_s, then one sample per repeat."""
    stop = should_stop or (lambda: False)
    if stop():
        raise Cancelled
    t0 = time.perf_counter()
    for _ in range(max(1, warmup)):
        fn()
        synchronize(device)
        if stop():
            raise Cancelled
    per_call = (time.perf_counter() - t0) / max(1, warmup)
    reps = int(min(max_reps, max(min_reps, budget_s / max(per_call, 1e-7))))
    samples: list[float] = []
    if device.type == "cuda":
        pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
        for start, end in pairs:
            start.record()
            fn()
            end.record()
            if stop():
                raise Cancelled
        torch.cuda.synchronize(device)
        samples = [start.elapsed_time(end) for start, end in pairs]
    else:
        clock = time.perf_counter
        for _ in range(reps):
            t = clock()
            fn()
            synchronize(device)
            samples.append((clock() - t) * 1e3)
            if stop():
                raise Cancelled
    return quartiles(samples)


def priority_order() -> list[SDPBackend]:
    """torch's own SDPA priority order, for the backends we can name."""
    try:
        order = [SDPBackend(i) for i in torch._C._get_sdp_priority_order()]
    except (AttributeError, ValueError):
        order = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH, SDPBackend.CUDNN_ATTENTION]
    return [b for b in order if b in BACKEND_NAMES]


def pick_backend(call: Callable[[], object], device: torch.device) -> SDPBackend:
    """The first backend, in torch's priority order, that accepts this exact call.

    On CUDA, cuDNN is tried first: recent torch releases prefer it on Hopper.
    """
    order = priority_order()
    if device.type == "cuda" and SDPBackend.CUDNN_ATTENTION in order:
        order.remove(SDPBackend.CUDNN_ATTENTION)
        order.insert(0, SDPBackend.CUDNN_ATTENTION)
    for backend in order:
        try:
            with warnings.catch_warnings(), sdpa_kernel([backend]):
                warnings.simplefilter("ignore")
                call()
                synchronize(device)
            return backend
        except torch.OutOfMemoryError:
            raise
        except RuntimeError:
            continue
    raise RuntimeError("no scaled_dot_product_attention backend accepts this configuration.")
