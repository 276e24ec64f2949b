"""A Mamba-1 layer on a device: timed beside the softmax layer of its width (core/kinds/mixer_timing.py), and drawn
as the implicit attention of a few of its channels (core/kinds/mamba1/layer.py)."""

from __future__ import annotations

from typing import Any

import torch

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.kinds.display_guard import check_display_bytes
from core.kinds.kernel import LayerKernels
from core.kinds.mamba1.kind import MAMBA1
from core.kinds.mamba1.layer import Mamba1Layer
from core.kinds.mixer_timing import run_mixer_timing
from core.timing.result import TimingResult

KERNEL = "torch: the selective scan token by token (prefill and decode; the CPU has no chunked form of it)"


class Mamba1Kernels(LayerKernels):
    name = "mamba1"

    def run_timing(self, cfg: AttentionConfig, device: torch.device, spec: LayerSpec, **kw: Any) -> TimingResult:
        kw.pop("include_qkv", None)
        build = lambda dev, dtype, seed: Mamba1Layer(cfg.d_model, spec, dev, dtype, seed).eval()  # noqa: E731
        return run_mixer_timing(cfg, device, spec, MAMBA1, build, KERNEL, **kw)

    def display_layer(self, cfg: AttentionConfig, seed: int, spec: LayerSpec) -> Mamba1Layer:
        check_display_bytes(MAMBA1.params(cfg.d_model, spec).total * 4, f"a Mamba-1 layer of d_model {cfg.d_model}",
                            "d_inner")
        layer = Mamba1Layer(cfg.d_model, spec, seed=seed).eval()
        layer.cfg = cfg  # what the display cache sizes it by (sandbox/jobs/compute.py LayerCache)
        return layer
