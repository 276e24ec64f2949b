"""Gated DeltaNet's exact counts: parameters by projection, and the fixed state a sequence keeps.

The layer (transformers' modeling_qwen3_next.py, Qwen3NextGatedDeltaNet): in_proj_qkvz maps d to queries and keys
(H_k x d_k each), values and the output gate z (H_v x d_v each); in_proj_ba to the gates b and a (H_v each); a
depthwise causal convolution of kernel k over q, k and v (conv_dim = 2 H_k d_k + H_v d_v channels, no bias); per
value head a decay A_log and a dt_bias; a gated RMSNorm of width d_v; out_proj maps H_v d_v back to d. It keeps no
KV cache: a recurrent state of H_v x d_k x d_v values and a convolution state of conv_dim x (k - 1) (what vLLM-style
engines keep; transformers' cache keeps the kernel's full width k).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.kinds.projections import ByProjection


@dataclass(frozen=True)
class GDNShape:
    d_model: int
    n_k_heads: int  # H_k: key (and query) heads
    n_v_heads: int  # H_v: value heads, a multiple of H_k
    k_head_dim: int  # d_k
    v_head_dim: int  # d_v
    conv_kernel: int = 4  # k

    def __post_init__(self) -> None:
        for name in ("d_model", "n_k_heads", "n_v_heads", "k_head_dim", "v_head_dim", "conv_kernel"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 2**20:
                raise ValueError(f"Gated DeltaNet's {name} must be a whole number from 1 to 1,048,576, not "
                                 f"{value!r:.30}.")
        if self.n_v_heads % self.n_k_heads:
            raise ValueError(f"Gated DeltaNet's {self.n_v_heads} value heads must be a multiple of its "
                             f"{self.n_k_heads} key heads (each key head serves a group of value heads).")

    @property
    def key_dim(self) -> int:
        return self.n_k_heads * self.k_head_dim

    @property
    def value_dim(self) -> int:
        return self.n_v_heads * self.v_head_dim

    @property
    def conv_dim(self) -> int:
        """Channels the short convolution runs over: q, k and v."""
        return 2 * self.key_dim + self.value_dim


@dataclass(frozen=True)
class GDNParams(ByProjection):
    in_proj_qkvz: int
    in_proj_ba: int
    conv1d: int
    dt_bias: int
    a_log: int
    norm: int
    out_proj: int


def gdn_params(s: GDNShape) -> GDNParams:
    """Parameters by projection, as transformers builds the layer."""
    d = s.d_model
    return GDNParams(in_proj_qkvz=d * (2 * s.key_dim + 2 * s.value_dim), in_proj_ba=d * 2 * s.n_v_heads,
                     conv1d=s.conv_dim * s.conv_kernel, dt_bias=s.n_v_heads, a_log=s.n_v_heads, norm=s.v_head_dim,
                     out_proj=s.value_dim * d)


def recurrent_state_values(s: GDNShape) -> int:
    """The delta rule's matrix state a sequence keeps: H_v x d_k x d_v, whatever its length."""
    return s.n_v_heads * s.k_head_dim * s.v_head_dim


def conv_state_values(s: GDNShape, full_kernel: bool = False) -> int:
    """The convolution's state: conv_dim x (k - 1) as engines keep it; x k as transformers' cache does."""
    return s.conv_dim * (s.conv_kernel if full_kernel else s.conv_kernel - 1)
