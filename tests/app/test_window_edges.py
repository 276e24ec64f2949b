"""The window at its edges: models coming and going, an encoder's missing cache, stale views, pins that outgrow a
workspace, export paths typed by hand, sweeps that end before their first point."""

from dataclasses import replace

import numpy as np
import pytest

from core.arch.config import AttentionConfig
from core.models.source import shipped_unavailable_reason
from core.study.compare import comparison
from core.study.workspace import MAX_PINS
from sandbox.window.fit import fit_to_screen
from widgets.common.style import text_colour

TEXT = "The chef who trained in Lucknow cooked biryani"
needs_models = pytest.mark.skipif(bool(shipped_unavailable_reason("smollm2-135m")), reason="the [models] extra is missing")


@needs_models
def test_back_to_random_weights_leaves_no_trace_of_the_model(make_window):
    w = make_window(text=TEXT)
    w.models.load("minilm-l6")
    assert "no decode" in w.timing.labels["phases"].text()
    w.models.load("smollm2-135m")
    w.models.picker.all_layers.setChecked(True)
    w.config_panel.n_kv_heads.slider.setValue(0)
    assert w.mosaic.title.text().startswith("Changed, every layer")
    w.models.use_random()
    assert w.mosaic.title.text() == "" and w.mosaic.hover_prefix == ""
    assert not w.models.picker.all_layers.isChecked()
    assert "no decode" not in w.timing.labels["phases"].text()


@needs_models
def test_a_new_model_starts_without_the_last_ones_scope_and_says_so(make_window):
    w = make_window(text=TEXT)
    w.models.load("smollm2-135m")
    w.models.picker.layer.setValue(18)
    w.models.picker.all_layers.setChecked(True)
    w.models.load("minilm-l6")  # 6 layers: layer 18 does not exist, and nothing is changed yet
    assert not w.models.all_layers and w.models.layer == 0
    message = w.statusBar().currentMessage()
    assert "'change every layer' is off again" in message and "layer 18 does not exist there" in message
    assert "every layer changed" not in w.info.text() and "layer 0" in w.info.text()


@needs_models
def test_an_encoder_has_no_kv_cache_anywhere(make_window):
    w = make_window(text=TEXT)
    w.models.load("minilm-l6")
    w.config_panel.n_kv_heads.slider.setValue(0)
    assert w.models.fidelity.values["kv"].text() == "none: an encoder keeps no KV cache"
    pin = w.pins.pin_current()
    rows = {r.label: r for r in comparison([pin.report], 0)}
    assert rows["decode time"].cells[0].text == "–" and rows["KV cache / token"].cells[0].text == "–"


def test_compare_names_the_shape_of_every_pin(make_window):
    w = make_window()
    a = w.pins.pin_current()
    w.config_panel.d_model.spin.setValue(128)
    b = w.pins.pin_current()
    rows = {r.label: r for r in comparison([a.report, b.report], 0)}
    assert [c.text for c in rows["d_model"].cells] == ["64", "128"]
    assert [c.text for c in rows["model"].cells] == ["random weights", "random weights"]
    assert rows["seq_len x batch"].cells[0].text == f"{a.config.seq_len:,} x 1"
    combo = w.pins.table.baseline
    assert combo.itemText(0) == "A: GQA, d_model 64, random weights" and combo.itemData(1) == "B"


def test_stale_views_say_they_are_being_updated(make_window):
    w = make_window()
    w.timing.show_waiting()
    assert "previous configuration's" in w.timing.labels["state"].text()
    assert text_colour(w.timing.labels["layer"]) == "#9ca3af"  # the old figures are greyed
    shown = w.last_heatmaps
    w.last_heatmaps = replace(shown, config=shown.config.with_(seq_len=shown.config.seq_len + 1))  # an older view
    w._on_updating_timeout()
    assert "Updating the heatmaps" in w.info.text() and "previous ones" in w.info.text()
    w.last_heatmaps = None  # none shown yet: nothing is "previous"
    w._on_updating_timeout()
    assert "Computing the first heatmaps" in w.info.text() and "previous" not in w.info.text()


def test_mha_frames_are_one_neutral_colour(qtbot):
    from widgets.maps.colormaps import GROUP_COLOURS
    from widgets.maps.mosaic import GROUP_INDEX, plan_layout, render_mosaic

    lay = plan_layout(12, 4, 1)
    img = render_mosaic(np.full((12, 4, 4), 0.25, dtype=np.float32), lay)
    frames = {int(img[y - 1, x - 1]) for x, y in (lay.origin(h) for h in range(12))}
    assert frames == {GROUP_INDEX + len(GROUP_COLOURS) - 1}  # the same grey for every head: no groups implied


def test_the_window_opens_inside_a_small_screen(make_window):
    w = make_window()
    screen = w.screen().availableGeometry()
    w.resize(screen.width() + 500, screen.height() + 500)
    fit_to_screen(w)
    assert w.width() <= max(screen.width(), w.minimumSizeHint().width()) and w.height() <= screen.height() + 1


