"""DeepSeek-V4's attention against transformers' own DeepseekV4Attention.

Parameters: V4-Flash's and V4-Pro's config.json values (written here, not read from presets.json) on the meta device,
projection by projection for each layer type, and every preset's layers summed against the meta model's attention.
Numbers: a tiny random layer of each type (window only, compressed sparse with a top-k below its entries, heavily
compressed) in eager mode with RoPE at angle zero gives transformers' output. Entries read: a brute count of the mask
the layer builds against the closed forms, and at 1k, 4k and 64k by the reference's rule."""

from __future__ import annotations

import pytest
import torch
from transformers import DeepseekV4Config
from transformers.models.deepseek_v4.modeling_deepseek_v4 import DeepseekV4Attention

from core.arch.config import AttentionConfig
from core.arch.layer import LayerSpec
from core.arch.presets import find_preset
from core.counts import layer_param_counts, model_counts
from core.kinds.dsv4.counts import PART_NAMES, compressed_pairs, entries_read, window_pairs
from core.kinds.dsv4.layer import V4Layer
from core.kinds.dsv4.spec import V4Dims

FLASH = dict(hidden_size=4096, num_hidden_layers=43, num_attention_heads=64, head_dim=512, q_lora_rank=1024,
             o_groups=8, o_lora_rank=1024, index_n_heads=64, index_head_dim=128, index_topk=512, sliding_window=128,
             compress_ratios=[0, 0] + [4, 128] * 20 + [4, 0])
PRO = dict(hidden_size=7168, num_hidden_layers=61, num_attention_heads=128, head_dim=512, q_lora_rank=1536,
           o_groups=16, o_lora_rank=1024, index_n_heads=64, index_head_dim=128, index_topk=1024, sliding_window=128,
           compress_ratios=[128, 128] + [4, 128] * 29 + [4, 0])
REAL = {"DeepSeek-V4-Flash": FLASH, "DeepSeek-V4-Pro": PRO}


@pytest.mark.parametrize("name", sorted(REAL))
def test_every_layer_type_s_projections_and_the_stack_match_transformers(name):
    values = REAL[name]
    hf = DeepseekV4Config(**values)
    cfg = find_preset(name).apply(AttentionConfig())
    arch = cfg.architecture()
    assert (cfg.d_model, cfg.n_heads, cfg.n_layers) == (values["hidden_size"], values["num_attention_heads"], 43
                                                       if name.endswith("Flash") else 61)
    types = {"none": "sliding_attention", "csa": "compressed_sparse_attention", "hca": "heavily_compressed_attention"}
    assert [types[s.widths.compressor] for s in arch.layers] == hf.layer_types  # the schedule, the MTP entry left out
    whole = 0
    with torch.device("meta"):
        for i in range(cfg.n_layers):
            layer = DeepseekV4Attention(hf, layer_idx=i)
            n = sum(p.numel() for p in layer.parameters())
            whole += n
            if i in (0, 2, 3):  # each type once
                ours = layer_param_counts(cfg.d_model, arch.layers[i]).to_dict()
                theirs = {k: layer.get_parameter(PART_NAMES[k] + ("" if k in ("sinks",) or k.endswith("bias")
                                                                   else ".weight")).numel()
                          for k in ours if k not in ("total", "total_mha")}
                assert {k: v for k, v in ours.items() if k not in ("total", "total_mha")} == theirs
                assert ours["total"] == n
    assert model_counts(arch, cfg).params == whole


def test_v4_flash_check_values():
    """Per layer (../shared/REFERENCE.md's widths): window only 106,956,352, heavily compressed 111,216,704,
    compressed sparse 126,098,624 parameters."""
    cfg = find_preset("DeepSeek-V4-Flash").apply(AttentionConfig())
    totals = {s.widths.compressor: layer_param_counts(cfg.d_model, s).total for s in cfg.architecture().layers}
    assert totals == {"none": 106_956_352, "hca": 111_216_704, "csa": 126_098_624}


TINY = dict(hidden_size=64, num_attention_heads=4, head_dim=32, q_lora_rank=24, o_groups=2, o_lora_rank=16,
            index_n_heads=4, index_head_dim=16, index_topk=3, sliding_window=8, num_hidden_layers=3,
            compress_rates={"compressed_sparse_attention": 4, "heavily_compressed_attention": 8},
            layer_types=["sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"],
            partial_rotary_factor=8 / 32)
COMPRESSORS = {0: ("none", 0), 1: ("csa", 4), 2: ("hca", 8)}


