"""Whether a timing run of a configuration fits its device, counted by the layer's kind before anything is
allocated (the CLI refuses a run that would not fit before it estimates its time)."""

from __future__ import annotations

import torch

from core.arch.config import AttentionConfig
from core.device import MemoryCheck, check_bytes, guard_bytes
from core.kinds.registry import kind_of


def check_memory(cfg: AttentionConfig, device: torch.device, materialises_scores: bool = False,
                 free_bytes: int | None = None) -> MemoryCheck:
    return check_bytes(kind_of(cfg.layer_spec()).timing_bytes(cfg, materialises_scores), device, free_bytes)


def guard_memory(cfg: AttentionConfig, device: torch.device, materialises_scores: bool = False,
                 free_bytes: int | None = None) -> MemoryCheck:
    """Raise ValueError, before anything is allocated, when the run would not fit."""
    kind = kind_of(cfg.layer_spec())
    return guard_bytes(kind.timing_bytes(cfg, materialises_scores), device, free_bytes, kind.memory_hint())
