"""DeepSeek sparse attention (MLA + lightning indexer) against transformers' own DeepseekV32Attention and
GlmMoeDsaAttention.

Parameters: each model card's config.json values (written here, not read from presets.json) on the meta device,
projection by projection and for the whole model. Numbers: a tiny random layer whose top-k is below its context, in
eager mode with RoPE at angle zero: the indexer's selection equals transformers', the layer's output equals its
output, the output equals dense attention restricted to the selected keys, and a decode step against the latent
and index caches gives the prefill's last row. Tokens read per query: a brute count of the selection mask."""

from __future__ import annotations

import pytest
import torch
from transformers import DeepseekV32Config, GlmMoeDsaConfig
from transformers.models.deepseek_v32.modeling_deepseek_v32 import DeepseekV32Attention
from transformers.models.glm_moe_dsa.modeling_glm_moe_dsa import GlmMoeDsaAttention

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.arch.presets import find_preset
from core.counts import layer_kv_bytes_per_token, layer_param_counts, model_counts
from core.kinds.dsa.counts import engine_fp8_parts, entries_read, selected_pairs
from core.kinds.dsa.layer import DSALayer
from core.kinds.dsa.spec import DSADims

V32_CARD = dict(hidden_size=7168, num_attention_heads=128, num_hidden_layers=61, q_lora_rank=1536, kv_lora_rank=512,
                qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128, index_n_heads=64, index_head_dim=128,
                index_topk=2048)
GLM5_CARD = dict(hidden_size=6144, num_attention_heads=64, num_hidden_layers=78, q_lora_rank=2048, kv_lora_rank=512,
                 qk_nope_head_dim=192, qk_rope_head_dim=64, v_head_dim=256, index_n_heads=32, index_head_dim=128,
                 index_topk=2048)
REAL = {"DeepSeek-V3.2": (DeepseekV32Config, DeepseekV32Attention, V32_CARD),
        "GLM-5": (GlmMoeDsaConfig, GlmMoeDsaAttention, GLM5_CARD)}
MODULES = {"q_a": "q_a_proj", "q_a_norm": "q_a_layernorm", "q_b": "q_b_proj", "kv_a": "kv_a_proj_with_mqa",
           "kv_a_norm": "kv_a_layernorm", "kv_b": "kv_b_proj", "o": "o_proj", "index_q": "indexer.wq_b",
           "index_k": "indexer.wk", "index_k_norm": "indexer.k_norm", "index_weights": "indexer.weights_proj"}


def hf_config(cls, values, **extra):
    return cls(**{**values, "num_key_value_heads": values["num_attention_heads"], **extra})


@pytest.mark.parametrize("name", sorted(REAL))
def test_every_projection_and_the_model_total_match_transformers(name):
    cls, attn_cls, values = REAL[name]
    cfg = find_preset(name).apply(AttentionConfig())
    spec = cfg.layer_spec()
    assert (cfg.d_model, cfg.n_heads, cfg.n_layers) == (values["hidden_size"], values["num_attention_heads"],
                                                       values["num_hidden_layers"])
    ours = layer_param_counts(cfg.d_model, spec).to_dict()
    with torch.device("meta"):
        layer = attn_cls(hf_config(cls, values), layer_idx=0)
    theirs = {k: sum(p.numel() for p in layer.get_submodule(mod).parameters()) for k, mod in MODULES.items()}
    assert {k: v for k, v in ours.items() if k not in ("total", "total_mha")} == theirs
    assert ours["total"] == sum(p.numel() for p in layer.parameters())
    assert model_counts(cfg.architecture(), cfg).params == ours["total"] * values["num_hidden_layers"]


def test_deepseek_v3_2_check_values():
    """The layer's parameters, and its cache a token a layer: bf16 as transformers keeps it, and the engines' fp8
    records (vLLM's fp8_ds_mla: 512 fp8 + 4 fp32 scales + 64 bf16 = 656 B; the indexer's 128 fp8 + one fp32
    scale = 132 B, ../shared/REFERENCE.md)."""
    cfg = find_preset("DeepSeek-V3.2").apply(AttentionConfig(dtype="bfloat16"))
    spec = cfg.layer_spec()
    assert layer_param_counts(cfg.d_model, spec).total == 187_107_328 + 13_959_424
    assert layer_kv_bytes_per_token(spec, cfg.kv_format) == 576 * 2 + 128 * 2
    assert engine_fp8_parts(spec) == {"latent": 656, "index_keys": 132}


TINY = dict(hidden_size=64, num_attention_heads=4, q_lora_rank=24, kv_lora_rank=32, qk_nope_head_dim=8,
            qk_rope_head_dim=4, v_head_dim=6, index_n_heads=16, index_head_dim=8, index_topk=5, num_hidden_layers=1)


def tiny_pair(cls=DeepseekV32Config, attn_cls=DeepseekV32Attention):
    """A random transformers layer (eager, float64) and ours holding its weights; top-5 of a longer context."""
    torch.manual_seed(0)
    theirs = attn_cls(hf_config(cls, TINY, attn_implementation="eager"), layer_idx=0).double().eval()
    with torch.no_grad():
        for p in theirs.parameters():
            p.uniform_(0.5, 1.5) if p.ndim == 1 else p.normal_(0, 0.2)
    dims = DSADims(24, 32, 8, 4, 6, index_n_heads=16, index_head_dim=8, index_topk=5)
    ours = DSALayer(AttentionConfig(d_model=64, n_heads=4, widths=dims, causal=True, seq_len=16)).double().eval()
    missing = ours.load_state_dict(theirs.state_dict(), strict=True)
    assert not missing.missing_keys and not missing.unexpected_keys
    return theirs, ours