def tiny_pair(layer_idx):
    """A random transformers layer (eager, float64) and ours holding its weights."""
    torch.manual_seed(layer_idx)
    hf = DeepseekV4Config(**TINY, attn_implementation="eager")
    theirs = DeepseekV4Attention(hf, layer_idx=layer_idx).double().eval()
    with torch.no_grad():
        for name, p in theirs.named_parameters():
            p.copy_(torch.rand_like(p) + 0.5 if p.ndim == 1 or "norm" in name else torch.randn_like(p) * 0.2)
    compressor, ratio = COMPRESSORS[layer_idx]
    dims = V4Dims(q_lora_rank=24, kv_head_dim=32, qk_rope_head_dim=8, o_groups=2, o_lora_rank=16, window=8,
                  compressor=compressor, compress_ratio=ratio, index_n_heads=4, index_head_dim=16, index_topk=3)
    ours = V4Layer(64, LayerSpec(4, 1, 32, widths=dims)).double().eval()
    missing = ours.load_state_dict(theirs.state_dict(), strict=True)
    assert not missing.missing_keys and not missing.unexpected_keys
    return theirs, ours


def no_rotation(module, B, T):
    """RoPE at angle zero everywhere: the layer's own (given) and its compressor's and indexer's (their own rotary
    embeddings, replaced)."""
    half = TINY["head_dim"] * TINY["partial_rotary_factor"] // 2

    def angle_zero(x, position_ids, layer_type=None):
        shape = (*position_ids.shape, int(half))
        return torch.ones(shape, dtype=torch.float64), torch.zeros(shape, dtype=torch.float64)

    for sub in module.modules():
        if hasattr(sub, "rotary_emb"):
            sub.rotary_emb.forward = angle_zero
    cos, sin = angle_zero(None, torch.zeros(B, T))
    return {"main": (cos, sin), "compress": (cos, sin)}


def window_mask(T, W, B=2):
    ones = torch.ones(T, T, dtype=torch.bool)
    allowed = ones.tril() & ~ones.tril(-W)
    return torch.zeros(T, T, dtype=torch.float64).masked_fill(~allowed, float("-inf"))[None, None].expand(B, 1, T, T)


@pytest.mark.parametrize("layer_idx", [0, 1, 2])
@pytest.mark.parametrize("T", [37, 3])  # 37: windows of 4 and 8 with a remainder, 9 sparse entries (top-3); 3: none
def test_each_layer_type_s_output_equals_transformers(layer_idx, T):
    theirs, ours = tiny_pair(layer_idx)
    B = 2
    x = torch.randn(B, T, 64, dtype=torch.float64)
    with torch.no_grad():
        out, _ = theirs(x, no_rotation(theirs, B, T), torch.arange(T)[None].expand(B, T), window_mask(T, 8))
        torch.testing.assert_close(ours(x), out, rtol=1e-5, atol=1e-6)
        probs, sinks = ours.probs_and_sinks(x)
    torch.testing.assert_close(probs.sum(-1) + sinks, torch.ones(B, 4, T))  # float32 maps: rows and sinks sum to 1


@pytest.mark.parametrize("layer_idx", [1, 2])
def test_entries_read_per_query_equal_a_brute_count_of_the_mask(layer_idx):
    _, ours = tiny_pair(layer_idx)
    T = 37
    x = torch.randn(1, T, 64, dtype=torch.float64)
    with torch.no_grad():
        _, _, allowed = ours.read(x)  # (1, T, T + n): the window's tokens, then the entries
    window, entries = allowed[0, :, :T].sum().item(), allowed[0, :, T:].sum().item()
    m = ours.m
    assert window == window_pairs(T, m.window) and entries == compressed_pairs(T, m)
    last = allowed[0, -1]
    assert (last[:T].sum().item(), last[T:].sum().item()) == entries_read(LayerSpec(4, 1, 32, widths=m), T, "decode")


@pytest.mark.parametrize(("T", "flash", "pro"), [(1024, 130_816, 130_816), (4096, 1_572_352, 2_096_128),
                                                 (65536, 33_029_632, 65_010_688)])
