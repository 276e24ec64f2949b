"""Mamba-1's widths (Jamba's mixers), validated on construction.

Its d_inner channels each keep an N-wide state with a decay of their own; all of them share one B and one C a token,
so the layer has no heads: the spec's n_heads and n_kv_heads are 1, its head_dim d_inner. Every Jamba layer has a
bias on its convolution, none on its in and out projections, and RMSNorms on dt, B and C, as counted here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from core.kinds.mixer_widths import MIXER_MAX, MixerWidths
from core.kinds.widths import WidthControl


@dataclass(frozen=True)
class Mamba1Widths(MixerWidths):
    d_inner: int = 8192  # the inner channels (Jamba: expand 2 x d_model 4096)
    state_size: int = 16  # N: each channel's state
    dt_rank: int = 256  # R: the low rank of the step size's projection
    conv_kernel: int = 4  # k

    kind: ClassVar[str] = "mamba1"
    mode: ClassVar[str] = "Mamba-1"
    title: ClassVar[str] = "Mamba-1"
    letter: ClassVar[str] = "S"
    head_field: ClassVar[str] = "d_inner"
    kv_rule: ClassVar[str] = "equal"
    kv_name: ClassVar[str] = "heads"
    heads_rule: ClassVar[str] = "a Mamba-1 layer has no heads: its channels share one B and C"
    lows: ClassVar[dict[str, int]] = {"conv_kernel": 2}
    controls: ClassVar[tuple[WidthControl, ...]] = (
        WidthControl("d_inner", "d_inner", "The inner channels, each with its own state and decay (Jamba: 2 x 4096 = "
                     "8192).", 1, MIXER_MAX, 256),
        WidthControl("state_size", "d_state (N)", "Each channel's state width (Jamba: 16); a sequence keeps d_inner x "
                     "N values.", 1, MIXER_MAX, 4),
        WidthControl("dt_rank", "dt_rank", "The low rank the step size is projected through (Jamba: 256).", 1,
                     MIXER_MAX, 16),
        WidthControl("conv_kernel", "conv kernel", "The short causal convolution over x (4).", 2, 64, 1),
    )

    @property
    def label(self) -> str:
        return f"Mamba-1 ({self.d_inner} channels x N {self.state_size})"

    def check_heads(self, n_heads: object, n_kv_heads: object, head_dim: object) -> None:
        super().check_heads(n_heads, n_kv_heads, head_dim)
        if n_heads is not None and n_heads != 1:
            raise ValueError(f"a Mamba-1 layer has no heads (its {self.d_inner} channels share one B and C), so "
                             f"n_heads is 1, not {n_heads!r:.20}.")
