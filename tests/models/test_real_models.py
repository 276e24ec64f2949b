"""Both shipped models, offline: the app's attention against transformers' own, and head changes."""

import json

import numpy as np
import pytest
import torch

from core.arch.config import AttentionConfig
from core.counts import param_counts
from core.models.inspect import HeadChange, encode, inspect, recompute_attention
from core.models.surgery import js_divergence, modified_attention, valid_head_counts

TEXT = "The chef who trained in Lucknow cooked biryani, and the chef cooked it again."


def test_configs_are_the_models_real_ones(smollm2, minilm):
    assert (smollm2.n_layers, smollm2.n_heads, smollm2.n_kv_heads, smollm2.head_dim, smollm2.d_model) == (30, 9, 3, 64, 576)
    assert smollm2.kind == "causal"
    assert (minilm.n_layers, minilm.n_heads, minilm.n_kv_heads, minilm.head_dim, minilm.d_model) == (6, 12, 12, 32, 384)
    assert minilm.kind == "encoder"


def test_attention_rows_sum_to_one_and_match_transformers_eager(model):
    r = inspect(model, TEXT, layer=1)
    enc = encode(model, TEXT)
    extra = {"labels": enc["input_ids"]} if model.kind == "causal" else {}
    with torch.inference_mode():
        ref = model.model(**enc, output_attentions=True, **extra)  # the model's own eager path
    assert len(r.before.attentions) == model.n_layers
    for mine, theirs in zip(r.before.attentions, ref.attentions, strict=True):
        np.testing.assert_allclose(mine, theirs[0].numpy(), atol=1e-6)
        np.testing.assert_allclose(mine.sum(-1), 1.0, atol=1e-5)
    if model.kind == "causal":
        assert r.loss_before == pytest.approx(float(ref.loss), abs=1e-6)
        assert np.all(np.triu(r.before.attentions[0], 1) == 0)
    assert r.tokens and len(r.tokens) == enc["input_ids"].shape[1]


def test_recomputation_from_captured_queries_and_keys_matches(model):
    for layer in (0, model.n_layers - 1):
        r = inspect(model, TEXT, layer=layer)
        c = r.before.capture
        assert c.query.shape[1] == model.n_heads and c.key.shape[1] == model.n_kv_heads
        mine = recompute_attention(c, model.n_heads)[0].numpy()
        np.testing.assert_allclose(mine, r.before.attentions[layer], atol=1e-6)


def test_pooling_to_the_native_kv_count_changes_nothing(model):
    r = inspect(model, TEXT, layer=2)
    c = r.before.capture
    out, weights = modified_attention(c.query, c.key, c.value, c.mask, c.scaling, model.n_kv_heads, model.n_heads)
    np.testing.assert_allclose(weights[0].numpy(), r.before.attentions[2], atol=1e-6)
    same = inspect(model, TEXT, layer=2, change=HeadChange(n_kv_heads=model.n_kv_heads, n_heads=model.n_heads))
    assert same.after is None and same.kv_cache_bytes_after == same.kv_cache_bytes_before


def test_pooling_to_one_kv_head_changes_the_causal_loss_and_saves_cache(smollm2):
    r = inspect(smollm2, TEXT, layer=3, change=HeadChange(n_kv_heads=1))
    assert r.loss_after != pytest.approx(r.loss_before, abs=1e-4)
    assert 0 < r.js_divergence_mean <= 1 and r.output_rel_error > 0
    T = len(r.tokens)
    per_layer = 2 * smollm2.head_dim * T * 2  # fp16 bytes per KV head per layer
    assert r.kv_cache_bytes_before == 30 * 3 * per_layer
    assert r.kv_cache_bytes_after == (29 * 3 + 1) * per_layer
    everywhere = inspect(smollm2, TEXT, layer=3, change=HeadChange(n_kv_heads=1, all_layers=True))
    assert everywhere.kv_cache_bytes_after == 30 * 1 * per_layer
    assert everywhere.loss_after > r.loss_after


def test_encoder_fidelity_is_the_sentence_embedding_cosine(minilm):
    r = inspect(minilm, TEXT, layer=0, change=HeadChange(n_kv_heads=4))
    assert r.loss_before is None and 0.5 < r.embedding_cosine < 1.0


