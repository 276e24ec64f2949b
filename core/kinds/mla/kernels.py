"""An MLA layer on a device: timed in both forms (core/kinds/mla/timing.py) and drawn by the layer itself."""

from __future__ import annotations

from typing import Any

import torch

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.kinds.display_guard import check_display_bytes
from core.kinds.kernel import LayerKernels
from core.kinds.mla.counts import MEMORY_HINT
from core.kinds.mla.kind import MLA
from core.kinds.mla.layer import MLALayer
from core.kinds.mla.timing import run_mla_timing
from core.timing.result import TimingResult


class MLAKernels(LayerKernels):
    name = "mla"

    def run_timing(self, cfg: AttentionConfig, device: torch.device, spec: LayerSpec, **kw: Any) -> TimingResult:
        """Both forms, prefill and one decode step; there is no fused QKV to time."""
        kw.pop("include_qkv", None)
        return run_mla_timing(cfg, device, spec=spec, **kw)

    def display_layer(self, cfg: AttentionConfig, seed: int, spec: LayerSpec) -> MLALayer:
        """The layer itself in float32 without its o_proj (drawn last, so its other weights are the timed layer's)."""
        check_display_bytes(MLA.display_bytes(cfg), f"an MLA layer of d_model {cfg.d_model} and {cfg.n_heads} heads",
                            MEMORY_HINT)
        return MLALayer(cfg, seed=seed, spec=spec, with_output=False).eval()
