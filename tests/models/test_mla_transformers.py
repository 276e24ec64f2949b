"""MLA against transformers' own DeepseekV3Attention / DeepseekV2Attention.

Parameters: built from each model card's config.json values (written here, not read from presets.json) on the
meta device, projection by projection and in total, for a few whole layers. Numbers: a tiny random layer in
eager mode: its attention weights equal our display path's, both our forms give its output, our decode steps
against a latent and a decompressed cache give its cached decode, and the cache it keeps after T tokens holds
exactly our latent bytes."""

from __future__ import annotations

import pytest
import torch
from transformers import DeepseekV2Config, DeepseekV3Config, DynamicCache
from transformers.models.deepseek_v2.modeling_deepseek_v2 import DeepseekV2Attention
from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3Attention

from core.arch.config import AttentionConfig
from core.arch.presets import find_preset
from core.counts import layer_kv_bytes_per_token, layer_param_counts, model_counts
from core.kinds.mla.counts import decompressed_bytes_per_token
from core.kinds.mla.layer import MLALayer
from core.kinds.mla.spec import MLADims

MLA_CARD = dict(q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)
REAL = {  # preset: (config class, attention class, config.json values)
    "DeepSeek-V3": (DeepseekV3Config, DeepseekV3Attention,
                    dict(hidden_size=7168, num_attention_heads=128, num_hidden_layers=61, **MLA_CARD)),
    "DeepSeek-V2": (DeepseekV2Config, DeepseekV2Attention,
                    dict(hidden_size=5120, num_attention_heads=128, num_hidden_layers=60, **MLA_CARD)),
    "DeepSeek-V2-Lite": (DeepseekV2Config, DeepseekV2Attention,
                         dict(hidden_size=2048, num_attention_heads=16, num_hidden_layers=27,
                              **{**MLA_CARD, "q_lora_rank": None})),
    "Kimi K2": (DeepseekV3Config, DeepseekV3Attention,
                dict(hidden_size=7168, num_attention_heads=64, num_hidden_layers=61, **MLA_CARD)),
}
# ours -> transformers' module name
MODULES = {"q_a": "q_a_proj", "q_a_norm": "q_a_layernorm", "q_b": "q_b_proj", "q": "q_proj",
           "kv_a": "kv_a_proj_with_mqa", "kv_a_norm": "kv_a_layernorm", "kv_b": "kv_b_proj", "o": "o_proj"}


def hf_config(cls, values, **extra):
    return cls(**{**values, "num_key_value_heads": values["num_attention_heads"], **extra})


@pytest.mark.parametrize("name", sorted(REAL))
def test_every_projection_and_the_model_total_match_transformers(name):
    cls, attn_cls, values = REAL[name]
    cfg = find_preset(name).apply(AttentionConfig())
    hf = hf_config(cls, values)
    spec = cfg.layer_spec()
    assert (cfg.d_model, cfg.n_heads, cfg.n_layers) == (values["hidden_size"], values["num_attention_heads"],
                                                       values["num_hidden_layers"])
    ours = layer_param_counts(cfg.d_model, spec).to_dict()
    with torch.device("meta"):
        layers = [attn_cls(hf, layer_idx=i) for i in range(3)]
    theirs = {k: sum(p.numel() for p in getattr(layers[0], mod).parameters())
              for k, mod in MODULES.items() if getattr(layers[0], mod, None) is not None}
    assert {k: v for k, v in ours.items() if k not in ("total", "total_mha")} == theirs
    assert ours["total"] == sum(p.numel() for p in layers[0].parameters())
    whole = sum(p.numel() for layer in layers for p in layer.parameters()) // 3 * cfg.n_layers
    assert model_counts(cfg.architecture(), cfg).params == whole
    assert ("q" in ours) == (values["q_lora_rank"] is None)  # q_lora_rank 0: a plain q_proj, counted as one


def test_deepseek_v3_check_values():
    cfg = find_preset("deepseek-v3").apply(AttentionConfig(dtype="bfloat16"))
    spec = cfg.layer_spec()
    assert layer_param_counts(cfg.d_model, spec).total == 187_107_328  # ../shared/REFERENCE.md
    assert layer_kv_bytes_per_token(spec, cfg.kv_format) == 1_152
    assert decompressed_bytes_per_token(spec, cfg.kv_format) == 81_920


