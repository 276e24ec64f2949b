"""Switching a layer to MLA from the attention type control: the widths a first switch fits, the layer it implies,
and the note under its widths."""

from __future__ import annotations

from core.arch.config import AttentionConfig
from core.format import format_noun
from core.kinds.mla.spec import MLADims


def fitting_dims(d_model: int) -> MLADims:
    """DeepSeek-V3's widths at its width and above; below it a latent of about d_model / 4 (DeepSeek-V2-Lite: 512 at
    2048) and no low-rank query under 4096 (V2-Lite has none), so a first switch to MLA compresses something."""
    if d_model >= 7168:
        return MLADims()
    rank = max(32, min(512, d_model // 4 // 32 * 32))
    return MLADims(q_lora_rank=1536 if d_model >= 4096 else 0, kv_lora_rank=rank)


def switch_to_mla(cfg: AttentionConfig, dims: MLADims) -> tuple[AttentionConfig, str]:
    """To MLA: the extras an MLA layer has none of are off, its KV heads follow n_heads."""
    H = cfg.n_heads
    new = cfg.with_(widths=dims, n_kv_heads=None, explicit_head_dim=None, bias=False, qk_norm=False, window=None,
                    layer_pattern="global", sinks=False)
    return new, (f"Attention MLA: {format_noun(H, 'head')}, each key and value rebuilt from a "
                 f"{dims.latent_width}-value latent (n_kv_heads follows n_heads); biases, q/k norm, window and sinks "
                 "are off.")


def widths_note(cfg: AttentionConfig) -> str:
    """What an MLA layer caches and rebuilds (n_heads is in it)."""
    m = cfg.widths
    if not isinstance(m, MLADims):
        return ""
    return (f"Caches {m.kv_lora_rank} + {m.qk_rope_head_dim} = {m.latent_width} values a token a layer "
            f"({format_noun(float(f'{m.latent_width / (2 * m.v_head_dim):.3g}'), 'GQA head')} of "
            f"{m.v_head_dim}); {format_noun(cfg.layer_spec().n_heads, 'head')} of q/k {m.qk_head_dim}, "
            f"v {m.v_head_dim} rebuilt from it.")
