"""A Gated DeltaNet layer on a device: timed beside the softmax layer of its width and drawn as its implicit attention
(core/kinds/mixer_kernels.py, core/kinds/gated_deltanet/layer.py)."""

from __future__ import annotations

from core.kinds.gated_deltanet.kind import CHUNK, GATED_DELTANET
from core.kinds.gated_deltanet.layer import GDNLayer
from core.kinds.mixer_kernels import MixerKernels


class GDNKernels(MixerKernels):
    name = "gated_deltanet"
    kind = GATED_DELTANET
    layer = GDNLayer
    kernel = f"torch: chunked delta rule (chunks of {CHUNK}, a triangular solve each) for prefill, the recurrent step for decode"
    widths_hint = "the head widths"
