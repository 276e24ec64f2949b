import numpy as np
import pytest
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication, QLabel, QToolTip

from core.arch.config import AttentionConfig, valid_n_heads, valid_n_kv_heads
from core.costs import versus
from core.counts import flop_counts, kv_cache_bytes, param_counts
from core.format import format_bytes
from core.kinds.mla.spec import MLADims
from widgets.controls.config_panel import ConfigPanel
from widgets.controls.slider_spin import SliderSpin
from widgets.costs.metrics_panel import MetricsPanel
from widgets.costs.mode_badge import COLOURS
from widgets.maps.heatmap_view import HeatmapMosaic


def test_slider_spin_snaps_typed_values_and_steps_over_choices(qtbot):
    w = SliderSpin([1, 2, 4, 8, 16], 4)
    qtbot.addWidget(w)
    seen = []
    w.value_changed.connect(seen.append)
    w.spin.setValue(7)  # typed: snaps to 8
    assert w.value() == 8 and w.spin.value() == 8 and seen == [8]
    w.slider.setValue(0)
    assert w.value() == 1 and seen == [8, 1]
    w.spin.stepBy(2)
    assert w.value() == 4
    w.set_choices([3, 6], None)  # no emit on programmatic writes
    assert w.value() == 3 and seen == [8, 1, 4]


def test_free_slider_keeps_any_typed_value(qtbot):
    w = SliderSpin([1, 2, 4, 8], 2, free=True, maximum=100)
    qtbot.addWidget(w)
    w.spin.setValue(5)
    assert w.value() == 5
    w.spin.stepBy(1)
    assert w.value() == 8


def test_config_panel_snaps_dependent_sliders_and_says_so(qtbot):
    panel = ConfigPanel(AttentionConfig(d_model=768, n_heads=12, n_kv_heads=4), ["auto", "cpu"])
    qtbot.addWidget(panel)
    with qtbot.waitSignal(panel.config_changed) as sig:
        panel.d_model.spin.setValue(800)
    cfg = sig.args[0]
    assert cfg.d_model == 800 and cfg.n_heads in valid_n_heads(800) and cfg.kv_heads in valid_n_kv_heads(cfg.n_heads)
    assert panel.n_heads.choices() == valid_n_heads(800)
    assert "n_heads is 10, not your 12: 12 does not divide d_model 800" in panel.last_notice
    assert "n_kv_heads is 5, not your 4: 4 does not divide n_heads 10" in panel.last_notice


def test_a_d_model_drag_that_comes_back_restores_the_users_configuration(qtbot):
    start = AttentionConfig(d_model=768, n_heads=12, n_kv_heads=4)
    panel = ConfigPanel(start, ["auto"])
    qtbot.addWidget(panel)
    slider = panel.d_model.slider
    i0 = slider.value()
    notices = []
    panel.notice.connect(notices.append)
    path = list(range(i0 + 1, i0 + 9)) + list(range(i0 + 7, i0 - 1, -1))  # right 8 steps and back, one by one
    seen = []
    for i in path:
        slider.setValue(i)
        cfg = panel.config()
        assert cfg.d_model % cfg.n_heads == 0 and cfg.n_heads % cfg.kv_heads == 0
        seen.append(cfg)
    assert panel.config() == start  # d_model 768, 12 heads, 4 KV heads: exactly the start
    at_832 = next(c for c in seen if c.d_model == 832)  # 832 = 64 x 13: 12 heads cannot split it
    assert (at_832.n_heads, at_832.kv_heads) == (13, 1)
    forced = next(n for n in notices if "d_model 832" in n)
    assert "n_heads is 13, not your 12: 12 does not divide d_model 832" in forced
    assert "n_kv_heads is 1, not your 4: 4 does not divide n_heads 13" in forced
    assert notices[-1] == "n_heads 12 and n_kv_heads 4 are back, as you chose them."
    # A value the user picks becomes the new intent.
    panel.n_heads.slider.setValue(panel.n_heads.choices().index(8))
    panel.d_model.spin.setValue(832)
    panel.d_model.spin.setValue(768)
    assert (panel.config().n_heads, panel.config().kv_heads) == (8, 4)


