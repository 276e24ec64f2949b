"""KDA's widths (Kimi Delta Attention, Kimi Linear), validated on construction.

Every head has its own query, key and value of one width d (the spec's head_dim), which is also the low rank of the
forget and output gates' projections; the spec's n_kv_heads equals its n_heads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from core.kinds.mixer_widths import MIXER_MAX, MixerWidths
from core.kinds.widths import WidthControl


@dataclass(frozen=True)
class KDAWidths(MixerWidths):
    head_dim: int = 128  # d: a head's query, key and value width, and the gates' rank
    conv_kernel: int = 4  # k: the short causal convolution over q, k and v

    kind: ClassVar[str] = "kda"
    mode: ClassVar[str] = "KDA"
    title: ClassVar[str] = "KDA"
    letter: ClassVar[str] = "K"
    head_field: ClassVar[str] = "head_dim"
    kv_rule: ClassVar[str] = "equal"
    kv_name: ClassVar[str] = "heads"
    heads_rule: ClassVar[str] = "a KDA layer gives every head its own query, key and value"
    lows: ClassVar[dict[str, int]] = {"conv_kernel": 2}
    controls: ClassVar[tuple[WidthControl, ...]] = (
        WidthControl("head_dim", "head_dim (d)", "A head's query, key and value width, and the low rank of its forget "
                     "and output gates (Kimi Linear: 32 heads of 128); each head keeps a d x d state.", 1, MIXER_MAX, 16),
        WidthControl("conv_kernel", "conv kernel", "The short causal convolution over q, k and v (4); engines keep "
                     "its last k - 1 inputs as state.", 2, 64, 1),
    )

    @property
    def label(self) -> str:
        return f"KDA (state {self.head_dim} x {self.head_dim}, per-channel decay)"
