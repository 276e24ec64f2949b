"""Real models in the window (both shipped models, offline)."""

import numpy as np
import pytest
import torch

from core.models.inspect import HeadChange, encode, inspect
from core.models.source import load_model, shipped_unavailable_reason

pytestmark = pytest.mark.skipif(bool(shipped_unavailable_reason("minilm-l6")), reason="the [models] extra is missing")
TEXT = "The chef who trained in Lucknow cooked biryani"


def test_loading_a_real_model_locks_the_sliders_and_shows_its_real_heads(make_window):
    w = make_window(text=TEXT)
    w.models.load("minilm-l6")
    cfg = w.config()
    assert (cfg.d_model, cfg.n_heads, cfg.kv_heads, cfg.n_layers, cfg.bias) == (384, 12, 12, 6, True)
    assert not w.config_panel.d_model.isEnabled() and "own (384)" in w.config_panel.d_model.toolTip()
    assert w.config_panel.n_kv_heads.choices() == [1, 2, 3, 4, 6, 12]  # never above the trained 12
    m = load_model("minilm-l6")
    enc = encode(m, TEXT)
    with torch.inference_mode():
        ref = m.model(**enc, output_attentions=True).attentions
    hm = w.last_heatmaps
    np.testing.assert_allclose(hm.probs, ref[0][0].numpy(), atol=1e-6)
    assert hm.tokens[0] == "[CLS]" and hm.model.overview.shape[0] == 6 * 12
    w.models.picker.layer.setValue(4)
    np.testing.assert_allclose(w.last_heatmaps.probs, ref[4][0].numpy(), atol=1e-6)
    assert w.last_timing.config.d_model == 384  # timing runs the real layer's shapes


def test_fewer_kv_heads_show_the_original_beside_and_the_fidelity_figures(make_window):
    w = make_window(text=TEXT)
    w.models.load("smollm2-135m")
    w.models.picker.layer.setValue(2)
    panel = w.config_panel
    panel.n_kv_heads.slider.setValue(0)  # 3 -> 1 KV head
    hm = w.last_heatmaps
    assert w.config().kv_heads == 1 and hm.model.after is not None and w.models.original.isVisible()
    ref = inspect(load_model("smollm2-135m"), TEXT, 2, HeadChange(n_kv_heads=1))
    f = hm.model.fidelity
    assert f["loss_after"] == pytest.approx(ref.loss_after) and f["js_divergence_mean"] == pytest.approx(ref.js_divergence_mean)
    assert w.models.fidelity.values["loss"].text().startswith(f"{ref.loss_before:.4f} → {ref.loss_after:.4f}")
    assert "saves" in w.models.fidelity.values["kv"].text()
    panel.n_heads.slider.setValue(panel.n_heads.choices().index(18))
    assert w.config().n_heads == 18 and w.last_heatmaps.probs.shape[0] == 18


def test_clicking_the_overview_jumps_to_that_layer_and_head(make_window):
    w = make_window(text=TEXT)
    w.models.load("minilm-l6")
    w.models.overview.head_clicked.emit(3 * 6 + 5)  # head 3 of layer 5 (one column per layer)
    assert w.models.layer == 5
    view = w.head_views[-1]
    np.testing.assert_array_equal(view.probs, w.last_heatmaps.probs[3])


def test_a_bad_folder_keeps_the_model_it_had(make_window, tmp_path):
    w = make_window(text=TEXT)
    w.models.load("minilm-l6")
    w.models.load(str(tmp_path))
    assert "no config.json" in w.last_alert and w.models.key == "minilm-l6"
    assert w.models.picker.combo.currentData() == "minilm-l6" and w.config().d_model == 384


def test_back_to_random_weights_frees_the_sliders(make_window):
    w = make_window()
    w.models.load("minilm-l6")
    w.models.use_random()
    assert w.models.key is None and w.config_panel.d_model.isEnabled() and w.last_heatmaps.model is None