def test_resplitting_keeps_the_parameter_count(model):
    params_before = sum(p.numel() for p in model.model.parameters())
    heads = [h for h in valid_head_counts(model.n_heads, model.n_kv_heads, model.head_dim) if h != model.n_heads]
    new = min(heads, key=lambda h: abs(h - 2 * model.n_heads))
    r = inspect(model, TEXT, layer=1, change=HeadChange(n_heads=new))
    assert r.after.attentions[1].shape[0] == new and r.n_heads == new
    np.testing.assert_allclose(r.after.attentions[1].sum(-1), 1.0, atol=1e-5)
    assert sum(p.numel() for p in model.model.parameters()) == params_before
    d = model.d_model
    before = AttentionConfig(d_model=d, n_heads=model.n_heads, n_kv_heads=model.n_kv_heads, bias=model.kind == "encoder")
    after = before.with_(n_heads=new, n_kv_heads=r.n_kv_heads)
    assert param_counts(after).total == param_counts(before).total
    assert r.kv_cache_bytes_after == r.kv_cache_bytes_before  # re-splitting keeps the KV width


def test_js_divergence_bounds():
    p = torch.tensor([[1.0, 0.0], [0.5, 0.5]])
    assert js_divergence(p, p).max() == 0
    assert float(js_divergence(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0]))) == pytest.approx(1.0)


@pytest.mark.parametrize("change, words", [
    (HeadChange(n_kv_heads=6), "more cannot be made without training"),
    (HeadChange(n_kv_heads=2), "equal groups"),
    (HeadChange(n_heads=7), "cannot re-split"),
])
def test_bad_head_changes(smollm2, change, words):
    with pytest.raises(ValueError, match=words):
        inspect(smollm2, TEXT, 0, change)


def test_bad_layer_and_text(smollm2):
    with pytest.raises(ValueError, match="layers 0 to 29"):
        inspect(smollm2, TEXT, 30)
    with pytest.raises(ValueError, match="empty"):
        inspect(smollm2, "  ", 0)
    with pytest.raises(ValueError, match="Shorten it"):
        inspect(smollm2, "word " * 2000, 0)


def test_cli_inspect_json(capsys, tmp_path):
    from sandbox.cli.main import main

    code = main(["inspect", "--model", "minilm-l6", "--layer", "1", "--kv-heads", "3", "--json", "--out", str(tmp_path)])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["native_n_kv_heads"] == 12 and data["n_kv_heads"] == 3 and data["loss_before"] is None
    for key in ("tokens", "layer", "n_heads", "js_divergence_mean", "output_rel_error", "loss_after",
                "kv_cache_bytes_before", "kv_cache_bytes_after"):
        assert key in data
    assert np.load(tmp_path / "layer1_before.npy").shape == (12, len(data["tokens"]), len(data["tokens"]))
    assert (tmp_path / "layer1_after.png").stat().st_size > 0


def test_smollm2_is_dequantised_once_and_cached_as_safetensors(smollm2):
    from core.models.source import cache_dir, load_model

    again = load_model("smollm2-135m")  # the session fixture made the cache if it was missing
    assert again.source == str(cache_dir() / "smollm2-135m")
    enc = encode(again, TEXT)
    with torch.inference_mode():
        a = again.model(**enc, labels=enc["input_ids"]).loss
        b = smollm2.model(**enc, labels=enc["input_ids"]).loss
    assert float(a) == pytest.approx(float(b), abs=1e-6)


