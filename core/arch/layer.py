"""One attention layer's shape, validated on construction (torch-free: widgets read it).

A model is a tuple of these (core/arch/model.py), so a real model changed in one layer, and the
layouts of later issues (windows, sinks, latent KV), are lists of layers rather than one triple
repeated n_layers times.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

LAYER_MAXIMA = {"n_heads": 2**16, "n_kv_heads": 2**16, "head_dim": 2**20}  # as AttentionConfig's maxima


@dataclass(frozen=True)
class LayerSpec:
    n_heads: int  # query heads
    n_kv_heads: int  # key/value heads (a divisor of n_heads)
    head_dim: int  # width of one head
    bias: bool = False  # biases on the q, k, v and o projections

    def __post_init__(self) -> None:
        for name in ("n_heads", "n_kv_heads", "head_dim"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= LAYER_MAXIMA[name]:
                shown = repr(value) if len(repr(value)) <= 24 else "a huge or odd value"
                raise ValueError(f"a layer's {name} must be a whole number from 1 to {LAYER_MAXIMA[name]:,}, "
                                 f"not {shown}.")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"a layer's n_kv_heads={self.n_kv_heads} does not divide its n_heads={self.n_heads}; "
                             "choose a divisor.")
        if not isinstance(self.bias, bool):
            raise ValueError(f"a layer's bias must be true or false, not {self.bias!r}.")

    @property
    def group_size(self) -> int:
        return self.n_heads // self.n_kv_heads

    @property
    def mode(self) -> str:
        if self.n_kv_heads == self.n_heads:
            return "MHA"
        return "MQA" if self.n_kv_heads == 1 else "GQA"

    @property
    def label(self) -> str:
        """MHA, GQA-8 (group 4) or MQA, as the badge shows it."""
        return f"GQA-{self.n_kv_heads} (group {self.group_size})" if self.mode == "GQA" else self.mode

    @property
    def kv_width(self) -> int:
        """Values cached per token for K (and as many for V): n_kv_heads x head_dim."""
        return self.n_kv_heads * self.head_dim

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> LayerSpec:
        if not isinstance(data, dict):
            raise ValueError(f"a layer must be an object of n_heads, n_kv_heads, head_dim, bias, not {data!r:.60}.")
        unknown = sorted(repr(k)[:20] for k in set(data) - {"n_heads", "n_kv_heads", "head_dim", "bias"})
        if unknown:
            raise ValueError(f"unknown layer field(s): {', '.join(unknown)}.")
        missing = [k for k in ("n_heads", "n_kv_heads", "head_dim") if k not in data]
        if missing:
            raise ValueError(f"a layer needs n_heads, n_kv_heads and head_dim; this one lacks {', '.join(missing)}.")
        return cls(**data)
