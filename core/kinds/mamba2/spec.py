"""Mamba-2's widths (Nemotron-H, Granite 4.0-H, Falcon-H1, Bamba), validated on construction.

The layer's SSM heads are the spec's n_heads and its groups (heads that share one B and C) the spec's n_kv_heads, as
GQA's KV heads are shared by query heads; its head width P is the spec's head_dim. Every model of the family has a
bias on its convolution and none on its projections, as counted here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from core.kinds.mixer_widths import MIXER_MAX, MixerWidths
from core.kinds.widths import WidthControl


@dataclass(frozen=True)
class Mamba2Widths(MixerWidths):
    head_dim: int = 64  # P: a head's channels (d_inner = n_heads x P)
    state_size: int = 128  # N: the state's width per channel (B and C are N wide per group)
    conv_kernel: int = 4  # k: the short causal convolution over x, B and C

    kind: ClassVar[str] = "mamba2"
    mode: ClassVar[str] = "Mamba-2"
    title: ClassVar[str] = "Mamba-2"
    letter: ClassVar[str] = "M"
    head_field: ClassVar[str] = "head_dim"
    kv_rule: ClassVar[str] = "any"
    kv_name: ClassVar[str] = "groups"
    heads_rule: ClassVar[str] = "a Mamba-2 layer's n_heads are its SSM heads, its n_kv_heads its groups of B and C"
    lows: ClassVar[dict[str, int]] = {"conv_kernel": 2}
    controls: ClassVar[tuple[WidthControl, ...]] = (
        WidthControl("head_dim", "head_dim (P)", "An SSM head's channels; d_inner = n_heads x P (Nemotron-H: 128 heads "
                     "x 64). n_kv_heads is the number of groups sharing one B and C (Nemotron-H: 8).", 1, MIXER_MAX, 8),
        WidthControl("state_size", "d_state (N)", "The state's width per channel: each head keeps P x N values "
                     "(Nemotron-H and Granite 4.0-H: 128).", 1, MIXER_MAX, 16),
        WidthControl("conv_kernel", "conv kernel", "The short causal convolution over x, B and C (4); engines keep its "
                     "last k - 1 inputs as state.", 2, 64, 1),
    )

    @property
    def label(self) -> str:
        return f"Mamba-2 (P {self.head_dim}, N {self.state_size})"
