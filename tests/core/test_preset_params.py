"""The presets' whole-model parameter counts, which the planner's weights come from: each dense model's
count rebuilt here from its published config (embeddings, attention, MLP, norms), and every count with a
source. The shipped models' counts are checked against their real modules in tests/models."""

import pytest

from core.arch.presets import find_preset, load_presets


def decoder(vocab, d, layers, ffn, H, K, h, tied, qkv_bias=False, qk_norm=False, norms=2):
    """A Llama-family decoder: embeddings (and an untied head), per layer q/k/v/o, SwiGLU, norms; a final norm."""
    attention = d * H * h + 2 * d * K * h + H * h * d + ((H + 2 * K) * h if qkv_bias else 0) + (2 * h if qk_norm else 0)
    per_layer = attention + 3 * d * ffn + norms * d
    return vocab * d * (1 if tied else 2) + layers * per_layer + d


CONFIGS = {  # from each model's config.json
    "llama-3-8b": decoder(128256, 4096, 32, 14336, 32, 8, 128, tied=False),
    "llama-3-70b": decoder(128256, 8192, 80, 28672, 64, 8, 128, tied=False),
    "mistral-7b": decoder(32768, 4096, 32, 14336, 32, 8, 128, tied=False),
    "mistral-7b-v0-1": decoder(32000, 4096, 32, 14336, 32, 8, 128, tied=False),
    "qwen2-7b": decoder(152064, 3584, 28, 18944, 28, 4, 128, tied=False, qkv_bias=True),
    "qwen3-0-6b": decoder(151936, 1024, 28, 3072, 16, 8, 128, tied=True, qk_norm=True),
    "qwen3-4b": decoder(151936, 2560, 36, 9728, 32, 8, 128, tied=True, qk_norm=True),
    "gemma-2-9b": decoder(256000, 3584, 42, 14336, 16, 8, 256, tied=True, norms=4),
    "gemma-3-1b": decoder(262144, 1152, 26, 6912, 4, 1, 256, tied=True, qk_norm=True, norms=4),
    "gemma-3-27b": decoder(262208, 5376, 62, 21504, 32, 16, 128, tied=True, qk_norm=True, norms=4),
}


@pytest.mark.parametrize("key", sorted(CONFIGS))
def test_a_dense_presets_count_is_its_configs(key):
    assert find_preset(key).params == CONFIGS[key]


def test_gpt2_small_is_the_124m_everyone_quotes():
    d, blocks = 768, 12
    block = 2 * 2 * d + (d * 3 * d + 3 * d) + (d * d + d) + (d * 4 * d + 4 * d) + (4 * d * d + d)
    assert find_preset("gpt-2-small").params == 50257 * d + 1024 * d + blocks * block + 2 * d == 124_439_808


def test_every_named_models_count_has_a_source_and_the_generic_ones_none():
    for p in load_presets():
        if p.name.startswith(("Small", "Base", "Large", "Frontier")):
            assert p.params is None, p.name  # a typical shape, not a model: the user types a count
        else:
            assert p.params and len(p.params_source) > 20, p.name
