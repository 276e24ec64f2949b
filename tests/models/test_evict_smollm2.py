"""The compress protocol on SmolLM2-135M against independent references: the unchanged model's own forward,
a cache sliced by hand and run through transformers, kvpress 0.5.5's own losses (bench/kvpress_reference.py, run
in a separate venv: kvpress is no dependency), and the cache's bytes from the model's config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from core.models.evict.run import CompressRun, Eviction, run_compress
from core.models.kv.methods import KVMethod
from resources import CALIB_TEXT, EVAL_TEXT

C, N = 1024, 256
REFERENCE = json.loads((Path(__file__).parent / "kvpress_smollm2.json").read_text())


@pytest.fixture(scope="module")
def result(smollm2):
    return run_compress(smollm2, EVAL_TEXT.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def ids(smollm2):
    return smollm2.tokenizer(EVAL_TEXT.read_text(encoding="utf-8"), add_special_tokens=False)["input_ids"]


def test_unchanged_cache_equals_the_whole_text_in_one_forward(smollm2, result, ids) -> None:
    with torch.inference_mode():
        logits = smollm2.model(input_ids=torch.tensor([ids[: C + N]])).logits  # (1, C + N, V)
    # continuation tokens 2..N: the logits at positions C..C+N-2 predict the tokens at C+1..C+N-1
    want = float(F.cross_entropy(logits[0, C: C + N - 1], torch.tensor(ids[C + 1: C + N])))
    assert result.baseline.loss == pytest.approx(want, abs=1e-5)
    assert result.baseline.loss == pytest.approx(REFERENCE["rows"][0]["loss"], abs=1e-5)


def test_keeping_everything_changes_nothing_for_every_press(smollm2) -> None:
    run = CompressRun(smollm2, EVAL_TEXT.read_text(encoding="utf-8"), ratios=(0.5,))
    run.specs = [Eviction(name, C, 0.0) for name in ("streaming", "snapkv", "h2o", "tova", "knorm", "expected")]
    base = run.step(0).loss
    for i in range(1, run.steps):
        assert run.step(i).loss == pytest.approx(base, abs=1e-5)


@pytest.mark.parametrize("ratio", [0.5, 0.875])
def test_streaming_equals_a_hand_sliced_cache_through_transformers(smollm2, result, ids, ratio: float) -> None:
    from transformers import DynamicCache

    kept = int(C * (1 - ratio))
    recent = kept - 4
    model = smollm2.model
    previous = model.config._attn_implementation
    model.set_attn_implementation("sdpa")
    try:
        with torch.inference_mode():
            cache = DynamicCache(config=model.config)
            model(input_ids=torch.tensor([ids[:C]]), cache=cache)
            sliced = DynamicCache(config=model.config)
            for i, layer in enumerate(cache.layers):  # the first 4 and the last `recent` tokens of every layer
                k = torch.cat([layer.keys[:, :, :4], layer.keys[:, :, C - recent:]], dim=2)
                v = torch.cat([layer.values[:, :, :4], layer.values[:, :, C - recent:]], dim=2)
                sliced.update(k, v, i)
            cont = torch.tensor([ids[C: C + N]])
            logits = model(input_ids=cont, cache=sliced, position_ids=torch.arange(C, C + N)[None]).logits
    finally:
        model.set_attn_implementation(previous)
    want = float(F.cross_entropy(logits[0, :-1], cont[0, 1:]))
    point = next(p for p in result.points if p.method == "streaming" and p.setting == ratio)
    assert point.loss == pytest.approx(want, abs=1e-5)


def test_every_point_equals_kvpress(result) -> None:
    ours = {(p.method, p.setting): p.loss_change for p in result.points}
    rows = [r for r in REFERENCE["rows"] if r["method"] != "baseline"]
    assert len(rows) == 24 and {(r["method"], r["ratio"]) for r in rows} == set(ours)
    for r in rows:
        assert ours[(r["method"], r["ratio"])] == pytest.approx(r["loss_change"], abs=2e-5), r


def test_kv_bytes_are_kept_tokens_times_the_configs_bytes_a_token(smollm2, result) -> None:
    cfg = smollm2.model.config
    per_token = cfg.num_hidden_layers * 2 * cfg.num_key_value_heads * (cfg.hidden_size // cfg.num_attention_heads) * 2
    assert per_token == 23040 and result.bytes_per_token == per_token  # bf16 K and V of 30 layers x 3 heads x 64
    assert result.baseline.kv_bytes == C * per_token
    for p in result.points:
        assert p.kv_bytes == p.kept_tokens * per_token
        assert p.kept_tokens == int(C * (1 - p.setting))


def test_kept_bits_hold_each_head_s_tokens(result) -> None:
    from core.models.evict.points import unpack_kept

    for p in result.points:
        kept = unpack_kept(p.kept_bits, (result.layers, result.kv_heads, C))  # (30, 3, 1024)
        assert (kept.sum(-1) == p.kept_tokens).all()
        if p.method == "streaming":
            assert kept[:, :, :4].all() and kept[:, :, C - (p.kept_tokens - 4):].all()
        if p.method == "snapkv":
            assert kept[:, :, C - 64:].all()  # the observation window is always kept


def test_a_budget_keeps_what_it_holds_and_layer_methods_take_their_mildest_fitting_setting(smollm2) -> None:
    run = CompressRun(smollm2, EVAL_TEXT.read_text(encoding="utf-8"), budget_mib=5.0,
                      families=("window", "quant"), calib_text=CALIB_TEXT.read_text(encoding="utf-8"))
    kept = 5 * 2**20 // 23040  # 227 tokens
    evictions = [s for s in run.specs if isinstance(s, Eviction)]
    assert [s.kept for s in evictions] == [kept] * 6
    layer = [s for s in run.specs if isinstance(s, KVMethod)]
    # window W=128 (2.81 MiB) is the largest window within 5 MiB; q4_0 (6.33 MiB) is over it: no format fits
    assert [(s.method, s.setting) for s in layer] == [("window", 128), ("window_sinks", 124)]
    assert any("quantised KV is left out: no setting of it fits in 5 MiB" in n for n in run.notes)


def test_budgets_that_no_setting_meets_say_what_to_change(smollm2) -> None:
    text = EVAL_TEXT.read_text(encoding="utf-8")
    with pytest.raises(ValueError, match=r"already fits in 30 MiB: nothing to evict; give a budget below 22\.50 MiB"):
        CompressRun(smollm2, text, budget_mib=30.0)
    with pytest.raises(ValueError, match=r"0\.01 MiB holds no token .* give at least 0\.03 MiB"):
        CompressRun(smollm2, text, budget_mib=0.01)
    with pytest.raises(ValueError, match="SnapKV is left out: it always keeps 64 tokens"):
        CompressRun(smollm2, text, presses=("snapkv",), budget_mib=1.0)  # 45 tokens
    with pytest.raises(ValueError, match="the compress protocol needs 1,280"):
        CompressRun(smollm2, text[:2000])
