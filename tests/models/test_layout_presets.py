"""Every layout preset against the real model: its values (written here from the model cards, not read
from presets.json), and our whole-model attention parameters, windows and softmax scale against
transformers' own attention classes built layer by layer on the meta device."""

from __future__ import annotations

import pytest
import torch
from transformers import (
    Gemma2Config,
    Gemma3TextConfig,
    GPT2Config,
    GptOssConfig,
    LlamaConfig,
    MistralConfig,
    Qwen2Config,
    Qwen3Config,
)
from transformers.models.gemma2.modeling_gemma2 import Gemma2Attention
from transformers.models.gemma3.modeling_gemma3 import Gemma3Attention
from transformers.models.gpt2.modeling_gpt2 import GPT2Attention
from transformers.models.gpt_oss.modeling_gpt_oss import GptOssAttention
from transformers.models.llama.modeling_llama import LlamaAttention
from transformers.models.mistral.modeling_mistral import MistralAttention
from transformers.models.qwen2.modeling_qwen2 import Qwen2Attention
from transformers.models.qwen3.modeling_qwen3 import Qwen3Attention

from core.arch.config import AttentionConfig
from core.arch.presets import find_preset
from core.counts import layer_param_counts, model_counts

# name: (config class, attention class, the model card's config.json values)
REAL = {
    "Qwen3-0.6B": (Qwen3Config, Qwen3Attention, dict(hidden_size=1024, num_attention_heads=16, num_key_value_heads=8,
                                                     head_dim=128, num_hidden_layers=28, attention_bias=False)),
    "Qwen3-4B": (Qwen3Config, Qwen3Attention, dict(hidden_size=2560, num_attention_heads=32, num_key_value_heads=8,
                                                   head_dim=128, num_hidden_layers=36, attention_bias=False)),
    "Qwen2-7B": (Qwen2Config, Qwen2Attention, dict(hidden_size=3584, num_attention_heads=28, num_key_value_heads=4,
                                                   num_hidden_layers=28)),
    "Gemma 2 9B": (Gemma2Config, Gemma2Attention, dict(hidden_size=3584, num_attention_heads=16, num_key_value_heads=8,
                                                       head_dim=256, num_hidden_layers=42, sliding_window=4096,
                                                       query_pre_attn_scalar=256)),
    "Gemma 3 1B": (Gemma3TextConfig, Gemma3Attention, dict(hidden_size=1152, num_attention_heads=4,
                                                           num_key_value_heads=1, head_dim=256, num_hidden_layers=26,
                                                           sliding_window=512, query_pre_attn_scalar=256)),
    "Gemma 3 27B": (Gemma3TextConfig, Gemma3Attention, dict(hidden_size=5376, num_attention_heads=32,
                                                            num_key_value_heads=16, head_dim=128, num_hidden_layers=62,
                                                            sliding_window=1024, query_pre_attn_scalar=168)),
    "gpt-oss-20b": (GptOssConfig, GptOssAttention, dict(hidden_size=2880, num_attention_heads=64, num_key_value_heads=8,
                                                        head_dim=64, num_hidden_layers=24, sliding_window=128)),
    "gpt-oss-120b": (GptOssConfig, GptOssAttention, dict(hidden_size=2880, num_attention_heads=64,
                                                         num_key_value_heads=8, head_dim=64, num_hidden_layers=36,
                                                         sliding_window=128)),
    "Mistral-7B-v0.1": (MistralConfig, MistralAttention, dict(hidden_size=4096, num_attention_heads=32,
                                                              num_key_value_heads=8, num_hidden_layers=32,
                                                              sliding_window=4096)),
    # Today's real-model presets too: their biases (none) and no window.
    "Llama 3 8B": (LlamaConfig, LlamaAttention, dict(hidden_size=4096, num_attention_heads=32, num_key_value_heads=8,
                                                     num_hidden_layers=32)),
    "Llama 3 70B": (LlamaConfig, LlamaAttention, dict(hidden_size=8192, num_attention_heads=64, num_key_value_heads=8,
                                                      num_hidden_layers=80)),
    "Mistral 7B": (MistralConfig, MistralAttention, dict(hidden_size=4096, num_attention_heads=32, num_key_value_heads=8,
                                                         num_hidden_layers=32, sliding_window=None)),
    "SmolLM2-135M": (LlamaConfig, LlamaAttention, dict(hidden_size=576, num_attention_heads=9, num_key_value_heads=3,
                                                       num_hidden_layers=30)),
}


def real_layers(name: str):
    config_cls, attn_cls, values = REAL[name]
    config = config_cls(**values)
    with torch.device("meta"):
        layers = [attn_cls(config, i) for i in range(config.num_hidden_layers)]
    return config, layers


def real_window(config, layer, i: int) -> int | None:
    """The window transformers gives layer i: its layer_types where the config has them (Gemma, gpt-oss),
    else the config's sliding_window on every layer (Mistral)."""
    types = getattr(config, "layer_types", None)
    if types is not None:
        return config.sliding_window if types[i] == "sliding_attention" else None
    return getattr(config, "sliding_window", None)


@pytest.mark.parametrize("name", sorted(REAL))
def test_preset_equals_the_real_model(name):
    config, layers = real_layers(name)
    # Applied after a biased, windowed preset: nothing of it may stay (a preset sets every layout field).
    cfg = find_preset(name).apply(find_preset("gpt-oss-20b").apply(AttentionConfig()))
    arch = cfg.architecture()
    assert (cfg.d_model, cfg.n_heads, cfg.kv_heads, cfg.n_layers) == (
        config.hidden_size, config.num_attention_heads, config.num_key_value_heads, config.num_hidden_layers)
    real_h = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    assert cfg.head_dim == real_h == layers[0].head_dim
    assert cfg.causal
    real_params = sum(p.numel() for layer in layers for p in layer.parameters())
    assert model_counts(arch, cfg).params == real_params
    for i, (spec, layer) in enumerate(zip(arch.layers, layers, strict=True)):
        assert spec.window == real_window(config, layer, i), f"layer {i}"
        assert spec.softmax_scale == pytest.approx(layer.scaling, rel=1e-12)
        ours = layer_param_counts(cfg.d_model, spec)
        assert ours.total == sum(p.numel() for p in layer.parameters())
        assert ours.qk_norm == sum(p.numel() for n, p in layer.named_parameters() if "norm" in n)
        assert ours.sinks == sum(p.numel() for n, p in layer.named_parameters() if "sinks" in n)
        assert ours.o == sum(p.numel() for n, p in layer.named_parameters() if n.startswith("o_proj"))


def test_gemma_3_27b_has_52_local_layers_and_10_global():
    arch = find_preset("Gemma 3 27B").apply(AttentionConfig()).architecture()
    assert [i for i, s in enumerate(arch.layers) if s.window is None] == [5, 11, 17, 23, 29, 35, 41, 47, 53, 59]


@pytest.mark.parametrize("name, n_embd, n_head, n_layer", [("GPT-2 small", 768, 12, 12), ("GPT-3 175B", 12288, 96, 96)])
def test_gpt_presets_have_the_biases_of_gpt2_attention(name, n_embd, n_head, n_layer):
    """GPT-2's c_attn and c_proj carry biases (GPT-3 is the same block, wider)."""
    with torch.device("meta"):
        layer = GPT2Attention(GPT2Config(n_embd=n_embd, n_head=n_head, n_layer=n_layer))
    cfg = find_preset(name).apply(AttentionConfig())
    assert layer_param_counts(cfg.d_model, cfg.layer_spec()).total == sum(p.numel() for p in layer.parameters())