def test_cli_inspect_out_creates_its_folder_and_writes_labelled_maps_on_one_grid(capsys, tmp_path):
    from PySide6.QtGui import QImage

    from sandbox.cli.main import main
    from sandbox.tabs.mosaic_png import MARGIN, TOP
    from tests.app.test_export_frames import colour_bar_column, pixels
    from widgets.maps.colormaps import lut

    out = tmp_path / "new" / "maps"
    code = main(["inspect", "--model", "smollm2-135m", "--layer", "3", "--kv-heads", "1", "--out", str(out)])
    assert code == 0 and "layer output error (%)" in capsys.readouterr().out
    before, after = QImage(str(out / "layer3_before.png")), QImage(str(out / "layer3_after.png"))
    assert before.size() == after.size()  # 9 heads each, on the same grid
    assert colour_bar_column(pixels(before), lut("viridis")) is not None  # the bar runs the map, its max at the top
    title_px = [before.pixelColor(x, TOP // 2).lightness() for x in range(MARGIN, MARGIN + 200)]
    assert max(title_px) > 150  # the title is drawn (light text on the dark background)


def test_a_layer_change_reuses_the_unchanged_forward_and_gives_the_same_figures(smollm2):
    from core.models.forward_cache import ForwardCache
    from sandbox.jobs.model_compute import compute_model_view

    forwards = []
    handle = smollm2.model.register_forward_hook(lambda *_: forwards.append(1))
    try:
        cache = ForwardCache()
        tokens, first = compute_model_view(smollm2, "smollm2-135m", TEXT, 3, 9, 3, False, cache=cache)
        assert len(forwards) == 1
        _, other_layer = compute_model_view(smollm2, "smollm2-135m", TEXT, 17, 9, 3, False, cache=cache)
        assert len(forwards) == 1  # nothing changed: no forward at all for another layer
        _, changed = compute_model_view(smollm2, "smollm2-135m", TEXT, 17, 9, 1, False, cache=cache)
        assert len(forwards) == 2  # the changed forward only
        _, fresh = compute_model_view(smollm2, "smollm2-135m", TEXT, 17, 9, 1, False)  # no cache: both forwards
        assert len(forwards) == 4
    finally:
        handle.remove()
    np.testing.assert_array_equal(other_layer.before, fresh.before)
    np.testing.assert_array_equal(changed.after, fresh.after)
    for key in ("js_divergence_mean", "output_rel_error", "loss_before", "loss_after", "kv_cache_bytes_after"):
        assert changed.fidelity[key] == pytest.approx(fresh.fidelity[key], rel=1e-6), key
    np.testing.assert_array_equal(changed.roles["induction"], fresh.roles["induction"])


def test_prepare_models_makes_the_caches_a_first_open_then_reads(capsys, smollm2):
    from core.models.source import cache_dir
    from sandbox.cli.main import main

    assert main(["prepare-models"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("SmolLM2-135M: ready in") and str(cache_dir() / "smollm2-135m") in out[0]
    assert out[1].startswith("all-MiniLM-L6-v2: ready in")
    assert (cache_dir() / "smollm2-135m" / "model.safetensors").is_file()


def test_with_every_layer_changed_a_layer_change_runs_nothing(smollm2):
    from core.models.forward_cache import ForwardCache
    from sandbox.jobs.model_compute import compute_model_view

    forwards = []
    handle = smollm2.model.register_forward_hook(lambda *_: forwards.append(1))
    try:
        cache = ForwardCache()
        compute_model_view(smollm2, "smollm2-135m", TEXT, 3, 9, 1, True, cache=cache)
        assert len(forwards) == 2  # as trained, and changed in every layer
        _, later = compute_model_view(smollm2, "smollm2-135m", TEXT, 20, 9, 1, True, cache=cache)
        assert len(forwards) == 2  # both runs serve layer 20 too
        _, fresh = compute_model_view(smollm2, "smollm2-135m", TEXT, 20, 9, 1, True)
    finally:
        handle.remove()
    np.testing.assert_array_equal(later.after, fresh.after)
    assert later.fidelity["output_rel_error"] == pytest.approx(fresh.fidelity["output_rel_error"], rel=1e-6)
    assert later.fidelity["loss_after"] == pytest.approx(fresh.fidelity["loss_after"], rel=1e-6)


def test_the_presets_parameter_counts_are_the_shipped_models_own(smollm2, minilm):
    from core.arch.presets import find_preset

    for m, key in ((smollm2, "smollm2-135m"), (minilm, "all-minilm-l6-v2")):
        unique = {id(t): t.numel() for t in m.model.parameters()}  # a tied embedding counted once
        assert find_preset(key).params == sum(unique.values()), key
