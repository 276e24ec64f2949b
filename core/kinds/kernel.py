"""What runs a layer kind on a device (torch): each kind's `kernels.py` subclasses LayerKernels, and
core/kinds/kernels.py lists them by the kinds' names."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import torch

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.kinds.selection import KeySelection
from core.timing.result import TimingResult


class LayerKernels(ABC):
    name: str  # the kind's name in core/kinds/registry.py

    @abstractmethod
    def run_timing(self, cfg: AttentionConfig, device: torch.device, spec: LayerSpec, **kw: Any) -> TimingResult:
        """Measure the layer on device; a ValueError before allocating when it would not fit."""

    @abstractmethod
    def display_layer(self, cfg: AttentionConfig, seed: int, spec: LayerSpec) -> Any:
        """What draws the layer's heatmaps: an object whose probs_and_sinks(x) gives (B, H, T, T) probabilities."""

    def key_selection(self, layer: Any, x: torch.Tensor) -> KeySelection | None:
        """For a layer that reads a selection of its causal keys: which it read of x (1, T, d), by what score, and
        its dense maps (None: it reads every key its mask allows)."""
        return None
