"""The 2026 layouts' counts: head widths of their own, windows and patterns, sinks, q/k norms, biases
by projection and KV formats, each against an independent reference (a real module, FlopCounterMode,
the formula written out, the check table)."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from core.arch.config import AttentionConfig
from core.counts import (
    flop_counts,
    kind_counts,
    kv_cache_bytes,
    layer_flop_counts,
    model_counts,
    param_counts,
)


def counted(fn) -> int:
    with FlopCounterMode(display=False) as fc:
        fn()
    return fc.get_total_flops()


@pytest.mark.parametrize("T, W", [(48, 16), (16, 16), (10, 16), (33, 1)])
def test_local_prefill_core_against_a_row_by_row_masked_computation(T, W):
    """Each query scores only the keys of its band (i - W < j <= i), row by row. FlopCounterMode counts
    the exact pairs, sum of min(i + 1, W); the band convention counts the band as an area (T*W - W^2/2,
    or T^2/2 for T <= W), which is min(T, W)/2 pairs fewer."""
    B, H, h = 2, 3, 8
    q, k, v = (torch.randn(B, H, T, h) for _ in range(3))

    def band():
        for i in range(T):
            lo = max(0, i - W + 1)
            p = (q[:, :, i:i + 1] @ k[:, :, lo:i + 1].transpose(-2, -1)).softmax(-1)
            p @ v[:, :, lo:i + 1]

    cfg = AttentionConfig(d_model=H * h, n_heads=H, seq_len=T, batch_size=B, causal=True, window=W,
                          layer_pattern="local", n_layers=1)
    ours = flop_counts(cfg).attention
    assert ours == counted(band) - 2 * B * H * h * min(T, W)
    if T > W:
        assert ours == 4 * B * H * h * T * W - 2 * B * H * h * W * W  # REFERENCE.md's integer form


@pytest.mark.parametrize("T, W", [(100, 16), (8, 16)])
def test_local_decode_reads_min_t_w_keys(T, W):
    B, H, h = 2, 4, 16
    keys = min(T, W)
    q, k, v = torch.randn(B, H, 1, h), torch.randn(B, H, keys, h), torch.randn(B, H, keys, h)
    cfg = AttentionConfig(d_model=H * h, n_heads=H, seq_len=T, batch_size=B, causal=True, window=W,
                          layer_pattern="local", n_layers=1, phase="decode")
    assert flop_counts(cfg).attention == counted(lambda: (q @ k.transpose(-2, -1)).softmax(-1) @ v)


def test_global_layers_keep_todays_counts_under_any_window():
    base = AttentionConfig(d_model=512, n_heads=8, n_kv_heads=2, seq_len=4096, causal=True, n_layers=4)
    windowed = base.with_(window=256, layer_pattern="GGGG")
    assert flop_counts(windowed) == flop_counts(base) and kv_cache_bytes(windowed) == kv_cache_bytes(base)


def test_explicit_head_dim_projections_against_real_linears():
    """Qwen3-0.6B's shape: 16 heads of 128 on a d_model of 1024 (W_q is 1024 x 2048), with q/k RMSNorm."""
    cfg = AttentionConfig(d_model=1024, n_heads=16, n_kv_heads=8, explicit_head_dim=128, qk_norm=True)
    mods = [nn.Linear(1024, 2048, bias=False), nn.Linear(1024, 1024, bias=False), nn.Linear(1024, 1024, bias=False),
            nn.Linear(2048, 1024, bias=False), nn.RMSNorm(128), nn.RMSNorm(128)]
    p = param_counts(cfg)
    assert p.total == sum(t.numel() for m in mods for t in m.parameters()) and p.qk_norm == 256
    x = torch.randn(1, cfg.seq_len, 1024)
    assert flop_counts(cfg).projections == counted(lambda: [m(x) for m in mods[:3]] + [mods[3](torch.randn(1, 1024, 2048))])


def test_tied_head_dim_is_todays_config():
    tied = AttentionConfig(d_model=768, n_heads=12, n_kv_heads=4)
    explicit = tied.with_(explicit_head_dim=64)
    assert tied.head_dim == 64 and tied.head_dim_tied and not explicit.head_dim_tied
    assert (param_counts(tied), flop_counts(tied), kv_cache_bytes(tied)) == (
        param_counts(explicit), flop_counts(explicit), kv_cache_bytes(explicit))


@pytest.mark.parametrize("bias, extra", [("none", 0), ("qkv", 2048 + 2 * 1024), ("all", 2048 + 2 * 1024 + 1024)])
def test_biases_by_projection(bias, extra):
    cfg = AttentionConfig(d_model=1024, n_heads=16, n_kv_heads=8, explicit_head_dim=128, bias=bias)
    assert param_counts(cfg).total == param_counts(cfg.with_(bias="none")).total + extra


