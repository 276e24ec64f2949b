"""A Mamba-2 layer on a device: timed beside the softmax layer of its width (core/kinds/mixer_timing.py), and
drawn as its SSD matrix (core/kinds/mamba2/layer.py)."""

from __future__ import annotations

from typing import Any

import torch

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.kinds.display_guard import check_display_bytes
from core.kinds.kernel import LayerKernels
from core.kinds.mamba2.kind import CHUNK, MAMBA2
from core.kinds.mamba2.layer import Mamba2Layer
from core.kinds.mixer_timing import run_mixer_timing
from core.timing.result import TimingResult

KERNEL = f"torch: chunked SSD (chunks of {CHUNK}) for prefill, the recurrent step for decode"


class Mamba2Kernels(LayerKernels):
    name = "mamba2"

    def run_timing(self, cfg: AttentionConfig, device: torch.device, spec: LayerSpec, **kw: Any) -> TimingResult:
        kw.pop("include_qkv", None)
        build = lambda dev, dtype, seed: Mamba2Layer(cfg.d_model, spec, dev, dtype, seed).eval()  # noqa: E731
        return run_mixer_timing(cfg, device, spec, MAMBA2, build, KERNEL, **kw)

    def display_layer(self, cfg: AttentionConfig, seed: int, spec: LayerSpec) -> Mamba2Layer:
        check_display_bytes(MAMBA2.params(cfg.d_model, spec).total * 4,
                            f"a Mamba-2 layer of d_model {cfg.d_model}", "the head widths")
        layer = Mamba2Layer(cfg.d_model, spec, seed=seed).eval()
        layer.cfg = cfg  # what the display cache sizes it by (sandbox/jobs/compute.py LayerCache)
        return layer
