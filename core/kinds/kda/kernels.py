"""A KDA layer on a device: timed beside the softmax layer of its width and drawn as its implicit attention
(core/kinds/mixer_kernels.py, core/kinds/kda/layer.py)."""

from __future__ import annotations

from core.kinds.kda.kind import CHUNK, KDA
from core.kinds.kda.layer import KDALayer
from core.kinds.mixer_kernels import MixerKernels


class KDAKernels(MixerKernels):
    name = "kda"
    kind = KDA
    layer = KDALayer
    kernel = f"torch: chunked KDA (chunks of {CHUNK}, the decay per channel) for prefill, the recurrent step for decode"
    widths_hint = "the head width"