def test_sinks_add_a_logit_per_head_and_no_kv():
    cfg = AttentionConfig(d_model=2880, n_heads=64, n_kv_heads=8, explicit_head_dim=64)
    sunk = cfg.with_(sinks=True)
    assert param_counts(sunk).total - param_counts(cfg).total == 64 == param_counts(sunk).sinks
    assert kv_cache_bytes(sunk) == kv_cache_bytes(cfg) and flop_counts(sunk) == flop_counts(cfg)


GEMMA3_27B = dict(d_model=5376, n_heads=32, n_kv_heads=16, explicit_head_dim=128, n_layers=62, causal=True,
                  window=1024, layer_pattern="5:1", qk_norm=True, dtype="bfloat16")


@pytest.mark.parametrize("T", [512, 1024, 8192, 131072])
def test_gemma_3_27b_kv_cache_against_the_formula(T):
    """KV bytes = 2 * K * h * b * B * (L_global * T + L_local * min(T, W)), 10 global and 52 local layers."""
    cfg = AttentionConfig(**GEMMA3_27B, seq_len=T, batch_size=2)
    expect = 2 * 16 * 128 * 2 * 2 * (10 * T + 52 * min(T, 1024))
    assert kv_cache_bytes(cfg).bytes_total == expect
    kinds = {k.kind: k for k in kind_counts(cfg.architecture(), cfg)}
    assert kinds["global"].n_layers == 10 and kinds["local W=1024"].n_layers == 52
    assert kinds["global"].kv_bytes_total + kinds["local W=1024"].kv_bytes_total == expect
    mc = model_counts(cfg.architecture(), cfg)
    assert sum(k.params for k in kinds.values()) == mc.params
    assert sum(k.flops for k in kinds.values()) == sum(
        layer_flop_counts(cfg.d_model, s, cfg).total for s in cfg.architecture().layers)


def test_a_local_layer_is_up_to_6x_smaller_than_every_layer_global():
    """The issue's 'wrong by up to 6x': Gemma 3 27B at 128k tokens against the same model all global."""
    cfg = AttentionConfig(**GEMMA3_27B, seq_len=131072)
    ratio = kv_cache_bytes(cfg.with_(layer_pattern="global")).bytes_total / kv_cache_bytes(cfg).bytes_total
    assert ratio == pytest.approx(62 * 131072 / (10 * 131072 + 52 * 1024))
    assert 5.5 < ratio < 6.2