def test_every_reachable_slider_position_is_valid(qtbot):
    panel = ConfigPanel(AttentionConfig(), ["auto"])
    qtbot.addWidget(panel)
    for d_index in range(0, panel.d_model.slider.maximum() + 1, 37):
        panel.d_model.slider.setValue(d_index)
        for h_index in range(panel.n_heads.slider.maximum() + 1):
            panel.n_heads.slider.setValue(h_index)
            panel.n_kv_heads.slider.setValue(panel.n_kv_heads.slider.maximum() // 2)
            cfg = panel.config()
            assert cfg.d_model % cfg.n_heads == 0 and cfg.n_heads % cfg.kv_heads == 0


def test_preset_applies_architecture(qtbot):
    panel = ConfigPanel(AttentionConfig(), ["auto"])
    qtbot.addWidget(panel)
    idx = panel.preset.findText("Llama 3 70B")
    with qtbot.waitSignal(panel.config_changed):
        panel.preset.activated.emit(idx)
    cfg = panel.config()
    assert (cfg.d_model, cfg.n_heads, cfg.kv_heads, cfg.n_layers) == (8192, 64, 8, 80)
    assert panel.badge.text().strip() == "GQA-8 (group 8)" and panel.preset.currentText() == "Llama 3 70B"


@pytest.mark.parametrize("cfg", [
    AttentionConfig(d_model=4096, n_heads=32, n_kv_heads=8, seq_len=8192, n_layers=32, dtype="float16"),
    AttentionConfig(d_model=576, n_heads=9, n_kv_heads=3, seq_len=100, bias=True, phase="decode", causal=True),
])
def test_metrics_show_the_exact_engine_values(qtbot, cfg):
    m = MetricsPanel()
    qtbot.addWidget(m)
    m.show_config(cfg)
    p, f, kv = param_counts(cfg), flop_counts(cfg), kv_cache_bytes(cfg)
    assert m.values["params"].text() == f"{p.total:,}"
    assert m.values["k"].text() == f"{p.k:,}"
    assert m.values["flops"].text() == f"{f.total:,}" and m.values["flops_core"].text() == f"{f.attention:,}"
    assert m.values["kv_total"].text() == f"{kv.bytes_total:,} B"
    assert m.shorts["kv_total"].text() == format_bytes(kv.bytes_total)
    assert m.values["head_dim"].text() == str(cfg.head_dim)
    assert m.values["params_model"].text() == f"{p.total * cfg.n_layers:,}"
    assert m.values["flops_proj"].text() == f"{f.projections:,}"
    assert m.values["kv_token"].text() == f"{kv.bytes_per_token:,} B"
    # Arithmetic intensity: core FLOPs over the bytes of Q, K, V and the output it must move.
    B, T, H, K, h, b = cfg.batch_size, cfg.seq_len, cfg.n_heads, cfg.kv_heads, cfg.head_dim, cfg.dtype_bytes
    tq = T if cfg.phase == "prefill" else 1
    moved = B * h * b * (H * tq + K * T + K * T + H * tq)
    assert m.values["intensity"].text() == f"{f.attention / moved:,.1f}"
    assert f"{(cfg.kv_heads / cfg.n_heads - 1):+.1%}" in m.deltas["kv_total"].text()
    assert "n_kv_heads" in m.values["k"].toolTip()
    # The figures are copied from their menu (a selectable label painted 10x slower at every slider step).
    copy_figure, copy_all = m.values["kv_total"].actions()
    copy_figure.trigger()
    assert QApplication.clipboard().text() == f"{kv.bytes_total:,} B"
    copy_all.trigger()
    rows = {line.split("\t")[0]: line.split("\t")[1:] for line in QApplication.clipboard().text().splitlines()}
    assert rows["KV cache, B x T x L"] == [f"{kv.bytes_total:,} B", format_bytes(kv.bytes_total),
                                          m.deltas["kv_total"].text()]
    assert rows["W_k params"][0] == f"{p.k:,}" and "q_a_proj params" not in rows  # the rows on show only


def test_heatmap_hover_text_reads_the_probability(qtbot):
    w = HeatmapMosaic()
    qtbot.addWidget(w)
    w.resize(600, 400)
    probs = np.random.default_rng(0).random((6, 5, 5)).astype(np.float32)
    tokens = ["a", "b", "c", "d", "e"]
    w.set_data(probs, tokens, group_size=3)
    text = w.describe(4, 2, 3)
    assert f"{probs[4, 2, 3]:.4f}" in text and "'c'" in text and "'d'" in text and "KV group 1" in text
    assert "2 K/V heads" in w.legend.text()


def test_prefill_intensity_is_half_the_sequence_length_as_the_reference_says(qtbot):
    m = MetricsPanel()
    qtbot.addWidget(m)
    m.show_config(AttentionConfig(d_model=4096, n_heads=32, seq_len=2048, dtype="float16"))
    assert m.values["intensity"].text() == "1,024.0"  # T/2 FLOP per byte for MHA in fp16


def test_huge_counts_keep_the_panel_narrow_and_stay_exact_in_the_tooltip(qtbot):
    cfg = AttentionConfig(d_model=65536, n_heads=64, seq_len=2**20, batch_size=4096)
    m = MetricsPanel()
    qtbot.addWidget(m)
    m.show_config(cfg)
    core = flop_counts(cfg).attention
    assert core > 10**20
    assert m.values["flops_core"].text() == f"{core:.6e}" and f"exactly {core:,}" in m.values["flops_core"].toolTip()
    assert m.shorts["flops_core"].text() == ""  # a count's e-notation says it
    total = kv_cache_bytes(cfg).bytes_total
    assert total > 10**15 and m.shorts["kv_total"].text() == format_bytes(total)  # bytes keep theirs: '... EiB'
    assert m.minimumSizeHint().width() <= 430


@pytest.mark.parametrize(("value", "baseline", "text"), [
    (1, 4, "-75.0%"), (3, 2, "+50.0%"),
    (3, 10101, "-99.97%"),  # not "-100.0%", which reads as no cache at all
    (1 + 1e-7, 1, "+1e-05%"), (1 - 1e-7, 1, "-1e-05%"),  # not "+0.0%" / "-0.0%"
    (1 + 3e-4, 1, "+0.03%"), (0, 7, "-100.0%"),
])
def test_a_change_never_reads_as_none_or_as_all_when_it_is_neither(value, baseline, text):
    assert versus(value, baseline)[0] == text


def test_the_first_notice_moves_nothing(qtbot):
    """Its line is there from the start, with a hint: a first notice shown into a hidden row relaid and repainted the
    whole side panel at a drag's first forced move (QFormLayout gives a hidden row no room, kept or not)."""
    panel = ConfigPanel(AttentionConfig(d_model=768, n_heads=12, n_kv_heads=4), ["auto"])
    qtbot.addWidget(panel)
    panel.show()
    QApplication.processEvents()
    hint = panel.notice_label.text()
    places = [(w.geometry().getRect()) for w in (panel.notice_label, panel.n_layers, panel.badge)]
    height = panel.sizeHint().height()
    panel.n_heads.spin.setValue(6)  # n_kv_heads 4 does not divide 6: it is forced, and said
    QApplication.processEvents()
    assert "n_kv_heads is 3, not your 4" in panel.notice_label.text() != hint and panel.notice_label.isVisible()
    assert [(w.geometry().getRect()) for w in (panel.notice_label, panel.n_layers, panel.badge)] == places
    assert panel.sizeHint().height() == height


def test_a_switch_to_mla_shows_the_heads_the_layer_has(qtbot):
    """576 heads (d_model 576, head_dim 1) switched to MLA, whose slider runs 1-256 with a head width of its own: the
    box showed 256 while the layer, its badge and its heatmaps had 576."""
    panel = ConfigPanel(AttentionConfig(d_model=576, n_heads=576, n_kv_heads=64), ["auto"])
    qtbot.addWidget(panel)
    panel.kind_controls.kind.setCurrentIndex(1)  # MLA
    cfg = panel.config()
    assert cfg.widths is not None and panel.n_heads.value() == cfg.n_heads == 576
    assert panel.n_heads.spin.value() == 576 and "576 heads" in panel.last_notice


def test_a_preset_s_note_goes_when_the_layers_become_another_preset_s(qtbot):
    """DeepSeek-V3 at 64 heads is Kimi K2's layer: the line kept saying "Preset DeepSeek-V3: ... 128 heads"."""
    panel = ConfigPanel(AttentionConfig(d_model=768, n_heads=12, n_kv_heads=4), ["auto"])
    qtbot.addWidget(panel)
    panel.preset.setCurrentIndex(panel.preset.findText("DeepSeek-V3"))
    panel.preset.activated.emit(panel.preset.currentIndex())
    assert panel.notice_label.text().startswith("Preset DeepSeek-V3")
    panel.n_heads.spin.setValue(64)
    assert panel.preset.currentText() != "DeepSeek-V3" and not panel.notice_label.text().startswith("Preset DeepSeek")
    assert panel.last_notice == "" or panel.last_notice.startswith("Preset " + panel.preset.currentText())


def test_a_typed_value_says_what_it_became_and_what_followed(qtbot):
    panel = ConfigPanel(AttentionConfig(d_model=8192, n_heads=64, n_kv_heads=8), ["auto"])
    qtbot.addWidget(panel)
    panel.n_heads.spin.setValue(7)  # typed: 7 does not divide 8192
    cfg = panel.config()
    assert (cfg.n_heads, cfg.kv_heads, cfg.mode) == (8, 8, "MHA")
    notice = panel.last_notice
    assert notice.startswith("n_heads 7 is not possible here; it is 8, the nearest allowed")
    assert notice.endswith("The layer is MHA.") and "stays" not in notice
    assert panel.notice_label.text() == notice  # in full in the panel, not only in the status bar
    panel.set_config(AttentionConfig(d_model=768, n_heads=12, n_kv_heads=4))
    panel.n_heads.spin.setValue(1)  # the user picks 1 head: n_kv_heads is forced to 1
    assert "n_kv_heads is 1, not your 4" in panel.last_notice and "Your 4 comes back when it fits." in panel.last_notice
    panel.n_heads.spin.setValue(768)  # the user's own n_heads: only n_kv_heads was forced, and it is back
    assert panel.last_notice == "n_kv_heads 4 is back, as you chose it."


def test_values_up_to_the_configurations_maxima_reach_the_panel(qtbot):
    from core.arch.config import MAXIMA

    big = AttentionConfig(d_model=786432, n_heads=3, n_kv_heads=1, seq_len=MAXIMA["seq_len"],
                          batch_size=MAXIMA["batch_size"], n_layers=MAXIMA["n_layers"])
    panel = ConfigPanel(AttentionConfig(), ["auto"])
    qtbot.addWidget(panel)
    panel.set_config(big)
    assert panel.config() == big
    panel.causal.setChecked(True)  # a later change keeps every value the panel shows
    assert panel.config() == big.with_(causal=True)


def test_the_mode_badge_fits_its_text_and_gives_back_the_room_of_a_long_one(qtbot):
    """Its size is fixed (a new text that fits asks no layout to run); an MLA badge widens it and, back to MHA,
    the room is given back (it once kept MLA's width, and the window grew past 1024 px)."""
    panel = ConfigPanel(AttentionConfig(d_model=768, n_heads=12, n_kv_heads=4), ["auto", "cpu"])
    qtbot.addWidget(panel)
    panel.show()

    def needed() -> int:  # what a free label with the same style and text asks for
        free = QLabel(panel.badge.text())
        free.setStyleSheet(panel.badge.styleSheet())
        free.ensurePolished()
        return free.sizeHint().width()

    start = panel.badge.width()
    assert panel.badge.minimumWidth() == panel.badge.maximumWidth() == start >= needed()
    for n_kv in (1, 2, 3, 6, 12):  # MQA, GQA-2, GQA-3, GQA-6, MHA: one room
        panel.set_config(AttentionConfig(d_model=768, n_heads=12, n_kv_heads=n_kv))
        assert panel.badge.width() == start >= needed(), panel.badge.text()
    panel.set_config(AttentionConfig(d_model=768, n_heads=12, widths=MLADims(0, 512, 64, 64, 64)))
    assert "MLA" in panel.badge.text() and panel.badge.width() >= needed() > start
    panel.set_config(AttentionConfig(d_model=768, n_heads=12))
    assert panel.badge.text().strip() == "MHA" and panel.badge.width() == start


def test_the_mode_badge_is_painted_in_its_mode_s_colour(qtbot):
    """The colour is painted, not set by a style sheet per mode (a re-polish at every MHA/GQA switch of a drag)."""
    panel = ConfigPanel(AttentionConfig(d_model=768, n_heads=12, n_kv_heads=4), ["auto", "cpu"])
    qtbot.addWidget(panel)
    panel.show()
    sheet = panel.badge.styleSheet()
    for n_kv, mode in ((1, "MQA"), (4, "GQA"), (12, "MHA"), (4, "GQA")):
        panel.set_config(AttentionConfig(d_model=768, n_heads=12, n_kv_heads=n_kv))
        image = panel.badge.grab().toImage()
        assert image.pixelColor(3, image.height() // 2).name() == COLOURS[mode], mode  # left of the text
        assert panel.badge.styleSheet() == sheet


@pytest.mark.qt_log_ignore("This plugin does not support raise")  # the offscreen platform, showing the tip
def test_the_mode_badge_s_tooltip_keeps_the_tooltip_s_own_dark_text(qtbot):
    """Qt styles a tooltip with the style sheet of the widget that shows it: the badge's white text once reached
    its pale-yellow tooltip (white on yellow)."""
    panel = ConfigPanel(AttentionConfig(d_model=768, n_heads=12, n_kv_heads=4), ["auto", "cpu"])
    qtbot.addWidget(panel)
    panel.show()
    QToolTip.showText(panel.badge.mapToGlobal(panel.badge.rect().center()), panel.badge.toolTip(), panel.badge)
    tips = [w for w in QApplication.topLevelWidgets() if w.objectName() == "qtooltip_label" and w.isVisible()]
    assert tips
    tips[0].ensurePolished()
    text = tips[0].palette().color(QPalette.ColorRole.WindowText)
    base = tips[0].palette().color(QPalette.ColorRole.ToolTipBase)
    QToolTip.hideText()
    assert text.lightness() < 128 and base.lightness() > 128, (text.name(), base.name())
    panel.set_config(AttentionConfig(d_model=768, n_heads=12, n_kv_heads=1))
    assert panel.badge.toolTip() == "12 query heads share 1 key/value head: 12 query heads per KV head."
    panel.set_config(AttentionConfig(d_model=768, n_heads=12))
    assert panel.badge.toolTip().endswith(": 1 query head per KV head.")  # it once said "head(s)"
