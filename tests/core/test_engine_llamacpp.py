"""llama.cpp's KV cache against its own rule (src/llama-kv-cache-iswa.cpp, src/llama-context.cpp): Gemma 3 27B at
131,072 tokens, f16, n_ubatch 512, as the issue asks."""

import pytest

from core.arch.config import AttentionConfig
from core.arch.presets import find_preset
from core.plan.engines.llamacpp import llamacpp_caches


def test_gemma_3_27b_at_131072_tokens_in_f16():
    arch = find_preset("gemma-3-27b").apply(AttentionConfig(dtype="bfloat16")).architecture()
    full, local = llamacpp_caches(arch, "float16", 131072, 512)
    # 10 global layers keep the padded n_ctx; 52 local (W 1024) keep pad(min(131,072, 1,024 + 512), 256) = 1,536
    assert (full.window, full.layers, full.cells) == (None, 10, 131072)
    assert (local.window, local.layers, local.cells) == (1024, 52, 1536)
    # a cell of a layer: K and V of 16 KV heads x 128 in f16 = 4,096 B each
    assert full.bytes == 10 * 131072 * 8192 == 10_737_418_240 and local.bytes == 52 * 1536 * 8192 == 654_311_424
    assert full.log(1, "f16") == ("llama_kv_cache: size = 10240.00 MiB (131072 cells,  10 layers,  1/1 seqs), "
                                  "K (f16): 5120.00 MiB, V (f16): 5120.00 MiB")
    assert local.log(1, "f16").startswith("llama_kv_cache: size =  624.00 MiB (  1536 cells,  52 layers")
    q8 = llamacpp_caches(arch, "q8_0", 131072, 512)
    assert sum(c.bytes for c in q8) / 2**20 == pytest.approx(5440 + 331.5)  # 34 B per 32 values


def test_an_mla_layer_keeps_its_latent_as_k_and_no_v():
    arch = find_preset("deepseek-v3").apply(AttentionConfig(dtype="bfloat16")).architecture()
    (c,) = llamacpp_caches(arch, "float16", 4096)
    assert (c.cells, c.v_bytes) == (4096, 0) and c.k_bytes == 61 * 4096 * 576 * 2


def test_formats_llama_cpp_does_not_keep_are_refused():
    arch = find_preset("llama-3-8b").apply(AttentionConfig()).architecture()
    with pytest.raises(ValueError, match="llama.cpp keeps no fp8_e4m3 cache"):
        llamacpp_caches(arch, "fp8_e4m3", 4096)
