"""KDA's exact counts: parameters by projection, and the fixed state a sequence keeps.

The layer (transformers' modeling_kimi_linear.py, KimiLinearDeltaAttention): q, k and v projections of H x d each; a
depthwise causal convolution of kernel k over the three (3 H d channels, no bias); the per-channel forget gate, a
low-rank f_a (d_model -> d) then f_b (d -> H d) with a dt_bias a channel and an A_log a head; the beta gate b_proj
(one a head); the output gate, a low-rank g_a then g_b; a gated RMSNorm of width d; o_proj back to d_model. It keeps
no KV cache: a state of H x d x d values (keys and values are d wide) and a convolution state of 3 H d x (k - 1)
(engines; transformers' cache keeps k).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.kinds.projections import ByProjection


@dataclass(frozen=True)
class KDAShape:
    d_model: int
    n_heads: int  # H
    head_dim: int  # d: a head's key and value width, and the gates' low rank
    conv_kernel: int = 4  # k

    def __post_init__(self) -> None:
        for name in ("d_model", "n_heads", "head_dim", "conv_kernel"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 2**20:
                raise ValueError(f"KDA's {name} must be a whole number from 1 to 1,048,576, not {value!r:.30}.")

    @property
    def width(self) -> int:
        """H x d: the width of q, k and v."""
        return self.n_heads * self.head_dim


@dataclass(frozen=True)
class KDAParams(ByProjection):
    q_proj: int
    k_proj: int
    v_proj: int
    conv1d: int
    forget_gate: int
    b_proj: int
    output_gate: int
    o_norm: int
    o_proj: int


def kda_params(s: KDAShape) -> KDAParams:
    """Parameters by projection, as transformers builds the layer."""
    d, w, r = s.d_model, s.width, s.head_dim
    return KDAParams(q_proj=d * w, k_proj=d * w, v_proj=d * w, conv1d=3 * w * s.conv_kernel,
                     forget_gate=d * r + r * w + w + s.n_heads, b_proj=d * s.n_heads, output_gate=d * r + r * w,
                     o_norm=r, o_proj=w * d)


def recurrent_state_values(s: KDAShape) -> int:
    """The state a sequence keeps: H x d x d, whatever its length."""
    return s.n_heads * s.head_dim * s.head_dim


def conv_state_values(s: KDAShape, full_kernel: bool = False) -> int:
    """The convolution's state: 3 H d x (k - 1) as engines keep it; x k as transformers' cache does."""
    return 3 * s.width * (s.conv_kernel if full_kernel else s.conv_kernel - 1)