def test_sweeps_clear_their_plots_when_they_start_and_say_when_they_were_not_timed(make_window):
    w = make_window()
    w.sweeps.run("seq_len", "8,16", timed=True)
    plots = w.sweeps.panel.plots
    assert plots.xs == [8, 16]
    w.sweeps.panel.set_running(3, "next")
    assert plots.xs == [] and all(not p.listDataItems() for p in plots.plots.values())
    w.sweeps.run_lesson("seq", timed=False)
    panel = w.sweeps.panel
    assert panel.knob.currentText() == "seq_len" and panel.values.text().startswith("128,256")
    texts = [i for i in plots.plots["tflops"].items if type(i).__name__ == "TextItem"]
    assert texts and texts[0].toPlainText() == "not timed: counts only"
    bottom = plots.plots["flops"].getAxis("bottom")._tickLevels[0]
    assert bottom[-1][1] == "16,384"  # the last swept value is labelled


def test_pins_cannot_outgrow_what_a_workspace_reads(make_window, monkeypatch):
    w = make_window()
    w.pins.pin_current()
    w.pins.rename(0, "x" * 300)
    assert w.pins.pins[0].name == "A" and "shorter name" in w.statusBar().currentMessage()
    monkeypatch.setattr(w.pins, "pins", [w.pins.pins[0]] * MAX_PINS)
    assert w.pins.pin_current() is None and "at most 1,000 pins" in w.statusBar().currentMessage()


def test_a_workspace_the_table_cannot_show_changes_nothing(make_window, tmp_path, monkeypatch):
    w = make_window()
    w.pins.pin_current()
    path = tmp_path / "ws.json"
    assert w.pins.save(path)
    before = list(w.pins.pins)
    real = w.pins.table.set_pins
    calls = []

    def broken(names, reports, baseline=None):
        calls.append(names)
        if len(calls) == 1:
            raise OverflowError("int too large to convert to float")
        real(names, reports, baseline)

    monkeypatch.setattr(w.pins.table, "set_pins", broken)
    w.pins.workspace_path = None
    assert not w.pins.open(path)
    assert w.pins.pins == before and w.pins.workspace_path is None and "cannot be shown" in w.last_alert


def test_export_paths_a_user_might_type(make_window, tmp_path):
    w = make_window()
    for text in ("", "   ", "bad\x00name.png", "x" * 300 + "/a.png"):
        dialog = w.make_export_dialog()
        dialog.path.setText(text)
        dialog.accept()
        assert dialog.result() != dialog.DialogCode.Accepted and not dialog.error.isHidden(), text
        dialog.close()
    dialog = w.make_export_dialog()
    (tmp_path / "maps").mkdir()
    dialog.fmt.setCurrentIndex(2)  # npy
    dialog.path.setText(str(tmp_path / "maps") + "/")
    assert dialog.choice().path == tmp_path / "maps" / "attention.npy"  # a folder gets a file inside it
    dialog._folder = tmp_path
    dialog.path.setText("relative.npy")
    assert dialog.choice().path == tmp_path / "relative.npy"  # a relative name lands in the dialog's folder
    (tmp_path / "clash.json").mkdir()  # the manifest's name is taken by a folder
    (tmp_path / "clash.npy").write_bytes(b"old")
    dialog.path.setText(str(tmp_path / "clash.npy"))
    assert w.export_chosen(dialog) == [] and "a folder of that name is in the way" in w.last_alert
    assert (tmp_path / "clash.npy").read_bytes() == b"old"  # nothing replaced


@needs_models
def test_a_pin_that_does_not_fit_the_model_is_refused_with_a_message(make_window, tmp_path):
    w = make_window(text=TEXT)
    w.models.load("smollm2-135m")
    pin = w.pins.pin_current()
    pin.config = AttentionConfig(d_model=64, n_heads=4, n_layers=30)  # as a hostile file might claim
    w.pins.load_on_sliders(0)
    assert "does not fit SmolLM2-135M" in w.last_alert and w.config().d_model == 576


def test_a_sweep_that_ends_before_its_first_point_shows_its_reason_not_an_error(make_window, qtbot):
    """Found by the 5,000-action soak (26 worker kills): a sweep whose worker died before any point finished raised
    "enter at least one value" inside the window's slot when it planned the line of no rows."""
    from core.study.sweep import SweepResult

    w = make_window()
    w.sweeps.run("n_kv_heads", "1,2,4", False)
    result = SweepResult("n_kv_heads", rows=[], timed=False, partial=True, stopped_reason="the compute worker stopped")
    from sandbox.jobs.types import SweepDone

    sweep_id = w.sweeps.running_id = 7  # as if it were still running (the sync runner finished it)
    w.sweeps._on_runner_sweep_done(SweepDone(sweep_id, result))  # as the runner reports a lost sweep
    assert w.sweeps.result is result and "Partial: the compute worker stopped." in w.sweeps.panel.caption.text()
