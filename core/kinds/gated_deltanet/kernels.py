"""A Gated DeltaNet layer on a device: timed beside the softmax layer of its width (core/kinds/mixer_timing.py), and
drawn as its implicit attention (core/kinds/gated_deltanet/layer.py)."""

from __future__ import annotations

from typing import Any

import torch

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.kinds.display_guard import check_display_bytes
from core.kinds.gated_deltanet.kind import CHUNK, GATED_DELTANET
from core.kinds.gated_deltanet.layer import GDNLayer
from core.kinds.kernel import LayerKernels
from core.kinds.mixer_timing import run_mixer_timing
from core.timing.result import TimingResult

KERNEL = f"torch: chunked delta rule (chunks of {CHUNK}, a triangular solve each) for prefill, the recurrent step for decode"


class GDNKernels(LayerKernels):
    name = "gated_deltanet"

    def run_timing(self, cfg: AttentionConfig, device: torch.device, spec: LayerSpec, **kw: Any) -> TimingResult:
        kw.pop("include_qkv", None)
        build = lambda dev, dtype, seed: GDNLayer(cfg.d_model, spec, dev, dtype, seed).eval()  # noqa: E731
        return run_mixer_timing(cfg, device, spec, GATED_DELTANET, build, KERNEL, **kw)

    def display_layer(self, cfg: AttentionConfig, seed: int, spec: LayerSpec) -> GDNLayer:
        check_display_bytes(GATED_DELTANET.params(cfg.d_model, spec).total * 4,
                            f"a Gated DeltaNet layer of d_model {cfg.d_model}", "the head widths")
        layer = GDNLayer(cfg.d_model, spec, seed=seed).eval()
        layer.cfg = cfg  # what the display cache sizes it by (sandbox/jobs/compute.py LayerCache)
        return layer
