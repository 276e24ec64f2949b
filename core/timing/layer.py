"""Time one layer of a configuration, whatever its kind: the kind measures (core/kinds/<kind>/timing.py); this
module estimates the run first and, on the CPU, runs it on as many threads as there are idle cores."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.device import device_name
from core.kinds.kernels import kernels_of
from core.kinds.registry import kind_of
from core.timing.cpu_load import other_cores, read_times, timing_threads
from core.timing.result import TimingResult

__all__ = ["TimingResult", "estimate_timing_s", "run_timing", "measure_layer"]


def estimate_timing_s(cfg: AttentionConfig, device: torch.device, budget_s: float = 0.3,
                      include_qkv: bool = True) -> float:
    """About how long run_timing takes (its kind's estimate), to refuse a run of minutes before it starts."""
    return kind_of(cfg.layer_spec()).estimate_timing_s(cfg, device.type, budget_s, include_qkv)


def measure_layer(cfg: AttentionConfig, device: torch.device, *, spec: LayerSpec | None = None,
                  **kw: Any) -> TimingResult:
    """cfg's layer spec (default layer 0) measured by its kind, on the threads torch has now. Raises ValueError
    (before allocating) when it would not fit."""
    spec = spec or cfg.layer_spec()
    return kernels_of(spec).run_timing(cfg, device, spec, **kw)


def run_timing(cfg: AttentionConfig, device: torch.device, **kw: Any) -> TimingResult:
    """measure_layer on as many CPU threads as there are idle cores (core/timing/cpu_load.py: a thread that waits for a
    busy core at every barrier multiplies small ops' time by up to a thousand), naming the count and the load
    other processes put on the machine meanwhile; elsewhere as it is."""
    if device.type != "cpu":
        return measure_layer(cfg, device, **kw)
    threads, start = timing_threads(torch.get_num_threads())
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        result = measure_layer(cfg, device, **kw)
    finally:
        torch.set_num_threads(before)
    end = read_times() if start is not None else None
    load = other_cores(start, end) if start is not None and end is not None else None
    # The machine's name with its thread count ("CPU (2 threads)"), not the count the timing ran on: that is `threads`.
    return replace(result, threads=threads, other_load=load, device_name=device_name(device))
