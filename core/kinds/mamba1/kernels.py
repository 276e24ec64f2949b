"""A Mamba-1 layer on a device: timed beside the softmax layer of its width and drawn as its implicit attention of a few of its channels
(core/kinds/mixer_kernels.py, core/kinds/mamba1/layer.py)."""

from __future__ import annotations

from core.kinds.mamba1.kind import MAMBA1
from core.kinds.mamba1.layer import Mamba1Layer
from core.kinds.mixer_kernels import MixerKernels


class Mamba1Kernels(MixerKernels):
    name = "mamba1"
    kind = MAMBA1
    layer = Mamba1Layer
    kernel = "torch: the selective scan token by token (prefill and decode; the CPU has no chunked form of it)"
    widths_hint = "d_inner"