def test_compressed_sparse_entries_at_1k_4k_and_64k(T, flash, pro):
    """Query t reads min(k, floor((t + 1) / 4)) entries: summed by the rule here, against the closed form."""
    for k, total in ((512, flash), (1024, pro)):
        assert sum(min(k, n // 4) for n in range(1, T + 1)) == total
        assert compressed_pairs(T, V4Dims(index_topk=k)) == total
    hca = V4Dims(compressor="hca", compress_ratio=128)
    assert compressed_pairs(T, hca) == sum(n // 128 for n in range(1, T + 1))


@pytest.mark.parametrize("layer_idx", [0, 1, 2])
@pytest.mark.parametrize("T", [37, 40])  # the new token inside a window, and the one that completes it
def test_a_decode_step_against_the_window_and_entries_gives_the_prefill_s_last_row(layer_idx, T):
    _, ours = tiny_pair(layer_idx)
    x = torch.randn(2, T, 64, dtype=torch.float64)
    with torch.no_grad():
        window, entries, index = ours.caches(x)
        window = torch.cat([window[:, :-1], torch.zeros_like(window[:, -1:])], dim=1)  # the new token's slot
        step = ours.decode_step(x[:, -1:], window, entries, index)
        torch.testing.assert_close(step, ours(x)[:, -1:], rtol=1e-5, atol=1e-6)  # scores in float32, as the prefill


def test_the_dense_twin_reads_every_causal_token_and_its_step_gives_its_last_row():
    _, ours = tiny_pair(1)
    T = 37
    x = torch.randn(1, T, 64, dtype=torch.float64)
    with torch.no_grad():
        wide = V4Layer(64, LayerSpec(4, 1, 32, widths=V4Dims(
            q_lora_rank=24, kv_head_dim=32, qk_rope_head_dim=8, o_groups=2, o_lora_rank=16, window=T,
            compressor="none", compress_ratio=0))).double()
        wide.load_state_dict({k: v for k, v in ours.state_dict().items() if not k.startswith("compressor.")})
        torch.testing.assert_close(ours.dense(x), wide(x))  # a window as long as the text: every causal token
        keys = ours.kv_norm(ours.kv_proj(x))
        step = ours.decode_dense(x[:, -1:], torch.cat([keys[:, :-1], torch.zeros_like(keys[:, -1:])], dim=1))
        torch.testing.assert_close(step, ours.dense(x)[:, -1:], rtol=1e-5, atol=1e-6)


def test_the_maps_read_the_window_and_the_tokens_of_the_entries_read():
    """A compressed sparse query reads its window and the tokens its picked entries merge (entry e > 0: tokens
    4(e - 1) .. 4e + 3; entry 0: tokens 0 .. 3), counted here with sets; the maps' weights sit on those tokens only."""
    from core.kinds.dsv4.kernels import V4Kernels

    _, ours = tiny_pair(1)
    T = 37
    x = torch.randn(1, T, 64, dtype=torch.float64)
    with torch.no_grad():
        _, _, allowed = ours.read(x)
        selection = V4Kernels().key_selection(ours, x)
        probs, _ = ours.probs_and_sinks(x)
    for t in range(T):
        want = {s for s in range(T) if t - 8 < s <= t}
        for e in map(int, torch.nonzero(allowed[0, t, T:]).flatten()):
            want |= set(range(max(0, 4 * (e - 1)) if e else 0, 4 * e + 4))
        assert set(map(int, torch.nonzero(torch.as_tensor(selection.read[t])).flatten())) == want
    assert (probs[0] > 0).sum(0).bool().numpy().tolist() == selection.read.tolist()  # weight on read tokens only
    assert selection.skipped().any()  # a top-3 of 9 entries skips some tokens beyond the window


def test_a_heavily_compressed_layer_checks_no_index_key_and_its_timing_follows_the_phase():
    V4Dims(compressor="hca", compress_ratio=128, index_head_dim=80).check_kv_format("q8_0")  # it caches none
    with pytest.raises(ValueError, match="index_head_dim 80 is not a multiple of 32"):
        V4Dims(index_head_dim=80).check_kv_format("q8_0")
    from core.kinds.dsv4.timing import run_v4_timing

    spec = LayerSpec(4, 1, 32, widths=V4Dims(q_lora_rank=24, kv_head_dim=32, qk_rope_head_dim=8, o_groups=2,
                                             o_lora_rank=16, window=8, compress_ratio=4, index_n_heads=4,
                                             index_head_dim=16, index_topk=3))
    cfg = AttentionConfig(d_model=64, n_heads=4, widths=spec.widths, causal=True, seq_len=64, phase="decode")
    r = run_v4_timing(cfg, torch.device("cpu"), budget_s=0.01)
    assert r.layer is r.decode and r.layer.median_ms == r.forms["v4_decode_ms"]
