"""Which head counts a trained layer can be changed to (torch-free: the sliders snap to these).

The sliders show the resulting layer: n_heads H' (the width re-split) and n_kv_heads K'. The KV
heads are first mean-pooled from the model's K to P (P divides K, never more than K), then the
re-split keeps the sharing ratio, so K' = H' * P / H.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.arch.config import divisors
from core.arch.layer import LayerSpec
from core.arch.model import Architecture


@dataclass(frozen=True)
class ModelShape:
    name: str
    kind: str  # causal or encoder
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_model: int
    bias: bool
    max_tokens: int = 0  # the longest input it reads (0: not known)

    @classmethod
    def of(cls, m: Any) -> ModelShape:
        """What the counts need of a loaded model (core/models/source.py's LoadedModel): an encoder's BERT layers
        carry biases, the causal models the app reads none."""
        return cls(m.name, m.kind, m.n_layers, m.n_heads, m.n_kv_heads, m.head_dim, m.d_model, bias=m.kind == "encoder",
                   max_tokens=m.max_tokens)

    @property
    def width(self) -> int:
        return self.n_heads * self.head_dim

    def pool_targets(self) -> list[int]:
        return divisors(self.n_kv_heads)

    def head_choices(self) -> list[int]:
        """H' that split the width evenly and leave at least one whole KV sharing."""
        return [h for h in divisors(self.width)
                if any((h * p) % self.n_heads == 0 for p in self.pool_targets())]

    def kv_choices(self, heads: int) -> list[int]:
        """K' reachable with H' = heads: H' * P / H for every pooling target P that makes it whole."""
        return sorted({heads * p // self.n_heads for p in self.pool_targets() if (heads * p) % self.n_heads == 0})

    def pool_for(self, heads: int, kv_heads: int) -> int:
        """The pooling target P behind a slider pair (H', K')."""
        p, rem = divmod(kv_heads * self.n_heads, heads)
        if rem or p not in self.pool_targets():
            raise ValueError(f"{kv_heads} KV heads with {heads} heads is not reachable from {self.name}'s "
                             f"{self.n_kv_heads} KV heads; choose one of {self.kv_choices(heads)}.")
        return p

    def why_kv_choices(self, heads: int) -> str:
        """Why only kv_choices(heads) can be reached with `heads` heads."""
        return (f"With {heads} heads only {', '.join(map(str, self.kv_choices(heads)))} KV heads can be reached: "
                f"{self.name}'s {self.n_kv_heads} KV heads are pooled to P (a divisor of {self.n_kv_heads}) and "
                f"re-split with the heads, so n_kv_heads = {heads} x P / {self.n_heads} must be whole.")

    def why_not_more_kv(self) -> str:
        return (f"{self.name} was trained with {self.n_kv_heads} KV heads: fewer can be made by mean-pooling "
                "(as the GQA paper converts checkpoints), more cannot without training.")

    def architecture(self) -> Architecture:
        """The model as trained: every layer alike."""
        spec = LayerSpec(self.n_heads, self.n_kv_heads, self.head_dim, self.bias)
        return Architecture.uniform(self.d_model, spec, self.n_layers, self.kind)

    def changed(self, heads: int, kv_heads: int, layer: int, all_layers: bool) -> Architecture:
        """The model with `layer` (or every layer) re-split to `heads` heads and `kv_heads` KV heads."""
        native = self.architecture()
        if (heads, kv_heads) == (self.n_heads, self.n_kv_heads):
            return native
        self.pool_for(heads, kv_heads)  # raises when the pair is not reachable
        spec = LayerSpec(heads, kv_heads, self.width // heads, self.bias)
        return native.with_layers(range(self.n_layers) if all_layers else [layer], spec)