def no_rotation(x):
    """RoPE at angle zero: our layer applies none, so transformers' must rotate nothing."""
    B, T, _ = x.shape
    return torch.ones(B, T, TINY["qk_rope_head_dim"], dtype=x.dtype), torch.zeros(B, T, TINY["qk_rope_head_dim"],
                                                                                  dtype=x.dtype)


def causal_mask(T, dtype=torch.float64):
    return torch.full((T, T), float("-inf"), dtype=dtype).triu(1)[None, None]


@pytest.mark.parametrize(("cls", "attn_cls"), [(DeepseekV32Config, DeepseekV32Attention),
                                               (GlmMoeDsaConfig, GlmMoeDsaAttention)])
def test_selection_and_output_equal_transformers(cls, attn_cls):
    theirs, ours = tiny_pair(cls, attn_cls)
    T = 16
    x = torch.randn(2, T, 64, dtype=torch.float64)
    with torch.no_grad():
        out = theirs(x, no_rotation(x), causal_mask(T))[0]  # GLM-5 also returns its top-k for the next layer
        q_resid = theirs.q_a_layernorm(theirs.q_a_proj(x))
        top = theirs.indexer(x, q_resid, no_rotation(x), causal_mask(T)[:, 0], None)  # (B, T, 5)
        chosen = ours.selected(x)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    theirs_chosen = torch.zeros(2, T, T, dtype=torch.bool).scatter_(-1, top.long(), True) & causal
    assert torch.equal(chosen, theirs_chosen)
    assert chosen.sum(-1).tolist() == [[min(t + 1, 5) for t in range(T)]] * 2  # top-5 of the causal keys
    torch.testing.assert_close(ours(x), out, rtol=1e-5, atol=1e-6)


def test_the_sparse_layer_is_dense_attention_restricted_to_the_selected_keys():
    _, ours = tiny_pair()
    T = 16
    x = torch.randn(1, T, 64, dtype=torch.float64)
    with torch.no_grad():
        q_nope, q_pe = ours.query(x)
        k, v = ours.decompress(*ours.latent(x))
        scores = torch.cat([q_nope, q_pe], -1) @ k.transpose(-1, -2) * ours.scale  # (1, H, T, T)
        keep = ours.selected(x)[:, None]
        weights = scores.masked_fill(~keep, float("-inf")).softmax(-1)
        expected = ours.merge_heads(weights @ v)
        torch.testing.assert_close(ours(x), expected)
        torch.testing.assert_close(ours.attention_probs(x).double(), weights, rtol=1e-5, atol=1e-7)
        assert torch.equal(ours.attention_probs(x) > 0, keep.expand_as(weights))  # exactly the selected keys
        dense = ours.dense(x)
    assert not torch.allclose(ours(x)[:, 5:], dense[:, 5:])  # past top-k, the selection changes the output
    torch.testing.assert_close(ours(x)[:, :5], dense[:, :5])  # before it, every causal key is selected


def test_a_decode_step_against_the_latent_and_index_caches_gives_the_prefill_s_last_row():
    _, ours = tiny_pair()
    T = 16
    x = torch.randn(2, T, 64, dtype=torch.float64)
    with torch.no_grad():
        c, k_pe = ours.latent(x)
        keys = ours.indexer.keys(x)
        zeros = lambda t: torch.cat([t[:, :-1], torch.zeros_like(t[:, -1:])], dim=1)  # noqa: E731  the new slot
        step = ours.decode_sparse(x[:, -1:], zeros(c), zeros(k_pe), zeros(keys))
        torch.testing.assert_close(step, ours(x)[:, -1:])


@pytest.mark.parametrize("T", [1024, 4096, 65536])
def test_tokens_read_per_query_equal_a_brute_count_of_the_selection(T):
    """The formula against the mask a tiny layer builds at a small context (its top-k scaled down), and at 1k, 4k
    and 64k against the count of the reference's rule, query t reading min(t + 1, k) causal tokens."""
    _, ours = tiny_pair()
    x = torch.randn(1, 40, 64, dtype=torch.float64)
    with torch.no_grad():
        brute = ours.selected(x).sum().item()
    assert brute == selected_pairs(40, 5)
    k = 2048
    by_rule = sum(min(t + 1, k) for t in range(T))
    spec = LayerSpec(128, 128, 192, widths=DSADims())
    assert selected_pairs(T, k) == by_rule and entries_read(spec, T, "prefill") == by_rule / T
    assert entries_read(spec, T, "decode") == min(T, k)


def test_attention_mla_on_a_dsa_preset_drops_the_indexer_and_a_stack_layer_s_format_is_checked(capsys):
    from core.kinds.selection import KeySelection
    from sandbox.cli.main import main

    assert main(["report", "--preset", "deepseek-v3-2", "--attention", "mla", "--json"]) == 0
    out = capsys.readouterr().out
    import json

    r = json.loads(out)
    assert r["config"]["mode"] == "MLA" and "dsa" not in r and r["params"]["total"] == 187_107_328
    d = find_preset("DeepSeek-V4-Flash").apply(AttentionConfig()).to_dict()
    d["stack"]["mixers"]["W"]["dsv4"].update(kv_head_dim=16, qk_rope_head_dim=8)
    d["stack"]["mixers"]["W"]["head_dim"] = 16
    d["kv_dtype"] = "q4_0"
    with pytest.raises(ValueError, match="kv_head_dim 16 is not a multiple of 32"):
        AttentionConfig.from_dict(d)
    import numpy as np

    with pytest.raises(ValueError, match="are T x T"):
        KeySelection(np.ones((3, 3), bool), np.zeros((4, 4)), "", "", np.zeros((2, 3, 3)))
