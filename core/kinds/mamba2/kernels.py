"""A Mamba-2 layer on a device: timed beside the softmax layer of its width and drawn as its SSD matrix
(core/kinds/mixer_kernels.py, core/kinds/mamba2/layer.py)."""

from __future__ import annotations

from core.kinds.mamba2.kind import CHUNK, MAMBA2
from core.kinds.mamba2.layer import Mamba2Layer
from core.kinds.mixer_kernels import MixerKernels


class Mamba2Kernels(MixerKernels):
    name = "mamba2"
    kind = MAMBA2
    layer = Mamba2Layer
    kernel = f"torch: chunked SSD (chunks of {CHUNK}) for prefill, the recurrent step for decode"
    widths_hint = "the head widths"
