"""Gated softmax attention's exact counts: a standard layer whose q_proj also makes a per-channel output gate.

The layer (transformers' modeling_qwen3_next.py, Qwen3NextAttention): q_proj maps d to H x h queries and H x h gate
values (2 H h rows), k_proj and v_proj to K x h each, q/k RMSNorms of width h, o_proj maps H h back to d; the gate
multiplies the attention output by sigmoid(gate) before o_proj. Its cache is a standard layer's K and V.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.kinds.projections import ByProjection


@dataclass(frozen=True)
class GatedAttentionShape:
    d_model: int
    n_heads: int  # H
    n_kv_heads: int  # K
    head_dim: int  # h
    qk_norm: bool = True
    bias: bool = False

    def __post_init__(self) -> None:
        for name in ("d_model", "n_heads", "n_kv_heads", "head_dim"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 2**20:
                raise ValueError(f"gated attention's {name} must be a whole number from 1 to 1,048,576, not "
                                 f"{value!r:.30}.")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"gated attention's {self.n_kv_heads} KV heads must divide its {self.n_heads} heads.")


@dataclass(frozen=True)
class GatedAttentionParams(ByProjection):
    q_proj: int  # queries and the gate
    k_proj: int
    v_proj: int
    o_proj: int
    qk_norm: int


def gated_attention_params(s: GatedAttentionShape) -> GatedAttentionParams:
    d, q, kv = s.d_model, s.n_heads * s.head_dim, s.n_kv_heads * s.head_dim
    b = 1 if s.bias else 0
    return GatedAttentionParams(q_proj=d * 2 * q + b * 2 * q, k_proj=d * kv + b * kv, v_proj=d * kv + b * kv,
                                o_proj=q * d + b * d, qk_norm=2 * s.head_dim if s.qk_norm else 0)


def kv_values_per_token(s: GatedAttentionShape) -> int:
    """A standard layer's cache: K and V of every KV head."""
    return 2 * s.n_kv_heads * s.head_dim
