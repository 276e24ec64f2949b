"""Gated DeltaNet's widths (Qwen3-Next, Qwen3.5, OLMo-Hybrid), validated on construction.

The layer's value heads are the spec's n_heads (each keeps its own d_k x d_v state and decay) and its key heads the
spec's n_kv_heads (each query/key head serves a group of value heads, as GQA's KV heads serve query heads).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from core.kinds.mixer_widths import MIXER_MAX, MixerWidths
from core.kinds.widths import WidthControl


@dataclass(frozen=True)
class GDNWidths(MixerWidths):
    k_head_dim: int = 128  # d_k: a query/key head's width (the state's rows)
    v_head_dim: int = 128  # d_v: a value head's width (the state's columns)
    conv_kernel: int = 4  # k: the short causal convolution over q, k and v

    kind: ClassVar[str] = "gated_deltanet"
    mode: ClassVar[str] = "GDN"
    title: ClassVar[str] = "Gated DeltaNet"
    letter: ClassVar[str] = "D"
    head_field: ClassVar[str] = "k_head_dim"
    kv_rule: ClassVar[str] = "any"
    kv_name: ClassVar[str] = "key heads"
    heads_rule: ClassVar[str] = "a Gated DeltaNet layer's n_heads are its value heads, its n_kv_heads its key heads"
    lows: ClassVar[dict[str, int]] = {"conv_kernel": 2}
    controls: ClassVar[tuple[WidthControl, ...]] = (
        WidthControl("k_head_dim", "d_k (key head)", "A query/key head's width: the rows of each value head's state "
                     "(Qwen3-Next: 128). n_kv_heads is the number of key heads (Qwen3-Next: 16).", 1, MIXER_MAX, 16),
        WidthControl("v_head_dim", "d_v (value head)", "A value head's width: the columns of its d_k x d_v state "
                     "(Qwen3-Next: 128). n_heads is the number of value heads (Qwen3-Next: 32).", 1, MIXER_MAX, 16),
        WidthControl("conv_kernel", "conv kernel", "The short causal convolution over q, k and v (4 in every model "
                     "of this family); engines keep its last k - 1 inputs as state.", 2, 64, 1),
    )

    @property
    def label(self) -> str:
        return f"Gated DeltaNet (state {self.k_head_dim} x {self.v_head_dim})"
