"""Each preset's weights by part, as resources/presets.json keeps them, against a transformers model of the same
public config built on the meta device (no weights): every parameter lands in exactly one part, and the parts
sum to the model's own count."""

import pytest
import torch

from core.arch.presets import find_preset
from core.plan.weights import PARTS, WeightParts

transformers = pytest.importorskip("transformers")

# The public configs' fields that size the weights (huggingface.co/<repo>/blob/main/config.json).
CONFIGS = {
    "gpt-oss-20b": ("GptOssConfig", dict(hidden_size=2880, num_hidden_layers=24, num_attention_heads=64,
                                         num_key_value_heads=8, head_dim=64, intermediate_size=2880,
                                         num_local_experts=32, num_experts_per_tok=4, vocab_size=201088,
                                         sliding_window=128, tie_word_embeddings=False)),
    "gpt-oss-120b": ("GptOssConfig", dict(hidden_size=2880, num_hidden_layers=36, num_attention_heads=64,
                                          num_key_value_heads=8, head_dim=64, intermediate_size=2880,
                                          num_local_experts=128, num_experts_per_tok=4, vocab_size=201088,
                                          sliding_window=128, tie_word_embeddings=False)),
    "deepseek-v3": ("DeepseekV3Config", dict(hidden_size=7168, num_hidden_layers=61, num_attention_heads=128,
                                             num_key_value_heads=128, q_lora_rank=1536, kv_lora_rank=512,
                                             qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128,
                                             intermediate_size=18432, moe_intermediate_size=2048, n_routed_experts=256,
                                             n_shared_experts=1, num_experts_per_tok=8, first_k_dense_replace=3,
                                             vocab_size=129280, tie_word_embeddings=False)),
    "deepseek-v3-2": ("DeepseekV32Config", dict(hidden_size=7168, num_hidden_layers=61, num_attention_heads=128,
                                               num_key_value_heads=128, q_lora_rank=1536, kv_lora_rank=512,
                                               qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128,
                                               index_n_heads=64, index_head_dim=128, index_topk=2048,
                                               intermediate_size=18432, moe_intermediate_size=2048,
                                               n_routed_experts=256, n_shared_experts=1, num_experts_per_tok=8,
                                               first_k_dense_replace=3, vocab_size=129280, tie_word_embeddings=False)),
    "qwen3-235b-a22b-fp8": ("Qwen3MoeConfig", dict(hidden_size=4096, num_hidden_layers=94, num_attention_heads=64,
                                                   num_key_value_heads=4, head_dim=128, intermediate_size=12288,
                                                   moe_intermediate_size=1536, num_experts=128, num_experts_per_tok=8,
                                                   vocab_size=151936, tie_word_embeddings=False, decoder_sparse_step=1,
                                                   mlp_only_layers=[])),
}


def part_of(name: str) -> str:
    """A parameter's part by its transformers name (a layer's own norms are the attention's where they sit in it)."""
    if "embed_tokens" in name or "lm_head" in name:
        return "embeddings"
    if ".self_attn." in name:
        return "attention"
    if "norm" in name.rsplit(".", 2)[-2]:
        return "norms"
    if ".mlp.experts." in name:
        return "experts"
    if ".mlp." in name:
        return "dense_mlp"
    raise AssertionError(f"no part for {name}")


@pytest.mark.parametrize("key", list(CONFIGS))
def test_the_parts_are_the_meta_model_s_own(key):
    config_class, fields = CONFIGS[key]
    config = getattr(transformers, config_class)(**fields)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    counted = dict.fromkeys(PARTS, 0)
    for name, p in model.named_parameters():
        counted[part_of(name)] += p.numel()
    preset = find_preset(key)
    parts = WeightParts.from_json(preset.weights)
    assert dict(parts.params) == counted
    assert parts.total == sum(p.numel() for p in model.parameters()) == preset.params