def test_without_the_extra_the_real_models_are_disabled_with_a_reason(make_window, monkeypatch):
    import sandbox.tabs.models as mc

    monkeypatch.setattr(mc, "shipped_unavailable_reason", lambda key: "real models need the [models] extra")
    w = make_window()
    combo = w.models.picker.combo
    items = [combo.model().item(i) for i in range(combo.count())]
    disabled = [i.text() for i in items if not i.isEnabled()]
    assert len(disabled) == 2 and all("unavailable" in t for t in disabled)
    assert "[models] extra" in w.models.picker.unavailable.text()


def test_costs_count_a_one_layer_change_as_the_fidelity_panel_does(make_window):
    w = make_window(text=TEXT)
    w.models.load("smollm2-135m")
    w.models.picker.layer.setValue(18)
    w.config_panel.n_kv_heads.slider.setValue(0)  # layer 18 only: 3 -> 1 KV head
    cfg, m = w.config(), w.metrics
    b, T = cfg.dtype_bytes, cfg.seq_len
    # SmolLM2's own config: 30 layers, 3 KV heads of width 64; only layer 18 now has 1.
    per_token = 29 * 2 * 3 * 64 * b + 1 * 2 * 1 * 64 * b
    trained = 30 * 2 * 3 * 64 * b
    assert m.values["kv_token"].text() == f"{per_token:,} B"
    assert m.values["kv_total"].text() == f"{per_token * T:,} B"
    assert m.deltas["kv_token"].text() == f"{per_token / trained - 1:+.1%}"  # -2.2%, not -66.7%
    assert m.delta_header.text() == "vs trained"
    assert "layer 18 only" in m.scope.text() and m.scope.isVisible()
    f = w.last_heatmaps.model.fidelity
    saved = 1 - f["kv_cache_bytes_after"] / f["kv_cache_bytes_before"]
    assert f"saves {saved:.1%}" in w.models.fidelity.values["kv"].text()
    assert f"{saved:.1%}" == f"{1 - per_token / trained:.1%}"  # the two panels agree
    w.models.picker.all_layers.setChecked(True)  # the same change in every layer
    assert m.values["kv_token"].text() == f"{30 * 2 * 1 * 64 * b:,} B" and "every layer" in m.scope.text()
    # The converted checkpoint keeps one pooled W_k and W_v head per layer: 2 d h (H + K) with K = 1.
    assert m.values["params_model"].text() == f"{30 * (2 * 576 * 64 * (9 + 1)):,}"


def test_an_encoder_has_no_kv_cache_and_says_so(make_window):
    w = make_window(text=TEXT)
    w.models.load("minilm-l6")
    m = w.metrics
    assert m.values["kv_token"].text() == "none" and "keeps no KV cache" in m.values["kv_token"].toolTip()


def test_a_kv_count_that_cannot_be_reached_says_why(make_window):
    w = make_window(text=TEXT)
    w.models.load("smollm2-135m")
    panel = w.config_panel
    panel.n_heads.spin.setValue(96)  # 9 x 64 re-split into 96 heads of 6
    assert panel.n_kv_heads.choices() == [32]  # 96 x P / 9 is whole only for P = 3
    assert not panel.n_kv_heads.slider.isEnabled() and "Only 32 is possible" in panel.n_kv_heads.slider.toolTip()
    panel.n_kv_heads.spin.setValue(8)  # typed
    assert w.config().kv_heads == 32
    notice = panel.last_notice
    assert notice.startswith("n_kv_heads 8 is not possible here; it is 32, the nearest allowed (32). With 96 heads")
    assert "n_kv_heads = 96 x P / 9 must be whole" in notice
    assert notice in w.statusBar().currentMessage()


