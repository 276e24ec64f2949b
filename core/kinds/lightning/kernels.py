"""A lightning attention layer on a device: timed beside the softmax layer of its width and drawn as its implicit attention
(core/kinds/mixer_kernels.py, core/kinds/lightning/layer.py)."""

from __future__ import annotations

from core.kinds.lightning.kind import BLOCK, LIGHTNING
from core.kinds.lightning.layer import LightningLayer
from core.kinds.mixer_kernels import MixerKernels


class LightningKernels(MixerKernels):
    name = "lightning"
    kind = LIGHTNING
    layer = LightningLayer
    kernel = f"torch: blockwise lightning attention (blocks of {BLOCK}) for prefill, the recurrent step for decode"
    widths_hint = "the head width"
