"""Switching a configuration from one layer kind to another, as the attention type control does."""

from __future__ import annotations

from core.arch.config import AttentionConfig
from core.format import format_bytes
from core.kinds.registry import KINDS, kind_named
from core.kinds.widths import KindWidths


def switch_kind(cfg: AttentionConfig, name: str, widths: KindWidths | None) -> tuple[AttentionConfig, str]:
    """The layer cfg becomes as kind name (with widths, for a kind that has its own), and the sentence that says
    what moved, its cache a token a layer included."""
    new, message = kind_named(name).switch_to(cfg, widths)
    return new, f"{message} {kv_move(cfg, new)}"


def switch_key(cfg: AttentionConfig) -> tuple[object, ...]:
    """What a switch's sentence names: while these stay, it still describes the layer."""
    return cfg.d_model, cfg.n_heads, cfg.kv_heads, cfg.widths, cfg.kv_format


def kv_move(old: AttentionConfig, new: AttentionConfig) -> str:
    """'KV cache a token a layer: 2,304 B -> 57 KiB.'"""
    a, b = (KINDS[c.attention].cache_bytes_per_token(c.layer_spec(), c.kv_format) for c in (old, new))
    return f"KV cache a token a layer: {format_bytes(a)} -> {format_bytes(b)}."
