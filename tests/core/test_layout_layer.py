"""The layer with the 2026 knobs: the timing path (SDPA with a mask and a zero sink key) and the display
path (explicit softmax) agree, the heatmaps' projector equals the full layer, and a local layer's decode
step over its min(T, W) cached keys gives the prefill's last row."""

from __future__ import annotations

import pytest
import torch

from core.arch.config import AttentionConfig
from core.kinds.standard.band import cached_tokens
from core.kinds.standard.display import DisplayProjector
from core.kinds.standard.layer import AttentionLayer

LAYOUTS = [  # T = 12: W 5 and 4 run blockwise (T >= 2W), W 8 the masked SDPA, W 16 the causal one (T <= W)
    dict(window=5, layer_pattern="local", causal=True),
    dict(window=8, layer_pattern="local", causal=True, sinks=True),
    dict(window=16, layer_pattern="local", causal=True),
    dict(sinks=True, causal=True),
    dict(sinks=True),
    dict(window=4, layer_pattern="alternate", sinks=True, causal=True, bias=True, qk_norm=True, explicit_head_dim=16),
    dict(bias="qkv", explicit_head_dim=24, softmax_scale=0.3, causal=True),
]


def layer_and_input(fields, T=12):
    cfg = AttentionConfig(**{"d_model": 64, "n_heads": 4, "n_kv_heads": 2, "seq_len": T, "n_layers": 2, **fields})
    return cfg, AttentionLayer(cfg, seed=3), torch.randn(1, T, 64, generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("fields", LAYOUTS)
def test_timing_and_display_paths_agree(fields):
    cfg, layer, x = layer_and_input(fields)
    with torch.no_grad():
        probs, sink_share = layer.attention_probs_and_sinks(x)
        projected, projected_share = DisplayProjector(cfg, 3).probs_and_sinks(x)
        _, y_display = layer.display_forward(x)
        y = layer(x)
    torch.testing.assert_close(y, y_display, atol=2e-6, rtol=1e-5)
    assert torch.equal(probs, projected)
    if cfg.sinks:
        assert torch.equal(sink_share, projected_share)
        torch.testing.assert_close(probs.sum(-1) + sink_share, torch.ones_like(sink_share))
        assert (sink_share > 0).all()
    else:
        assert sink_share is None
        torch.testing.assert_close(probs.sum(-1), torch.ones(1, 4, 12))
    if cfg.window is not None and cfg.layer_spec().window:  # the band: nothing before i - W + 1
        band = torch.ones(12, 12, dtype=torch.bool).tril() & ~torch.ones(12, 12, dtype=torch.bool).tril(-cfg.window)
        assert (probs[0, :, ~band] == 0).all() and (probs[0, :, band] > 0).all()


@pytest.mark.parametrize("T, W", [(12, 5), (4, 5)])
def test_local_decode_over_its_cache_is_the_prefills_last_row(T, W):
    cfg, layer, x = layer_and_input(dict(window=W, layer_pattern="local", causal=True, sinks=True), T)
    with torch.no_grad():
        _, k, v = layer.project_qkv(x)
        keep = cached_tokens(T, W)
        y_decode = layer.decode_step(x[:, -1:], k[:, :, -keep:].clone(), v[:, :, -keep:].clone())
        y = layer(x)
    torch.testing.assert_close(y_decode[:, 0], y[:, -1], atol=2e-6, rtol=1e-5)


@pytest.mark.parametrize("W, kernel", [(5, "blockwise SDPA"), (8, "SDPA with an explicit mask"), (16, "SDPA, causal")])
def test_the_kernel_is_named_for_the_length(W, kernel):
    _, layer, _ = layer_and_input(dict(window=W, layer_pattern="local", causal=True))
    assert layer.kernel_name.startswith(kernel)


def test_a_tied_layer_keeps_todays_stream_and_kernel():
    """No window, no sinks: the same weights as before (seeded stream unchanged) and plain SDPA."""
    cfg, layer, _ = layer_and_input({})
    assert layer.kernel_name == "SDPA" and layer.sinks is None and layer.q_norm is None
    windowed = AttentionLayer(cfg.with_(window=4, layer_pattern="local", causal=True), seed=3)
    assert torch.equal(layer.wqkv.weight, windowed.wqkv.weight) and "window 4" in windowed.kernel_for(64)


@pytest.mark.parametrize("T, W", [(37, 8), (32, 8), (5, 8), (64, 1), (16, 8)])
@pytest.mark.parametrize("with_sinks", [False, True])
def test_blockwise_band_attention_equals_the_masked_core(T, W, with_sinks):
    from core.kinds.standard.band_kernel import blockwise_band_attention
    from core.kinds.standard.masking import sdpa_inputs

    g = torch.Generator().manual_seed(2)
    q, k, v = torch.randn(2, 4, T, 16, generator=g), torch.randn(2, 2, T, 16, generator=g), torch.randn(2, 2, T, 16, generator=g)
    sinks = torch.randn(4, generator=g) if with_sinks else None
    k2, v2, mask, _ = sdpa_inputs(q, k, v, True, W, sinks)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k2, v2, attn_mask=mask, enable_gqa=True, scale=0.3)
    torch.testing.assert_close(blockwise_band_attention(q, k, v, W, 0.3, sinks), ref, atol=2e-6, rtol=1e-5)


@pytest.mark.parametrize("fields", [dict(window=8), dict(window=8, sinks=True), dict(sinks=True)])
def test_flex_attention_core_equals_the_masked_sdpa_core(fields):
    """The CUDA kernel's maths, run eagerly on the CPU: a block mask for the band, sinks from the lse."""
    from core.kinds.standard.flex_band import flex_band_attention

    cfg, layer, x = layer_and_input({"causal": True, "layer_pattern": "local" if "window" in fields else "global",
                                     **fields}, T=40)
    with torch.no_grad():
        q, k, v = layer.project_qkv(x)
        ref = layer.core(q, k, v, True)
        ours = flex_band_attention(q, k, v, True, layer.spec.window, layer.sinks, compile=False)
    torch.testing.assert_close(ours, ref, atol=2e-6, rtol=1e-5)


def test_a_local_layers_timing_sets_its_core_beside_full_causal_attention():
    from core.counts import flop_counts
    from core.timing.layer import run_timing

    cfg = AttentionConfig(d_model=64, n_heads=4, n_kv_heads=2, seq_len=64, causal=True, window=8,
                          layer_pattern="local", n_layers=1)
    t = run_timing(cfg, torch.device("cpu"), budget_s=0.002).to_report()
    full = flop_counts(cfg.with_(window=None, layer_pattern="global")).attention
    assert t["band_flop_ratio"] == flop_counts(cfg).attention / full == (2 * 64 * 8 - 64) / 64**2
    assert t["full_core_ms"] > 0 and t["kernel"].startswith("blockwise SDPA")
    # A global layer, or a context within the window, has nothing to compare.
    for plain in (cfg.with_(window=None, layer_pattern="global"), cfg.with_(seq_len=8)):
        assert "full_core_ms" not in run_timing(plain, torch.device("cpu"), budget_s=0.002).to_report()
