"""The 2026 layout in the window: the head-width lock, windows and patterns, sinks and KV formats, each
number against an independent reference (real modules, the formula written out, our own mask)."""

from __future__ import annotations

import numpy as np
from torch import nn

from core.arch.config import AttentionConfig
from tests.app.conftest import SMALL

TEXT = "one two three four five six seven eight nine ten eleven twelve"


def test_unlocking_head_dim_gives_a_width_of_its_own(make_window):
    w = make_window(config=AttentionConfig(d_model=64, n_heads=4, n_kv_heads=2, seq_len=64, n_layers=2, causal=True))
    lc = w.config_panel.layout_controls
    assert w.config().head_dim_tied and not lc.head_dim.isEnabled()
    lc.lock.setChecked(False)
    assert lc.head_dim.isEnabled() and lc.head_dim.value() == 16  # starts at today's tied width
    lc.head_dim.spin.setValue(48)
    cfg = w.config()
    assert cfg.explicit_head_dim == 48 and cfg.head_dim == 48
    mods = [nn.Linear(64, 4 * 48, bias=False), nn.Linear(64, 2 * 48, bias=False), nn.Linear(64, 2 * 48, bias=False),
            nn.Linear(4 * 48, 64, bias=False)]
    assert w.metrics.values["params"].text() == f"{sum(p.numel() for m in mods for p in m.parameters()):,}"
    assert w.metrics.shorts["head_dim"].text() == "own"
    # n_heads no longer has to divide d_model.
    w.config_panel.n_heads.spin.setValue(3)
    w.config_panel.n_kv_heads.spin.setValue(3)
    assert (w.config().n_heads, w.config().head_dim) == (3, 48)
    assert w.last_heatmaps.probs.shape[0] == 3


def test_a_window_without_a_causal_mask_is_refused_and_nothing_changes(make_window):
    w = make_window(text=TEXT)
    lc, panel = w.config_panel.layout_controls, w.config_panel
    lc.window.spin.setValue(4)
    lc.window_on.setChecked(True)
    cfg = w.config()
    assert cfg.window == 4 and cfg.layer_pattern == "local"
    panel.causal.setChecked(False)
    assert w.config() == cfg and panel.causal.isChecked()
    assert "needs a causal mask" in panel.last_notice and "previous setting is kept" in panel.last_notice


def test_the_heatmaps_show_the_band_of_a_local_layer(make_window):
    w = make_window(text=TEXT)
    w.config_panel.layout_controls.window.spin.setValue(3)
    w.config_panel.layout_controls.window_on.setChecked(True)
    probs = w.last_heatmaps.probs  # (H, T, T)
    T = probs.shape[1]
    i, j = np.arange(T)[:, None], np.arange(T)[None, :]
    band = (j <= i) & (i - j < 3)
    assert (probs[:, ~band] == 0).all() and (probs[:, band] > 0).all()
    assert "each query sees the 3 keys up to itself" in w.info.text()


def test_gemma_3_27b_splits_local_and_global_and_the_layer_spin_picks_one(make_window):
    w = make_window(text=TEXT)
    panel = w.config_panel
    index = panel.preset.findText("Gemma 3 27B")
    panel.preset.setCurrentIndex(index)
    panel._on_preset_activated(index)
    cfg = w.config()
    panel.seq_len.spin.setValue(8192)
    T = 8192
    local_kv = 52 * 2 * 16 * 128 * 4 * min(T, 1024)  # float32
    global_kv = 10 * 2 * 16 * 128 * 4 * T
    m = w.metrics
    assert m.values["kv_total"].text() == f"{local_kv + global_kv:,} B"
    assert m.values["layers"].text() == "52 | 10" and m.values["layers"].isVisible()
    from core.format import format_bytes

    assert (m.values["kv_split"].text(), m.shorts["kv_split"].text()) == (format_bytes(local_kv), f"| {format_bytes(global_kv)}")
    assert w.left_scroll.minimumWidth() <= 480  # the open Layout box and the split rows do not widen the panel
    spin = w.models.picker.layer
    assert spin.isEnabled() and spin.maximum() == 61 and spin.suffix().strip() == "local"
    spin.setValue(5)  # (5 + 1) % 6 == 0: global
    assert spin.suffix().strip() == "global" and w.last_heatmaps.layer_spec.window is None
    assert "global" in w.info.text()
    spin.setValue(6)
    assert w.last_heatmaps.layer_spec.window == 1024 and cfg.n_layers == 62


def test_sinks_take_part_of_each_row_and_the_hover_says_how_much(make_window):
    w = make_window(text=TEXT)
    w.config_panel.layout_controls.sinks.setChecked(True)
    hm = w.last_heatmaps
    assert w.config().sinks and hm.sink_share is not None
    np.testing.assert_allclose(hm.probs.sum(-1) + hm.sink_share, 1.0, atol=1e-5)
    text = w.mosaic.describe(1, 4, 2)
    assert f"the sink takes {hm.sink_share[1, 4]:.1%} of this row" in text
    # The parameter count gains one logit per head, and no KV bytes.
    base = SMALL
    from core.counts import kv_cache_bytes, param_counts

    assert w.metrics.values["params"].text() == f"{param_counts(base).total + 8:,}"
    assert w.metrics.values["kv_total"].text() == f"{kv_cache_bytes(base).bytes_total:,} B"