def test_pins_compare_manifests_and_workspaces_keep_the_real_model_context(make_window, tmp_path):
    import json

    from core.study.compare import comparison
    from core.study.workspace import load_workspace

    w = make_window(text=TEXT)
    w.models.load("smollm2-135m")
    w.models.picker.layer.setValue(18)
    w.config_panel.n_kv_heads.slider.setValue(0)  # layer 18 only
    a = w.pins.pin_current()
    w.models.picker.all_layers.setChecked(True)  # every layer
    b = w.pins.pin_current()
    fa, fb = a.model, b.model
    assert (fa["name"], fa["layer"], fa["changed"], fb["changed"]) == ("SmolLM2-135M", 18, "layer 18 only", "every layer")
    ref = inspect(load_model("smollm2-135m"), TEXT, 18, HeadChange(n_kv_heads=1))
    assert fa["loss_after"] == pytest.approx(ref.loss_after) and fa["js_divergence_mean"] == pytest.approx(ref.js_divergence_mean)
    b_bytes = a.config.dtype_bytes
    assert a.report["kv_cache"]["bytes_per_token"] == (29 * 3 + 1) * 2 * 64 * b_bytes
    assert b.report["kv_cache"]["bytes_per_token"] == 30 * 1 * 2 * 64 * b_bytes
    rows = {r.label: r for r in comparison([a.report, b.report], 0)}
    assert [c.text for c in rows["changed"].cells] == ["layer 18 only", "every layer"]
    assert rows["KV cache / token"].cells[1].relation == f"x{(30 * 1) / (29 * 3 + 1):.3g}"  # no longer identical
    assert rows["next-token loss, changed"].cells[0].text == f"{ref.loss_after:.4f}"
    assert rows["layer output error"].cells[0].text == f"{ref.output_rel_error:.2%}"
    table = w.pins.table.text()
    assert "attention JS divergence (bits)" in table and "SmolLM2-135M" in table
    # The export manifest carries the same context; under the induction probe its text says so.
    w.roles.toggle_probe()
    m = w.manifest()
    assert m["model"]["name"] == "SmolLM2-135M" and m["model"]["probe"] == "induction" and m["probe"] == "induction"
    assert m["text"] is None and m["typed_text"] == TEXT
    assert m["architecture"]["layers"] == [{"spec": {"n_heads": 9, "n_kv_heads": 1, "head_dim": 64, "bias": False},
                                            "count": 30}]
    # A workspace keeps it all, and reads it back exactly.
    path = tmp_path / "models.json"
    assert w.pins.save(path)
    back = load_workspace(path)
    assert [p.model for p in back] == [a.model, b.model] and [p.report for p in back] == [a.report, b.report]
    assert back[0].arch == a.arch and back[1].arch == b.arch and back[0].arch.change_scope(b.arch) != ""
    assert json.loads(path.read_text())["schema"] == 2


def test_loading_a_model_pin_opens_its_model_layer_and_scope(make_window):
    w = make_window(text=TEXT)
    w.models.load("smollm2-135m")
    w.models.picker.layer.setValue(7)
    w.config_panel.n_kv_heads.slider.setValue(0)
    pin = w.pins.pin_current()
    w.models.use_random()
    w.pins.load_on_sliders(0)  # loads SmolLM2 again (sync runner: at once), then puts the pin back
    assert w.models.key == "smollm2-135m" and w.models.layer == 7 and not w.models.all_layers
    assert w.config() == pin.config and w.last_heatmaps.model.after is not None


