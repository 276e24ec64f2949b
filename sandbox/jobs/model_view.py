"""What the window shows of a real model's layer: plain arrays, made in the worker (sandbox/jobs/model_compute.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ModelView:
    key: str  # the model's key or folder
    layer: int
    all_layers: bool
    overview: np.ndarray  # (L * H, T, T): every layer's native heads, layer-major
    before: np.ndarray  # (H, T, T): the chosen layer as trained
    after: np.ndarray | None  # (H', T, T): the chosen layer changed, or None when unchanged
    fidelity: dict  # InspectResult.to_json() without the tokens
    n_text_tokens: int
    roles: dict[str, np.ndarray]  # {role: (L, H)} scores of every trained head
    shown_roles: dict[str, np.ndarray]  # {role: (H_shown,)} of the heads on screen (changed or not)
    overview_changed: np.ndarray | None = None  # (L * H', T, T): every layer changed, when the change is everywhere
    kept: tuple[np.ndarray, np.ndarray] | None = None  # an eviction's (K, T) kept keys and their scores, this layer
