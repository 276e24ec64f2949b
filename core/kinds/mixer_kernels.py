"""A recurrent mixer on a device, whatever its kind: timed beside the softmax layer of its width
(core/kinds/mixer_timing.py) and drawn as its implicit attention (its layer's probs_and_sinks). Each mixer's
kernels.py names its kind, its torch layer and the words for what runs it."""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import nn

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.kinds.display_guard import check_display_bytes
from core.kinds.kernel import LayerKernels
from core.kinds.mixer_kind import MixerKind
from core.kinds.mixer_timing import run_mixer_timing
from core.timing.result import TimingResult


class MixerKernels(LayerKernels):
    kind: ClassVar[MixerKind]
    layer: ClassVar[type[nn.Module]]  # built as layer(d_model, spec, device, dtype, seed)
    kernel: ClassVar[str]  # what runs its core, as the device row names it
    widths_hint: ClassVar[str]  # what else to lower when its display weights would not fit

    def run_timing(self, cfg: AttentionConfig, device: torch.device, spec: LayerSpec, **kw: Any) -> TimingResult:
        kw.pop("include_qkv", None)  # no fused QKV to time
        build = lambda dev, dtype, seed: self.layer(cfg.d_model, spec, dev, dtype, seed).eval()  # noqa: E731
        return run_mixer_timing(cfg, device, spec, self.kind, build, self.kernel, **kw)

    def display_layer(self, cfg: AttentionConfig, seed: int, spec: LayerSpec) -> nn.Module:
        check_display_bytes(self.kind.params(cfg.d_model, spec).total * 4,
                            f"a {self.kind.title} layer of d_model {cfg.d_model}", self.widths_hint)
        layer = self.layer(cfg.d_model, spec, seed=seed).eval()
        layer.cfg = cfg  # what the display cache sizes it by (sandbox/jobs/compute.py LayerCache)
        return layer
