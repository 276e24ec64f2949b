"""Every count against an independent reference: real modules, FlopCounterMode, the check table."""

import pytest
import torch
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from core.arch.config import AttentionConfig
from core.arch.presets import find_preset
from core.counts import flop_counts, kv_cache_bytes, param_counts
from core.format import format_bytes, format_count, format_noun
from core.kinds.standard.layer import AttentionLayer

CONFIGS = [
    AttentionConfig(d_model=64, n_heads=4),
    AttentionConfig(d_model=64, n_heads=8, n_kv_heads=2),
    AttentionConfig(d_model=96, n_heads=6, n_kv_heads=1),
    AttentionConfig(d_model=72, n_heads=9, n_kv_heads=3, bias=True),
    AttentionConfig(d_model=64, n_heads=4, bias=True),
]


@pytest.mark.parametrize("cfg", CONFIGS, ids=str)
def test_params_equal_the_real_module(cfg):
    layer = AttentionLayer(cfg)
    counts = param_counts(cfg)
    assert counts.total == sum(p.numel() for p in layer.parameters())
    assert counts.o == sum(p.numel() for p in layer.wo.parameters())
    assert counts.q + counts.k + counts.v == sum(p.numel() for p in layer.wqkv.parameters())
    mha_layer = AttentionLayer(cfg.mha())
    assert counts.total_mha == sum(p.numel() for p in mha_layer.parameters())


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("d_model, n_heads", [(64, 1), (64, 8), (768, 12)])
def test_mha_params_equal_nn_multiheadattention(d_model, n_heads, bias):
    ref = nn.MultiheadAttention(d_model, n_heads, bias=bias)
    cfg = AttentionConfig(d_model=d_model, n_heads=n_heads, bias=bias)
    assert param_counts(cfg).total == sum(p.numel() for p in ref.parameters())


def test_seed_claim_mha_params_are_4_d_squared_for_every_head_count():
    d = 768
    for h in [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]:
        assert param_counts(AttentionConfig(d_model=d, n_heads=h)).total == 4 * d * d
    # The seeds' figure for GPT-2 small: about 2.36 million per layer.
    assert param_counts(AttentionConfig(d_model=768, n_heads=12)).total == 2_359_296


def _counted_flops(cfg: AttentionConfig) -> int:
    """FlopCounterMode over the real layer, SDPA forced onto the math path so it is counted."""
    layer = AttentionLayer(cfg)
    B, T, d = cfg.batch_size, cfg.seq_len, cfg.d_model
    with torch.no_grad(), sdpa_kernel([SDPBackend.MATH]), FlopCounterMode(display=False) as fc:
        if cfg.phase == "prefill":
            layer(torch.randn(B, T, d))
        else:
            k_cache = torch.randn(B, cfg.kv_heads, T, cfg.head_dim)  # (B, K, T, h)
            v_cache = torch.randn(B, cfg.kv_heads, T, cfg.head_dim)  # (B, K, T, h)
            layer.decode_step(torch.randn(B, 1, d), k_cache, v_cache)
    return fc.get_total_flops()


FLOP_CONFIGS = [
    AttentionConfig(d_model=64, n_heads=4, seq_len=16, batch_size=2),
    AttentionConfig(d_model=64, n_heads=8, n_kv_heads=2, seq_len=24, batch_size=3),
    AttentionConfig(d_model=96, n_heads=6, n_kv_heads=1, seq_len=8),
    AttentionConfig(d_model=64, n_heads=8, n_kv_heads=4, seq_len=32, phase="decode", batch_size=2),
    AttentionConfig(d_model=64, n_heads=4, seq_len=20, phase="decode", causal=True),
]


@pytest.mark.parametrize("cfg", FLOP_CONFIGS, ids=str)
def test_flops_equal_flop_counter_mode(cfg):
    assert flop_counts(cfg).total == _counted_flops(cfg)


def test_causal_prefill_core_is_half_of_the_counted_full_core():
    cfg = AttentionConfig(d_model=64, n_heads=8, n_kv_heads=2, seq_len=16, causal=True)
    counted = _counted_flops(cfg)  # the math path computes the full T x T, masked
    f = flop_counts(cfg)
    assert f.attention * 2 == counted - f.projections


