import pytest
import torch
import torch.nn.functional as F

from core.arch.config import AttentionConfig
from core.kinds.standard.layer import MAX_DISPLAY_TOKENS, AttentionLayer, SeparateQKV, repeat_kv

CASES = [
    AttentionConfig(d_model=64, n_heads=4, seq_len=12),
    AttentionConfig(d_model=64, n_heads=8, n_kv_heads=2, seq_len=12),
    AttentionConfig(d_model=64, n_heads=8, n_kv_heads=1, seq_len=12, causal=True),
    AttentionConfig(d_model=72, n_heads=9, n_kv_heads=3, seq_len=9, causal=True, bias=True),
]


def _x(cfg, B=2, T=None):
    return torch.randn(B, T or cfg.seq_len, cfg.d_model, generator=torch.Generator().manual_seed(3))


@pytest.mark.parametrize("cfg", CASES, ids=str)
def test_display_path_equals_sdpa(cfg):
    layer = AttentionLayer(cfg, seed=1)
    x = _x(cfg)
    with torch.no_grad():
        _, y_display = layer.display_forward(x)
        y_sdpa = layer(x)
    torch.testing.assert_close(y_display, y_sdpa, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cfg", CASES, ids=str)
def test_probability_rows_sum_to_one_and_causal_is_lower_triangular(cfg):
    layer = AttentionLayer(cfg)
    with torch.no_grad():
        probs = layer.attention_probs(_x(cfg))  # (B, H, T, T)
    assert probs.dtype == torch.float32 and probs.shape == (2, cfg.n_heads, cfg.seq_len, cfg.seq_len)
    torch.testing.assert_close(probs.sum(-1), torch.ones(probs.shape[:-1]))
    if cfg.causal:
        assert torch.all(probs.triu(1) == 0)
    else:
        upper = torch.ones(cfg.seq_len, cfg.seq_len, dtype=torch.bool).triu(1)
        assert torch.all(probs[..., upper] > 0)


def test_gqa_equals_mha_with_repeated_kv_heads():
    cfg = AttentionConfig(d_model=64, n_heads=8, n_kv_heads=2, seq_len=10, causal=True)
    layer = AttentionLayer(cfg)
    x = _x(cfg)
    with torch.no_grad():
        q, k, v = layer.project_qkv(x)
        gqa = layer.core(q, k, v, causal=True)
        k_rep = k.repeat_interleave(4, dim=1)  # (B, H, T, h)
        v_rep = v.repeat_interleave(4, dim=1)  # (B, H, T, h)
        mha = F.scaled_dot_product_attention(q, k_rep, v_rep, is_causal=True)
    torch.testing.assert_close(gqa, mha)
    assert torch.equal(repeat_kv(k, 4), k_rep)


def test_decode_step_equals_the_last_row_of_causal_prefill():
    cfg = AttentionConfig(d_model=64, n_heads=8, n_kv_heads=2, seq_len=11, causal=True)
    layer = AttentionLayer(cfg)
    x = _x(cfg)
    with torch.no_grad():
        full = layer(x)
        _, k, v = layer.project_qkv(x)
        k_cache, v_cache = k.clone(), v.clone()
        k_cache[:, :, -1].zero_()  # the step must write the new token itself
        v_cache[:, :, -1].zero_()
        step = layer.decode_step(x[:, -1:], k_cache, v_cache)
    torch.testing.assert_close(step[:, 0], full[:, -1], rtol=1e-5, atol=1e-5)


def test_separate_projections_equal_the_fused_one():
    cfg = AttentionConfig(d_model=72, n_heads=9, n_kv_heads=3, bias=True)
    layer = AttentionLayer(cfg)
    x = _x(cfg, T=5)
    with torch.no_grad():
        fused = layer.wqkv(x)
        sep = torch.cat(SeparateQKV(layer)(x), dim=-1)
    torch.testing.assert_close(fused, sep)


def test_seeded_initialisation_is_reproducible():
    cfg = AttentionConfig(d_model=64, n_heads=4)
    a, b, c = AttentionLayer(cfg, seed=5), AttentionLayer(cfg, seed=5), AttentionLayer(cfg, seed=6)
    assert torch.equal(a.wqkv.weight, b.wqkv.weight) and not torch.equal(a.wqkv.weight, c.wqkv.weight)


def test_display_path_refuses_more_than_256_tokens():
    cfg = AttentionConfig(d_model=32, n_heads=2)
    layer = AttentionLayer(cfg)
    with pytest.raises(ValueError, match="at most 256"):
        layer.attention_probs(torch.randn(1, MAX_DISPLAY_TOKENS + 1, 32))
    assert layer.attention_probs(torch.randn(1, MAX_DISPLAY_TOKENS, 32)).shape[-1] == MAX_DISPLAY_TOKENS


@pytest.mark.parametrize("cfg", CASES, ids=str)
def test_display_projector_equals_the_full_layers_display_path(cfg):
    from core.kinds.standard.display import DisplayProjector

    x = _x(cfg, B=1)
    with torch.no_grad():
        full = AttentionLayer(cfg, seed=7).attention_probs(x)
        light = DisplayProjector(cfg, seed=7).probs(x)
    torch.testing.assert_close(light, full, rtol=1e-5, atol=1e-6)


def test_display_projector_refuses_a_layer_too_big_to_hold():
    from core.kinds.standard.display import DisplayProjector

    with pytest.raises(ValueError, match="lower d_model"):
        DisplayProjector(AttentionConfig(d_model=65536, n_heads=512))