TINY = dict(hidden_size=64, num_attention_heads=4, q_lora_rank=24, kv_lora_rank=32, qk_nope_head_dim=8,
            qk_rope_head_dim=4, v_head_dim=6, num_hidden_layers=1, rope_interleave=False)


def tiny_pair(q_lora_rank=24):
    """A random transformers layer (eager, float64) and ours holding its weights (norm weights random too)."""
    torch.manual_seed(0)
    hf = hf_config(DeepseekV3Config, {**TINY, "q_lora_rank": q_lora_rank}, attn_implementation="eager")
    theirs = DeepseekV3Attention(hf, layer_idx=0).double().eval()
    with torch.no_grad():
        for p in theirs.parameters():
            p.uniform_(0.5, 1.5) if p.ndim == 1 else p.normal_(0, 0.2)
    dims = MLADims(q_lora_rank or 0, 32, 8, 4, 6)
    cfg = AttentionConfig(d_model=64, n_heads=4, widths=dims, causal=True, seq_len=12)
    ours = MLALayer(cfg).double().eval()
    missing = ours.load_state_dict(theirs.state_dict(), strict=True)
    assert not missing.missing_keys and not missing.unexpected_keys
    return theirs, ours


def no_rotation(x):
    """RoPE at angle zero (cos 1, sin 0): our layer applies none, so transformers' must rotate nothing."""
    B, T, _ = x.shape
    shape = (B, T, TINY["qk_rope_head_dim"])
    return torch.ones(shape, dtype=x.dtype), torch.zeros(shape, dtype=x.dtype)


def causal_mask(T, dtype=torch.float64):
    return torch.full((T, T), float("-inf"), dtype=dtype).triu(1)[None, None]


@pytest.mark.parametrize("q_lora_rank", [24, None])
def test_attention_weights_and_output_of_both_forms_equal_transformers(q_lora_rank):
    theirs, ours = tiny_pair(q_lora_rank)
    x = torch.randn(2, 12, 64, dtype=torch.float64)
    with torch.no_grad():
        out, weights = theirs(x, no_rotation(x), causal_mask(12))
        for form in ("naive", "absorbed"):
            torch.testing.assert_close(ours.attention_probs(x, form).double(), weights, rtol=1e-5, atol=1e-6)
            torch.testing.assert_close(ours(x, form=form), out, rtol=1e-5, atol=1e-6)  # their RMSNorm runs in float32


def test_float32_forms_agree_to_rounding():
    theirs, ours = tiny_pair()
    ours = ours.float()
    x = torch.randn(1, 12, 64)
    with torch.no_grad():
        torch.testing.assert_close(ours(x, form="absorbed"), ours(x, form="naive"), rtol=1e-5, atol=1e-6)


def test_decode_against_latent_and_decompressed_caches_equals_transformers_cached_decode():
    theirs, ours = tiny_pair()
    T = 9
    x = torch.randn(1, T, 64, dtype=torch.float64)
    cache = DynamicCache(config=theirs.config)
    with torch.no_grad():
        theirs(x[:, :-1], no_rotation(x[:, :-1]), causal_mask(T - 1), cache=cache)
        step, _ = theirs(x[:, -1:], no_rotation(x[:, -1:]), None, cache=cache)
        c, k_pe = ours.latent(x)
        k, v = ours.decompress(c, k_pe)
        zeros = lambda t: torch.cat([t[..., :-1, :], torch.zeros_like(t[..., -1:, :])], dim=-2)  # noqa: E731
        absorbed = ours.decode_absorbed(x[:, -1:], zeros(c), zeros(k_pe))  # the last slot is the new token's
        naive = ours.decode_naive(x[:, -1:], zeros(k), zeros(v))
    torch.testing.assert_close(absorbed, step, rtol=1e-5, atol=1e-6)  # their RMSNorm runs in float32
    torch.testing.assert_close(naive, step, rtol=1e-5, atol=1e-6)  # their RMSNorm runs in float32
    # transformers 5 caches the latent (kv_a_layernorm'ed) and the rope key: exactly our latent bytes
    kept = cache.layers[0].keys, cache.layers[0].values
    spec = ours.spec
    assert sum(t.numel() for t in kept) == T * spec.widths.latent_width
    assert sum(t.numel() * 2 for t in kept) == T * layer_kv_bytes_per_token(spec, "bfloat16")
    # the naive form's decompressed cache: exactly the decompressed bytes
    assert (k.numel() + v.numel()) * 2 == T * decompressed_bytes_per_token(spec, "bfloat16")
