"""SGLang's token pool against its own rule (model_runner_kv_cache_mixin.py, profile_max_num_token)."""

import pytest

from core.arch.config import AttentionConfig
from core.arch.presets import find_preset
from core.plan.engines.sglang import mem_fraction_static, sglang_pool

GIB = 2**30


def test_llama_3_8b_on_an_80_gib_card():
    arch = find_preset("llama-3-8b").apply(AttentionConfig(dtype="bfloat16")).architecture()
    pool = sglang_pool(arch, 1, "bfloat16", 80 * GIB, round(14.96 * GIB), 0.88)
    # a token: 8 KV heads x (128 + 128) x 32 layers x 2 bytes = 131,072 B; rest = 65.04 - 0.12 x 80 = 55.44 GiB
    assert pool.cell_bytes == 131072
    assert pool.tokens == int(55.44 * GIB) // 131072 == 454_164


def test_an_mla_model_caches_its_latent_once_a_token_a_layer_on_every_gpu():
    arch = find_preset("deepseek-v3").apply(AttentionConfig(dtype="bfloat16")).architecture()
    pool = sglang_pool(arch, 8, "bfloat16", 141 * GIB, 80 * GIB)
    assert pool.mem_fraction_static == 0.81 and pool.cell_bytes == (512 + 64) * 61 * 2
    assert pool.tokens == int(61 * GIB - 141 * GIB * 0.19) // pool.cell_bytes


def test_defaults_and_refusals():
    assert [mem_fraction_static(t) for t in (1, 2, 4, 8, 16)] == [0.88, 0.87, 0.85, 0.81, 0.79]
    arch = find_preset("llama-3-8b").apply(AttentionConfig()).architecture()
    with pytest.raises(ValueError, match="SGLang keeps no q8_0 cache"):
        sglang_pool(arch, 1, "q8_0", 80 * GIB, GIB)
