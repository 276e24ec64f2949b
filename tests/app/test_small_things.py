"""The smaller things a new user met: the Long tab before its first overview, the Roles grid of one layer, the
Frontier's axis after the model goes, and a KV format that outlived a preset."""

import pytest

from core.models.source import shipped_unavailable_reason
from widgets.common.elided_combo import ElidedCombo

needs_models = pytest.mark.skipif(bool(shipped_unavailable_reason("minilm-l6")), reason="the [models] extra is missing")


def test_the_long_tab_before_its_first_overview_shows_no_positions_and_elides_its_combos(make_window, qtbot):
    w = make_window()
    w.resize(1024, 700)
    w.tabs.setCurrentWidget(w.long.panel)
    view = w.long.panel.map
    qtbot.waitUntil(lambda: view.glw.isVisible())
    assert view.empty.isVisible() and not view.plot.getAxis("left").style["showValues"]  # no -400 .. 400
    for combo in (view.colormap, view.scale, w.long.panel.text_source):
        assert isinstance(combo, ElidedCombo)
        shown = combo.elided_text()
        assert shown == combo.currentText() or shown.endswith("…")  # whole, or visibly shortened: never cut


def test_a_one_layer_roles_grid_keeps_square_cells_and_its_colour_bar_s_top_label(make_window, qtbot):
    w = make_window()
    w.tabs.setCurrentWidget(w.roles.panel)
    grid = w.roles.panel.grid
    qtbot.waitUntil(lambda: grid.isVisible() and grid.getViewBox().width() > 0)
    vb = grid.getViewBox()
    (x0, x1), (y0, y1) = vb.viewRange()
    assert vb.state["aspectLocked"] and abs((x1 - x0) / vb.width() - (y1 - y0) / vb.height()) < 1e-3
    _left, top, _right, _bottom = grid.getPlotItem().layout.getContentsMargins()
    assert top >= 12  # the bar's "1.0" sits inside the view


@needs_models
def test_the_frontier_forgets_a_model_s_axis_when_the_model_goes(make_window):
    w = make_window()
    w.models.load("minilm-l6")
    chart = w.frontier.panel.chart
    chart.set_points([{"method": "baseline", "cost": 0.0, "kv_bytes_per_token": 100, "label": "x", "setting": 0}],
                     "encoder")
    assert chart.plot.getAxis("left").labelText == "1 - cosine of the embedding"
    w.models.use_random()
    assert chart.plot.getAxis("left").labelText == ""


def test_a_refusal_by_the_kv_format_says_where_the_format_was_set(make_window):
    w = make_window(config=None, live_timing=False)  # the opening layer: head_dim 64 takes q4_0
    cp = w.config_panel
    lc = cp.layout_controls
    lc.kv_dtype.setCurrentIndex(lc.kv_dtype.findData("q4_0"))  # blocks of 32 along head_dim
    cp._on_preset_activated(cp.preset.findText("Llama 3 8B"))  # head_dim 128: fits; the format stays
    assert "The KV format q4_0 is kept from before" in cp.last_notice
    cp.d_model.slider.setValue(cp.d_model.choices().index(2560))  # 32 heads of 80: not a multiple of 32
    notice = cp.last_notice
    assert cp.config().d_model == 4096  # refused, nothing lost
    assert "q4_0" in notice and "kept when you picked the preset Llama 3 8B" in notice, notice