def test_kv_format_counts_its_blocks_and_refuses_a_width_it_cannot_block(make_window):
    cfg = AttentionConfig(d_model=256, n_heads=4, n_kv_heads=2, seq_len=1000, n_layers=3, causal=True)
    w = make_window(config=cfg, text=TEXT)
    combo = w.config_panel.layout_controls.kv_dtype
    combo.setCurrentIndex(combo.findText("q8_0"))
    assert w.config().kv_dtype == "q8_0"
    assert w.metrics.values["kv_total"].text() == f"{3 * 2 * 2 * 64 // 32 * 34 * 1000:,} B"
    w.config_panel.layout_controls.lock.setChecked(False)
    w.config_panel.layout_controls.head_dim.spin.setValue(80)  # not a multiple of q8_0's 32-value blocks
    assert w.config().head_dim == 64 and "not a multiple of 32" in w.config_panel.last_notice
    assert w.config_panel.layout_controls.head_dim.value() == 64  # the control shows what is kept


def test_a_layout_pin_survives_the_workspace(make_window, tmp_path):
    from core.study.workspace import load_workspace

    w = make_window(text=TEXT)
    lc = w.config_panel.layout_controls
    lc.window.spin.setValue(4)
    lc.window_on.setChecked(True)
    lc.sinks.setChecked(True)
    assert w.pins.pin_current() is not None
    path = tmp_path / "w.json"
    assert w.pins.save(path)
    (pin,) = load_workspace(path)
    assert pin.config == w.config() and pin.config.window == 4 and pin.config.sinks
    assert pin.report["layout"]["n_local_layers"] == 2 and pin.report["layout"]["sinks"] is True


def test_compare_names_each_pins_layout_and_its_local_and_global_cache(make_window):
    from core.counts import kind_counts
    from core.format import format_bytes
    from core.study.compare import comparison

    w = make_window(text=TEXT)
    assert w.pins.pin_current() is not None  # plain
    lc = w.config_panel.layout_controls
    lc.window.spin.setValue(4)
    lc.window_on.setChecked(True)
    assert w.pins.pin_current() is not None  # every layer local, W 4
    reports = [p.report for p in w.pins.pins]
    rows = {r.label: r for r in comparison(reports, 0)}
    assert [c.text for c in rows["layout"].cells] == ["tied head_dim, all global",
                                                      "tied head_dim, 2 local W 4 + 0 global, KV float32"]
    cfg = w.config()
    local = sum(k.kv_bytes_total for k in kind_counts(cfg.architecture(), cfg) if k.window)
    assert rows["KV cache: local | global"].cells[1].text == f"{format_bytes(local)} | 0 B"
    plain = {r.label for r in comparison([reports[0], reports[0]], 0)}
    assert "layout" not in plain and "KV cache: local | global" not in plain


def test_the_timing_panel_sets_a_local_layers_core_against_full_attention(make_window):
    w = make_window(text=TEXT)
    lc = w.config_panel.layout_controls
    lc.window.spin.setValue(16)
    lc.window_on.setChecked(True)  # seq_len 64 > W 16: the window can save work
    t = w.last_timing.result.to_report()
    assert w.last_timing.config == w.config() and t["kernel"].startswith("blockwise SDPA")
    text = w.timing.labels["tflops"].text()
    assert f"x{t['core_median_ms'] / t['full_core_ms']:.2f} the time for x{t['band_flop_ratio']:.2f} the FLOPs" in text
    assert "blockwise" in w.timing.labels["device"].text()


def test_sweeping_the_kv_format_plots_bytes_per_value_with_the_names(make_window):
    cfg = AttentionConfig(d_model=256, n_heads=4, n_kv_heads=2, seq_len=512, n_layers=4, causal=True)
    w = make_window(config=cfg, text=TEXT)
    w.sweeps.run("kv_dtype", "float32,bfloat16,float16,q8_0,q4_0", timed=False)
    rows = w.sweeps.result.rows
    assert [r.value for r in rows] == ["float32", "bfloat16", "float16", "q8_0", "q4_0"]
    values = 2 * 4 * 2 * 64 * 512  # K and V x layers x KV heads x head_dim x tokens
    assert [r.report["kv_cache"]["bytes_total"] for r in rows] == [4 * values, 2 * values, 2 * values,
                                                                   values // 32 * 34, values // 32 * 18]
    plots = w.sweeps.panel.plots
    assert plots.x_text == {4.0: "float32", 2.0: "bfloat16/float16", 34 / 32: "q8_0", 18 / 32: "q4_0"}
    assert plots.describe(3).startswith("q8_0: params")
    assert w.sweeps.run("kv_dtype", "float16,int3", timed=False) is None
    assert "'int3' is not a KV format" in w.sweeps.panel.caption.text()


def test_the_sliding_windows_lesson_draws_local_global_and_every_layer_global(make_window):
    w = make_window(text=TEXT)
    w.sweeps.run_lesson("windows", False)
    rows = w.sweeps.result.ok_rows()
    assert [r.value for r in rows][-1] == 131072
    kv = w.sweeps.panel.plots.plots["kv"]
    curves = {c.name(): c for c in kv.listDataItems()}
    assert {"KV cache", "local layers", "global layers", "every layer global"} <= set(curves)
    _, every = curves["every layer global"].getData()
    _, local = curves["local layers"].getData()
    to_bytes = (lambda ys: 10 ** ys) if kv.getAxis("left").logMode else (lambda ys: ys)
    np.testing.assert_allclose(to_bytes(every)[-1], 62 * 2 * 16 * 128 * 2 * 131072, rtol=1e-9)  # the lesson is bf16
    np.testing.assert_allclose(to_bytes(local)[-1], 52 * 2 * 16 * 128 * 2 * 1024, rtol=1e-9)
    assert "x6.0" in w.sweeps.panel.caption.text()
