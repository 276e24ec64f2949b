"""MLA beside GQA at equal KV bytes: the grouped layer whose cache per token comes closest to an MLA latent.

DeepSeek-V2's paper puts MLA's cache at 2.25 GQA groups of its head width; a real GQA layer needs a whole
number of KV heads that divides n_heads, so the partner is the nearest such count (DeepSeek-V3: 2 heads of
128, 1,024 B a token a layer in bf16 against the latent's 1,152 B), with the same d_model, n_heads and the
MLA layer's value width as its head_dim.
"""

from __future__ import annotations

from core.arch.config import AttentionConfig, nearest, valid_n_kv_heads
from core.kinds.mla.counts import equivalent_gqa_heads


def equal_kv_gqa(cfg: AttentionConfig) -> AttentionConfig:
    """cfg's MLA layer's standard partner: same width, heads and workload; KV heads nearest the latent's bytes."""
    if cfg.widths is None:
        raise ValueError("the equal-KV GQA partner is defined for an MLA layer; choose attention MLA first.")
    spec = cfg.layer_spec()
    heads = nearest(round(equivalent_gqa_heads(spec)) or 1, valid_n_kv_heads(cfg.n_heads))
    width = cfg.widths.v_head_dim
    return cfg.with_(widths=None, n_kv_heads=heads,
                     explicit_head_dim=None if width * cfg.n_heads == cfg.d_model else width)
