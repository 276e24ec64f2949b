"""The standard layer on a device: timed (core/kinds/standard/timing.py) and drawn (its W_q and W_k only)."""

from __future__ import annotations

from typing import Any

import torch

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.kinds.kernel import LayerKernels
from core.kinds.standard.display import DisplayProjector
from core.kinds.standard.timing import measure_standard_layer
from core.timing.result import TimingResult


class StandardKernels(LayerKernels):
    name = "standard"

    def run_timing(self, cfg: AttentionConfig, device: torch.device, spec: LayerSpec, **kw: Any) -> TimingResult:
        return measure_standard_layer(cfg, device, spec=spec, **kw)

    def display_layer(self, cfg: AttentionConfig, seed: int, spec: LayerSpec) -> DisplayProjector:
        return DisplayProjector(cfg, seed, spec)