@pytest.mark.parametrize("fmt, per_token_per_layer", [
    ("float32", 2 * 8 * 128 * 4), ("bfloat16", 2 * 8 * 128 * 2), ("float16", 2 * 8 * 128 * 2),
    ("fp8_e4m3", 2 * 8 * 128), ("fp8_e5m2", 2 * 8 * 128),
    ("q8_0", 2 * 8 * 128 // 32 * 34), ("q4_0", 2 * 8 * 128 // 32 * 18)])
def test_kv_formats_against_their_block_sizes(fmt, per_token_per_layer):
    """Llama 3 8B's layer (8 KV heads of 128); q8_0 and q4_0 blocks of 32 values with an fp16 scale."""
    cfg = AttentionConfig(d_model=4096, n_heads=32, n_kv_heads=8, n_layers=32, seq_len=8192, dtype="float16",
                          kv_dtype=fmt)
    kv = kv_cache_bytes(cfg)
    assert kv.bytes_per_token_per_layer == per_token_per_layer
    assert kv.bytes_total == per_token_per_layer * 32 * 8192
    if fmt == "float16":
        assert kv.bytes_per_token == 131072 and kv.bytes_total == 2**30  # the check table: 1 GiB at 8k


def test_llama_3_8b_check_value_in_q4_0():
    """A q4_0 block of 32 fp16 values (64 B) takes 18 B: 1 GiB of fp16 cache becomes 288 MiB."""
    cfg = AttentionConfig(d_model=4096, n_heads=32, n_kv_heads=8, n_layers=32, seq_len=8192, kv_dtype="q4_0")
    assert kv_cache_bytes(cfg).bytes_total == 288 * 2**20


@pytest.mark.parametrize("pattern, n_layers, local", [
    ("alternate", 5, [True, False, True, False, True]),
    ("5:1", 12, [True] * 5 + [False] + [True] * 5 + [False]),
    ("1:1", 4, [True, False, True, False]),
    ("L,G, l", 3, [True, False, True]),
    ("local", 2, [True, True]), ("global", 2, [False, False])])
def test_layer_patterns(pattern, n_layers, local):
    cfg = AttentionConfig(d_model=64, n_heads=4, n_layers=n_layers, causal=True, window=8, layer_pattern=pattern)
    assert [s.window == 8 for s in cfg.architecture().layers] == local


@pytest.mark.parametrize("fields, says", [
    (dict(window=0), "window must be a whole number of tokens from 1"),
    (dict(window=2**20 + 1), "from 1 to 1,048,576"),
    (dict(window=8, layer_pattern="LG"), "lists 2 layers but the model has 4"),
    (dict(window=8, layer_pattern="LLLLG"), "lists 5 layers but the model has 4"),
    (dict(window=8, layer_pattern=" , "), "names no layer"),
    (dict(window=8, layer_pattern="sometimes"), "is not known"),
    (dict(layer_pattern="local"), "no window is set"),
    (dict(window=8, layer_pattern="local", causal=False), "needs a causal mask"),
    (dict(explicit_head_dim=48, kv_dtype="q8_0"), "not a multiple of 32"),
    (dict(explicit_head_dim=80, kv_dtype="q4_0"), "not a multiple of 32"),
    (dict(kv_dtype="int3"), "KV-cache dtype 'int3' is not known"),
    (dict(bias="o"), "bias 'o' is not known"),
    (dict(explicit_head_dim=0), "head_dim must be a whole number from 1"),
    (dict(softmax_scale=-1.0), "softmax scale must be a positive number"),
])
def test_bad_layouts_are_refused_with_a_sentence(fields, says):
    with pytest.raises(ValueError, match=says):
        AttentionConfig(**{"d_model": 64, "n_heads": 4, "n_layers": 4, "causal": True, **fields})


def test_an_explicit_head_dim_frees_n_heads_from_dividing_d_model():
    cfg = AttentionConfig(d_model=100, n_heads=7, n_kv_heads=7, explicit_head_dim=32)
    assert param_counts(cfg).q == 100 * 7 * 32 and param_counts(cfg).o == 7 * 32 * 100
    with pytest.raises(ValueError, match="does not divide d_model"):
        AttentionConfig(d_model=100, n_heads=7)


def test_the_sliding_windows_lesson_against_the_formula():
    from core.study.lessons import find_lesson
    from core.study.sweep import SweepResult, plan_sweep, run_point

    lesson = find_lesson("windows")
    base = lesson.base_config(AttentionConfig())
    result = SweepResult(lesson.knob, [run_point(p, None) for p in plan_sweep(base, lesson.knob, lesson.values)])
    T = 131072
    windowed = 2 * 16 * 128 * 2 * (10 * T + 52 * 1024)
    every_global = 2 * 16 * 128 * 2 * 62 * T
    assert result.rows[-1].report["kv_cache"]["bytes_total"] == windowed
    caption = lesson.caption(result)
    assert f"x{every_global / windowed:.1f}" in caption and "(flat)" in caption and "52 local layers (W 1,024)" in caption


def test_a_real_model_pin_saved_before_layer_flops_still_opens(tmp_path):
    """Reports of schema 2 written before `layers[].flops_per_layer` existed: the pin opens, recounted."""
    import json

    from core.arch.layer import LayerSpec
    from core.arch.model import Architecture
    from core.study.workspace import Pin, load_workspace, pin_report, save_workspace

    cfg = AttentionConfig(d_model=64, n_heads=4, n_kv_heads=1, n_layers=3, causal=True)
    arch = Architecture(64, (LayerSpec(4, 1, 16), LayerSpec(4, 4, 16), LayerSpec(4, 4, 16)))
    model = {"key": "m", "name": "M", "layer": 0, "all_layers": False, "changed": "layer 0 only", "probe": "text",
             "kind": "causal", "js_divergence_mean": None, "output_rel_error": None, "loss_before": None,
             "loss_after": None, "embedding_cosine": None, "kv_cache_bytes_before": 0, "kv_cache_bytes_after": 0}
    pin = Pin(name="A", config=cfg, report={}, text="t", tokens=[], probs=None, arch=arch, model=model)
    pin.report = pin_report(pin, None)
    path = tmp_path / "old.json"
    save_workspace(path, [pin])
    data = json.loads(path.read_text())
    for group in data["pins"][0]["report"]["layers"]:
        del group["flops_per_layer"]
    path.write_text(json.dumps(data))
    (opened,) = load_workspace(path)
    assert [g["flops_per_layer"] for g in opened.report["layers"]] == [
        2 * 1024 * 64 * (4 * 16 + 2 * 16) + 2 * 1024 * 4 * 16 * 64 + 4 * 1024 * 1024 * 4 * 16 // 2,
        2 * 1024 * 64 * (3 * 4 * 16) + 2 * 1024 * 4 * 16 * 64 + 4 * 1024 * 1024 * 4 * 16 // 2]
