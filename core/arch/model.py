"""A model's attention as a list of layers: d_model, one LayerSpec per layer, and its kind.

Identical layers are grouped ({spec: count}), so a 62-layer model of two kinds of layer costs two
count evaluations; every whole-model figure is a sum over groups.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from core.arch.layer import LayerSpec

KINDS = ("causal", "encoder")  # an encoder reads its whole input at once and keeps no KV cache
MAX_LAYERS = 4096  # a documented bound: larger counts are refused before anything loops over them


@dataclass(frozen=True)
class Architecture:
    d_model: int
    layers: tuple[LayerSpec, ...]
    kind: str = "causal"

    def __post_init__(self) -> None:
        if isinstance(self.d_model, bool) or not isinstance(self.d_model, int) or self.d_model < 1:
            raise ValueError(f"d_model must be a whole number of at least 1, not {self.d_model!r}.")
        if not 1 <= len(self.layers) <= MAX_LAYERS:
            raise ValueError(f"a model has 1 to {MAX_LAYERS} layers, not {len(self.layers)}.")
        if not all(isinstance(s, LayerSpec) for s in self.layers):
            raise ValueError("every layer must be a LayerSpec.")
        if self.d_model > 2**20:
            raise ValueError(f"d_model must be at most {2**20:,}.")
        for s in set(self.layers):
            if s.n_heads * s.head_dim > 2**24:  # q and o widths: far beyond any model, and beyond our counts' range
                raise ValueError(f"a layer's n_heads x head_dim ({s.n_heads:,} x {s.head_dim:,}) is too wide; "
                                 "at most 16,777,216.")
        if self.kind not in KINDS:
            raise ValueError(f"kind {self.kind!r} is not known; choose causal or encoder.")

    @classmethod
    def uniform(cls, d_model: int, spec: LayerSpec, n_layers: int, kind: str = "causal") -> Architecture:
        if isinstance(n_layers, bool) or not isinstance(n_layers, int) or not 1 <= n_layers <= MAX_LAYERS:
            raise ValueError(f"n_layers must be a whole number from 1 to {MAX_LAYERS}, not {n_layers!r}.")
        return cls(d_model, (spec,) * n_layers, kind)

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    @property
    def is_uniform(self) -> bool:
        return len(set(self.layers)) == 1

    def groups(self) -> list[tuple[LayerSpec, int]]:
        """(spec, how many layers have it), in order of first appearance."""
        return list(Counter(self.layers).items())

    def changed_layers(self, other: Architecture) -> list[int]:
        """Indices of the layers whose spec differs from other's (same depth)."""
        return [i for i, (a, b) in enumerate(zip(self.layers, other.layers, strict=True)) if a != b]

    def change_scope(self, other: Architecture) -> str:
        """Where self differs from other: 'layer 18 only', 'every layer', 'layers 3, 7' or '' (nowhere)."""
        changed = self.changed_layers(other)
        if not changed:
            return ""
        if len(changed) == self.n_layers:
            return "every layer"
        if len(changed) == 1:
            return f"layer {changed[0]} only"
        return "layers " + ", ".join(map(str, changed[:6])) + (" …" if len(changed) > 6 else "")

    def with_layers(self, indices: list[int] | range, spec: LayerSpec) -> Architecture:
        layers = list(self.layers)
        for i in indices:
            layers[i] = spec
        return Architecture(self.d_model, tuple(layers), self.kind)

    def to_dict(self) -> dict[str, Any]:
        """Run-length encoded: [{"spec": {...}, "count": n}, ...] in layer order."""
        runs: list[dict[str, Any]] = []
        for spec in self.layers:
            if runs and runs[-1]["spec"] == spec.to_dict():
                runs[-1]["count"] += 1
            else:
                runs.append({"spec": spec.to_dict(), "count": 1})
        return {"d_model": self.d_model, "kind": self.kind, "layers": runs}

    @classmethod
    def from_dict(cls, data: Any) -> Architecture:
        if not isinstance(data, dict):
            raise ValueError("the architecture must be an object with d_model, kind and layers.")
        runs = data.get("layers")
        if not isinstance(runs, list) or not runs:
            raise ValueError("the architecture's layers must be a non-empty list of {spec, count}.")
        layers: list[LayerSpec] = []
        for run in runs:
            count = run.get("count") if isinstance(run, dict) else None
            if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_LAYERS - len(layers):
                raise ValueError(f"a run of layers needs a count from 1 to {MAX_LAYERS} layers in all.")
            layers += [LayerSpec.from_dict(run.get("spec"))] * count
        return cls(data.get("d_model"), tuple(layers), data.get("kind", "causal"))  # type: ignore[arg-type]
