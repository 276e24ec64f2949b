"""The costs panel's rows for an MLA layer: its two caches, its latent as GQA heads, each form's decode intensity,
and the formulas (tooltips) of the rows every layer shares, written for MLA. Torch-free: counts only."""

from __future__ import annotations

from typing import Any

from core.arch.config import AttentionConfig
from core.arch.formats import bytes_per_value
from core.arch.layer import LayerSpec
from core.format import format_bytes
from core.kinds.mla.counts import (
    decode_intensity,
    decompressed_bytes_per_token,
    equivalent_gqa_heads,
    latent_bytes_per_token,
    usual_form,
)


def show_mla_costs(panel: Any, cfg: AttentionConfig, spec: LayerSpec, d: int, where: str) -> None:
    """Fill panel's MLA rows for spec (an MLA layer) and put the MLA formulas in the shared rows' tooltips."""
    m = spec.mla
    assert m is not None
    H, B, T, L = spec.n_heads, cfg.batch_size, cfg.seq_len, cfg.n_layers
    fmt, kb = cfg.kv_format, bytes_per_value(cfg.kv_format)
    latent, full = latent_bytes_per_token(spec, fmt), decompressed_bytes_per_token(spec, fmt)
    panel._set("mla_kv", f"{latent:,} B", f"| {format_bytes(full)}",
               f"The latent cache: (kv_lora_rank + rope) x bytes = ({m.kv_lora_rank} + {m.qk_rope_head_dim}) x {kb:g} "
               f"= {latent:,} B a token a layer (DeepSeek's code, vLLM, SGLang, FlashMLA and transformers 5 keep "
               f"this). Decompressed into per-head keys and values: {H} x ({m.qk_head_dim} + {m.v_head_dim}) x {kb:g} "
               f"= {full:,} B (x{full / latent:.1f}), what an engine without MLA kernels keeps. Both a token a layer. "
               "Under tensor parallelism the latent cannot be split by heads: every GPU keeps all of it (DeepSeek "
               "serves attention data-parallel for this reason), where GQA's KV heads are split across GPUs.")
    panel._set("head_dim", str(spec.head_dim), f"{m.qk_nope_head_dim} + {m.qk_rope_head_dim}",
               f"An MLA head's query and key are qk_nope + qk_rope = {m.qk_nope_head_dim} + {m.qk_rope_head_dim} = "
               f"{m.qk_head_dim} wide (the softmax scale is 1/sqrt of it), its value v_head_dim = {m.v_head_dim}.")
    heads = equivalent_gqa_heads(spec)
    panel._set("mla_equiv", f"{heads:.3g}", f"of width {m.v_head_dim}",
               f"The latent's {m.latent_width} values a token equal {heads:.3g} GQA KV heads of width {m.v_head_dim} "
               "(each a key and a value): DeepSeek-V2's '2.25 groups'. The Latent vs grouped lesson runs MLA beside "
               "the GQA layer nearest it.")
    naive, absorbed = (decode_intensity(spec, T, B, fmt, form) for form in ("naive", "absorbed"))
    panel._set("mla_decode", f"{absorbed:,.1f}", f"naive {naive:,.1f}",
               f"Core FLOPs of one decode step over the cache bytes it reads, at {T:,} keys: absorbed (scores against "
               f"the latent: 2 H (2 r_kv + r) FLOPs a key over (r_kv + r) values) {absorbed:,.1f}; naive (the "
               f"decompressed per-head cache) {naive:,.1f}. An H200's ridge point is about 206 FLOP/byte: above it "
               "a step is compute-bound.")
    per_layer = f"{L} x ({m.kv_lora_rank} + {m.qk_rope_head_dim}) x {kb:g}"
    panel.set_tip("kv_token", f"{L * latent:,} B = layers x (kv_lora_rank + rope) x bytes per value "
                                        f"({fmt}) = {per_layer}{where}: the latent and the shared RoPE key")
    panel.set_tip("kv_total", f"{per_layer} x batch {B} x {T:,} tokens: the latent cache "
                                        f"(decompressed: {format_bytes(full * L * B * T)})")
    form = usual_form(cfg.phase)
    tq = "T" if cfg.phase == "prefill" else "1"
    panel.set_tip("flops_proj",
        f"the {form} form's matmuls with weights, {tq} tokens: the query path, kv_a, o_proj"
        + (", kv_b on every new token (naive)" if form == "naive" else
           ", W_uk folded into each query (2 H n r_kv) and W_uv after (2 H r_kv v) (absorbed)"))
    panel.set_tip("flops_core",
        f"the {form} form's core: 2 x B x H x pairs x " + (f"(q/k {m.qk_head_dim} + v {m.v_head_dim})" if form == "naive"
                                                          else f"(latent + rope {m.latent_width} + latent "
                                                               f"{m.kv_lora_rank})")
        + ("; causal prefill scores T^2 / 2 pairs" if cfg.phase == "prefill" else f"; decode: {T:,} keys"))
    panel.set_tip("intensity", f"core FLOPs over Q, K, V and output bytes of the per-head (naive) "
                                         f"layout; the row 'MLA decode FLOP/byte' gives each form against its "
                                         f"cache. d_model {d:,}.")