def test_trained_and_changed_heads_side_by_side_share_grid_badges_and_zoom(make_window):
    from widgets.roles.badges import badges_for

    w = make_window(text=TEXT)
    w.models.load("smollm2-135m")
    w.models.picker.layer.setValue(18)
    w.config_panel.n_kv_heads.slider.setValue(0)  # 9 heads, 1 KV head beside 9 heads, 3 KV heads
    left, right = w.models.original, w.mosaic
    assert left.isVisible() and (left.layout_.cols, left.layout_.rows) == (right.layout_.cols, right.layout_.rows) == (3, 3)
    view = w.last_heatmaps.model
    trained = {role: scores[18] for role, scores in view.roles.items()}
    assert left.badges == badges_for(trained, 9) and any(b is not None for b in left.badges)  # layer 18's induction heads
    assert left.title.text() == "As trained: 9 heads, 3 KV"
    assert right.title.text() == "Changed, layer 18: 9 heads, 1 KV"
    from PySide6.QtCore import QRectF
    from PySide6.QtWidgets import QApplication

    QApplication.processEvents()  # the halves get their sizes, and both are fitted
    lv, rv = left.plot.getViewBox(), right.plot.getViewBox()
    assert abs(lv.width() - rv.width()) <= 2  # two equal halves (a legend may wrap to one more line on one side)
    (x0, x1), (y0, y1) = lv.viewRange()
    assert x0 <= 0 and x1 >= left.layout_.width and y0 <= 0 and y1 >= left.layout_.height

    def same_zoom():
        return (lv.viewPixelSize() == pytest.approx(rv.viewPixelSize())
                and lv.viewRect().topLeft() == rv.viewRect().topLeft())

    assert same_zoom()
    rv.setRange(QRectF(10, 10, 40, 40), padding=0)  # zoom one side: the other follows
    assert same_zoom() and lv.viewRect().width() < left.layout_.width  # zoomed in, on both sides
    w.reset_zoom()  # Ctrl+0 resets both
    (x0, x1), (y0, y1) = lv.viewRange()
    assert x0 <= 0 and x1 >= left.layout_.width and y1 >= left.layout_.height and same_zoom()


def test_many_more_changed_heads_than_trained_get_a_grid_of_their_own(make_window):
    """576 heads in the trained layer's 3 columns made a strip 192 tiles tall, thinner than a pixel at 1024 x 700."""
    w = make_window(text=TEXT)
    w.models.load("smollm2-135m")
    w.config_panel.n_heads.spin.setValue(576)
    left, right = w.models.original, w.mosaic
    assert w.last_heatmaps.model.after.shape[0] == 576 and left.isVisible()
    assert (left.layout_.cols, left.layout_.rows) == (3, 3)  # the trained layer's own grid
    assert right.layout_.rows <= 2 * right.layout_.cols  # not 3 columns of 192 rows
    w.config_panel.n_heads.spin.setValue(9)  # back to as many heads: one grid for both again
    assert (right.layout_.cols, right.layout_.rows) == (left.layout_.cols, left.layout_.rows) == (3, 3)


def test_the_trained_side_follows_the_colormap_and_scale_at_once(make_window):
    w = make_window()
    w.mosaic.colormap.setCurrentText("magma")
    w.mosaic.scale.setCurrentIndex(1)
    original = w.models.original  # drawn beside the changed heads of a real model
    assert original.colormap.currentText() == "magma" and original.per_head


def test_picking_a_folder_reads_none_of_its_files_in_the_window_s_thread(make_window, tmp_path, monkeypatch):
    """A folder whose tokenizer_config.json was /dev/zero or a FIFO froze the window (read in its thread, unbounded)
    when it was chosen: the window now asks only the file names, and the worker reads the files, bounded."""
    import os

    from PySide6.QtWidgets import QMessageBox

    import core.files.bounded_read

    w = make_window()
    folder = tmp_path / "model"
    folder.mkdir()
    os.mkfifo(folder / "config.json")
    (folder / "tokenizer_config.json").symlink_to("/dev/zero")
    (folder / "pytorch_model.bin").write_bytes(b"not really")
    monkeypatch.setattr(core.files.bounded_read, "read_bounded", lambda *a: (_ for _ in ()).throw(AssertionError(a)))
    asked = []
    monkeypatch.setattr(QMessageBox, "question", lambda *a: (asked.append(a[2]), QMessageBox.StandardButton.No)[1])
    assert w.models._ask_pickle(folder) is False
    assert len(asked) == 1 and "only pickle weights" in asked[0]
