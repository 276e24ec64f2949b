"""Mamba-2's exact counts: parameters by projection, and the fixed state a sequence keeps.

The layer (transformers' modeling_nemotron_h.py, NemotronHMamba2Mixer): in_proj maps d to the gate z and x (d_inner
= H x P each), B and C (G x N each: groups of the state width) and dt (H); a depthwise causal convolution of kernel
k over x, B and C (conv_dim = d_inner + 2 G N channels, with a bias when use_conv_bias); per head A_log, D and
dt_bias; a gated RMSNorm of width d_inner; out_proj maps d_inner back to d (with a bias when use_bias). It keeps no
KV cache: an SSM state of H x P x N values and a convolution state of conv_dim x (k - 1) (engines; transformers'
cache keeps the kernel's full width k).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.kinds.projections import ByProjection


@dataclass(frozen=True)
class Mamba2Shape:
    d_model: int
    n_heads: int  # H
    head_dim: int  # P
    state_size: int  # N
    n_groups: int = 1  # G: heads that share one B and C
    conv_kernel: int = 4  # k
    conv_bias: bool = True
    proj_bias: bool = False

    def __post_init__(self) -> None:
        for name in ("d_model", "n_heads", "head_dim", "state_size", "n_groups", "conv_kernel"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 2**20:
                raise ValueError(f"Mamba-2's {name} must be a whole number from 1 to 1,048,576, not {value!r:.30}.")
        if self.n_heads % self.n_groups:
            raise ValueError(f"Mamba-2's {self.n_groups} groups must divide its {self.n_heads} heads.")

    @property
    def d_inner(self) -> int:
        return self.n_heads * self.head_dim

    @property
    def conv_dim(self) -> int:
        """Channels the short convolution runs over: x, B and C."""
        return self.d_inner + 2 * self.n_groups * self.state_size


@dataclass(frozen=True)
class Mamba2Params(ByProjection):
    in_proj: int
    conv1d: int
    dt_bias: int
    a_log: int
    d_skip: int
    norm: int
    out_proj: int


def mamba2_params(s: Mamba2Shape) -> Mamba2Params:
    """Parameters by projection, as transformers builds the mixer."""
    d, inner = s.d_model, s.d_inner
    projected = 2 * inner + 2 * s.n_groups * s.state_size + s.n_heads  # z, x, B, C, dt
    return Mamba2Params(in_proj=d * projected + (projected if s.proj_bias else 0),
                        conv1d=s.conv_dim * s.conv_kernel + (s.conv_dim if s.conv_bias else 0),
                        dt_bias=s.n_heads, a_log=s.n_heads, d_skip=s.n_heads, norm=inner,
                        out_proj=inner * d + (d if s.proj_bias else 0))


def ssm_state_values(s: Mamba2Shape) -> int:
    """The state a sequence keeps: H x P x N, whatever its length."""
    return s.n_heads * s.head_dim * s.state_size


def conv_state_values(s: Mamba2Shape, full_kernel: bool = False) -> int:
    """The convolution's state: conv_dim x (k - 1) as engines keep it; x k as transformers' cache does."""
    return s.conv_dim * (s.conv_kernel if full_kernel else s.conv_kernel - 1)
