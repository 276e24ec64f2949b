"""A KDA layer on a device: timed beside the softmax layer of its width (core/kinds/mixer_timing.py), and
drawn as its implicit attention (core/kinds/kda/layer.py)."""

from __future__ import annotations

from typing import Any

import torch

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.kinds.display_guard import check_display_bytes
from core.kinds.kda.kind import CHUNK, KDA
from core.kinds.kda.layer import KDALayer
from core.kinds.kernel import LayerKernels
from core.kinds.mixer_timing import run_mixer_timing
from core.timing.result import TimingResult

KERNEL = f"torch: chunked KDA (chunks of {CHUNK}, the decay per channel) for prefill, the recurrent step for decode"


class KDAKernels(LayerKernels):
    name = "kda"

    def run_timing(self, cfg: AttentionConfig, device: torch.device, spec: LayerSpec, **kw: Any) -> TimingResult:
        kw.pop("include_qkv", None)
        build = lambda dev, dtype, seed: KDALayer(cfg.d_model, spec, dev, dtype, seed).eval()  # noqa: E731
        return run_mixer_timing(cfg, device, spec, KDA, build, KERNEL, **kw)

    def display_layer(self, cfg: AttentionConfig, seed: int, spec: LayerSpec) -> KDALayer:
        check_display_bytes(KDA.params(cfg.d_model, spec).total * 4, f"a KDA layer of d_model {cfg.d_model}",
                            "the head width")
        layer = KDALayer(cfg.d_model, spec, seed=seed).eval()
        layer.cfg = cfg  # what the display cache sizes it by (sandbox/jobs/compute.py LayerCache)
        return layer
