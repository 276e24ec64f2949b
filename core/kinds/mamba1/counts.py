"""Mamba-1's exact counts: parameters by projection, and the fixed state a sequence keeps.

The layer (transformers' modeling_jamba.py, JambaMambaMixer): in_proj maps d to x and the gate z (d_inner = expand x d
each); a depthwise causal convolution of kernel k over x (with a bias when conv_bias); x_proj maps d_inner to dt (rank
R), B and C (N each); dt_proj maps R back to d_inner (with a bias); A_log (d_inner x N) and D (d_inner); Jamba's
RMSNorms on dt, B and C; out_proj maps d_inner back to d (with a bias when proj_bias). It keeps no KV cache: an SSM
state of d_inner x N values and a convolution state of d_inner x (k - 1) (engines; transformers' cache keeps k).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.kinds.projections import ByProjection


@dataclass(frozen=True)
class Mamba1Shape:
    d_model: int
    state_size: int = 16  # N
    expand: int = 2
    dt_rank: int = 256  # R
    conv_kernel: int = 4  # k
    conv_bias: bool = True
    proj_bias: bool = False
    inner_norms: bool = True  # Jamba's RMSNorms on dt, B and C
    inner: int | None = None  # d_inner given outright (a layer kind's widths); None: expand x d_model

    def __post_init__(self) -> None:
        for name in ("d_model", "state_size", "expand", "dt_rank", "conv_kernel"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 2**20:
                raise ValueError(f"Mamba-1's {name} must be a whole number from 1 to 1,048,576, not {value!r:.30}.")

    @property
    def d_inner(self) -> int:
        return self.inner if self.inner is not None else self.expand * self.d_model


@dataclass(frozen=True)
class Mamba1Params(ByProjection):
    in_proj: int
    conv1d: int
    x_proj: int
    dt_proj: int
    a_log: int
    d_skip: int
    inner_norms: int
    out_proj: int


def mamba1_params(s: Mamba1Shape) -> Mamba1Params:
    """Parameters by projection, as transformers builds Jamba's mixer."""
    d, inner, n, r = s.d_model, s.d_inner, s.state_size, s.dt_rank
    return Mamba1Params(in_proj=d * 2 * inner + (2 * inner if s.proj_bias else 0),
                        conv1d=inner * s.conv_kernel + (inner if s.conv_bias else 0),
                        x_proj=inner * (r + 2 * n), dt_proj=r * inner + inner, a_log=inner * n, d_skip=inner,
                        inner_norms=(r + 2 * n) if s.inner_norms else 0,
                        out_proj=inner * d + (d if s.proj_bias else 0))


def ssm_state_values(s: Mamba1Shape) -> int:
    """The state a sequence keeps: d_inner x N, whatever its length."""
    return s.d_inner * s.state_size


def conv_state_values(s: Mamba1Shape, full_kernel: bool = False) -> int:
    """The convolution's state: d_inner x (k - 1) as engines keep it; x k as transformers' cache does."""
    return s.d_inner * (s.conv_kernel if full_kernel else s.conv_kernel - 1)
