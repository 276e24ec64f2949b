"""Our window band, sinks and KV convention against transformers' own models: a tiny random gpt-oss
(sliding and full layers, learned sinks) and a tiny Gemma 3, run eagerly for T > W tokens with a cache."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from transformers import Gemma3ForCausalLM, Gemma3TextConfig, GptOssConfig, GptOssForCausalLM
from transformers.models.gemma3 import modeling_gemma3
from transformers.models.gpt_oss import modeling_gpt_oss

from core.arch.config import AttentionConfig
from core.counts import layer_kv_bytes
from core.kinds.standard.layer import repeat_kv
from core.kinds.standard.masking import allowed_keys, sdpa_inputs, softmax_with_sinks

T, W = 10, 4
TINY = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_hidden_layers=2,
            sliding_window=W, vocab_size=100, intermediate_size=32, attn_implementation="eager")


def run_with_spy(model, module):
    """Run model on T tokens; capture each layer's post-RoPE q, k, v as its eager attention sees them."""
    seen = []
    original = module.eager_attention_forward

    def spy(attn, q, k, v, *args, **kw):  # gpt-oss and Gemma 3 order their later arguments differently
        out = original(attn, q, k, v, *args, **kw)
        seen.append((attn, q, k, v, attn.scaling, out))
        return out

    module.eager_attention_forward = spy
    try:
        with torch.no_grad():
            out = model(torch.randint(0, 100, (1, T), generator=torch.Generator().manual_seed(0)),
                        use_cache=True, output_attentions=True)
    finally:
        module.eager_attention_forward = original
    return out, seen


@pytest.fixture(scope="module")
def gpt_oss():
    torch.manual_seed(0)
    config = GptOssConfig(**TINY, num_local_experts=2, num_experts_per_tok=1)
    model = GptOssForCausalLM(config).eval()
    with torch.no_grad():  # sinks of a visible size (they start near zero)
        for layer in model.model.layers:
            layer.self_attn.sinks.uniform_(-1, 1)
    return config, run_with_spy(model, modeling_gpt_oss)


@pytest.mark.parametrize("layer", [0, 1])
def test_band_and_sinks_equal_gpt_oss_eager_weights(gpt_oss, layer):
    config, (out, seen) = gpt_oss
    attn, q, k, v, scaling, (their_out, their_probs) = seen[layer]
    window = W if config.layer_types[layer] == "sliding_attention" else None
    assert (window is not None) == (layer == 0)  # layer 0 local, as gpt-oss alternates
    scores = q @ repeat_kv(k, 2).transpose(-2, -1) * scaling
    probs, sink_share = softmax_with_sinks(scores, allowed_keys(T, T, True, window), attn.sinks)
    torch.testing.assert_close(probs, out.attentions[layer], atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(probs.sum(-1) + sink_share, torch.ones(1, 4, T))  # rows sum to 1 - sink share
    assert (sink_share > 0.01).all()
    if window is not None:  # the band: query 9 sees keys 6..9 only
        assert (probs[0, :, 9, :6] == 0).all() and (probs[0, :, 9, 6:] > 0).all()
    # The timing path (SDPA with a zero sink key and a float mask) gives the eager output.
    k2, v2, mask, is_causal = sdpa_inputs(q, k, v, True, window, attn.sinks)
    ours = F.scaled_dot_product_attention(q, k2, v2, attn_mask=mask, is_causal=is_causal, enable_gqa=True,
                                          scale=scaling)
    torch.testing.assert_close(ours.transpose(1, 2), their_out, atol=1e-6, rtol=1e-5)


def test_local_layer_cache_holds_w_tokens_where_transformers_keeps_w_minus_1(gpt_oss):
    """Our convention: a local layer's cache holds min(T, W) tokens, the keys the next query reads, its own
    included. transformers' DynamicCache keeps W - 1 between steps (the next token's key joins at its
    step); a global layer holds all T in both."""
    config, (out, _) = gpt_oss
    cfg = AttentionConfig(d_model=64, n_heads=4, n_kv_heads=2, explicit_head_dim=16, n_layers=2, causal=True,
                          window=W, layer_pattern="alternate", seq_len=T)
    cache = out.past_key_values.layers
    for i, spec in enumerate(cfg.architecture().layers):
        held = cache[i].keys.shape[-2]
        theirs = 2 * cache[i].keys.numel() * 4  # K and V, float32
        assert layer_kv_bytes(spec, cfg) == theirs * (held + (1 if spec.window else 0)) // held
        assert held == (W - 1 if spec.window else T)


def test_gemma_3_local_layer_band_and_scale():
    torch.manual_seed(1)
    config = Gemma3TextConfig(**TINY, sliding_window_pattern=2, query_pre_attn_scalar=24)
    out, seen = run_with_spy(Gemma3ForCausalLM(config).eval(), modeling_gemma3)
    cfg = AttentionConfig(d_model=64, n_heads=4, n_kv_heads=2, explicit_head_dim=16, n_layers=2, causal=True,
                          window=W, layer_pattern="1:1", qk_norm=True, softmax_scale=24 ** -0.5)
    for i, spec in enumerate(cfg.architecture().layers):
        _, q, k, _, scaling, _ = seen[i]
        assert scaling == pytest.approx(spec.softmax_scale)
        assert spec.window == (config.sliding_window if config.layer_types[i] == "sliding_attention" else None)
        probs, _ = softmax_with_sinks(q @ repeat_kv(k, 2).transpose(-2, -1) * scaling,
                                      allowed_keys(T, T, True, spec.window), None)
        torch.testing.assert_close(probs, out.attentions[i], atol=1e-6, rtol=1e-5)
