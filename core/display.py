"""What draws a layer's heatmaps, whatever its kind: each kind's kernels supply its display layer (an object whose
probs_and_sinks(x) gives per-head probabilities), and the kind the bytes its weights hold."""

from __future__ import annotations

from typing import Any

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.kinds.kernels import kernels_of
from core.kinds.registry import kind_of


def display_layer(cfg: AttentionConfig, seed: int = 0, spec: LayerSpec | None = None) -> Any:
    """The display layer of cfg's layer spec (default layer 0), drawn from seed."""
    spec = spec or cfg.layer_spec()
    return kernels_of(spec).display_layer(cfg, seed, spec)


def display_bytes(cfg: AttentionConfig) -> int:
    """Float32 bytes of the weights cfg's display layer holds."""
    return kind_of(cfg.layer_spec()).display_bytes(cfg)
