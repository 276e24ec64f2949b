"""Lightning attention's exact counts: parameters by projection, and the fixed state a sequence keeps.

The layer (transformers' modeling_minimax.py, MiniMaxLightningAttention): one qkv_proj of 3 x H x h, an RMSNorm of H x
h over the output, an output gate (d_model -> H h) and out_proj back to d_model, no biases. It keeps no KV cache: a
state of H x h x h values (the decayed sum of each head's k v^T), and no convolution.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.kinds.projections import ByProjection


@dataclass(frozen=True)
class LightningShape:
    d_model: int
    n_heads: int  # H
    head_dim: int  # h

    def __post_init__(self) -> None:
        for name in ("d_model", "n_heads", "head_dim"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 2**20:
                raise ValueError(f"lightning attention's {name} must be a whole number from 1 to 1,048,576, not "
                                 f"{value!r:.30}.")


@dataclass(frozen=True)
class LightningParams(ByProjection):
    qkv_proj: int
    norm: int
    output_gate: int
    out_proj: int


def lightning_params(s: LightningShape) -> LightningParams:
    """Parameters by projection, as transformers builds the layer."""
    d, w = s.d_model, s.n_heads * s.head_dim
    return LightningParams(qkv_proj=d * 3 * w, norm=w, output_gate=d * w, out_proj=w * d)


def recurrent_state_values(s: LightningShape) -> int:
    """The state a sequence keeps: H x h x h, whatever its length."""
    return s.n_heads * s.head_dim * s.head_dim