def test_seed_claim_core_flops_do_not_depend_on_kv_heads():
    cores = {flop_counts(AttentionConfig(d_model=4096, n_heads=32, n_kv_heads=k, seq_len=2048)).attention
             for k in (1, 2, 4, 8, 16, 32)}
    assert cores == {4 * 32 * 2048 * 2048 * 128}


def test_gqa_saves_projection_flops_only():
    mha = flop_counts(AttentionConfig(d_model=4096, n_heads=32, seq_len=512))
    gqa = flop_counts(AttentionConfig(d_model=4096, n_heads=32, n_kv_heads=8, seq_len=512))
    assert gqa.projections < mha.projections and gqa.attention == mha.attention


CHECK_TABLE = [  # model, L, d, H, K, KV bytes/token, 8k tokens (fp16)
    ("GPT-2 small", 12, 768, 12, 12, 36_864, 288 * 2**20),
    ("Llama 3 8B", 32, 4096, 32, 8, 131_072, 2**30),
    ("Mistral 7B", 32, 4096, 32, 8, 131_072, 2**30),
    ("Llama 3 70B", 80, 8192, 64, 8, 327_680, int(2.5 * 2**30)),
    ("GPT-3 175B", 96, 12288, 96, 96, 4_718_592, 36 * 2**30),
]


@pytest.mark.parametrize("name, L, d, H, K, per_token, total_8k", CHECK_TABLE, ids=lambda x: str(x))
def test_kv_cache_check_table(name, L, d, H, K, per_token, total_8k):
    cfg = AttentionConfig(d_model=d, n_heads=H, n_kv_heads=K, n_layers=L, seq_len=8192, dtype="float16")
    kv = kv_cache_bytes(cfg)
    assert kv.bytes_per_token == per_token
    assert kv.bytes_total == total_8k
    # The preset of the same name carries the same architecture.
    applied = find_preset(name).apply(cfg)
    assert (applied.d_model, applied.n_heads, applied.kv_heads, applied.n_layers) == (d, H, K, L)


def test_seed_claim_32_query_heads_on_8_kv_heads_shrink_the_cache_4x():
    kv = kv_cache_bytes(AttentionConfig(d_model=4096, n_heads=32, n_kv_heads=8, seq_len=1000, batch_size=3))
    assert kv.bytes_total_mha == 4 * kv.bytes_total and kv.ratio_vs_mha == 0.25


def test_kv_cache_equals_the_bytes_of_real_cache_tensors():
    cfg = AttentionConfig(d_model=64, n_heads=8, n_kv_heads=2, seq_len=10, batch_size=3, n_layers=5, dtype="bfloat16")
    cache = torch.empty(cfg.n_layers, 2, cfg.batch_size, cfg.kv_heads, cfg.seq_len, cfg.head_dim, dtype=torch.bfloat16)
    assert kv_cache_bytes(cfg).bytes_total == cache.numel() * cache.element_size()


def test_formatting():
    assert format_bytes(288 * 2**20) == "288 MiB"
    assert format_bytes(1536) == "1.5 KiB"
    assert format_bytes(512) == "512 B"
    assert format_count(2_359_296) == "2.36M"
    # Rounded to 3 figures first, then the unit (found by a hostile review: 999,999,999,999 read "1e+03G").
    assert format_count(999_999_999_999) == "1T" and format_count(999_600) == "1M" and format_count(999_400) == "999K"
    assert format_count(1.99998e19) == "20E" and format_count(999.7) == "1K" and format_count(-999_999) == "-1M"
    # Past 2^60 bytes an exbibyte unit (a review read "1048 PiB" for 1.18e18 B).
    assert format_bytes(1_179_636_000_000_000_000) == f"{1_179_636_000_000_000_000 / 2**60:.3g} EiB" == "1.02 EiB"
    assert format_bytes(5 * 2**50) == "5 PiB"
    assert format_noun(1, "head") == "1 head" and format_noun(12, "head") == "12 heads"
    assert format_noun(2.25, "GQA head") == "2.25 GQA heads" and format_noun(1.0, "K/V head") == "1 K/V head"
