"""The notice under the mode badge tells the truth: it names the values the controls show, in full."""

from core.arch.config import AttentionConfig

CFG = AttentionConfig(d_model=768, n_heads=12, n_kv_heads=4, seq_len=64, n_layers=2, causal=True)


def drag_d_model(w, values):
    cp = w.config_panel
    for value in values:
        cp.d_model.slider.setValue(cp.d_model.choices().index(value))


def test_a_d_model_drag_s_notice_names_the_d_model_it_ends_on(make_window):
    w = make_window(config=CFG, live_timing=False)
    cp = w.config_panel
    drag_d_model(w, [6592, 8576, 10784])  # 12 heads divide none of them: n_heads stays forced all the way
    assert cp.d_model.value() == 10784 and cp.n_heads.value() != 12
    assert "d_model 10784" in cp.last_notice and "6592" not in cp.last_notice and "8576" not in cp.last_notice
    assert f"n_heads is {cp.n_heads.value()}, not your 12" in cp.last_notice
    drag_d_model(w, [768])
    assert "back, as you chose" in cp.last_notice


def test_the_notice_is_never_cut(make_window, qtbot):
    w = make_window(config=CFG, live_timing=False)
    label = w.config_panel.notice_label

    def fits() -> bool:
        return label.height() >= label.heightForWidth(label.width())

    for values in ([10720, 10752, 10784], [768], [6592, 10784]):
        drag_d_model(w, values)
        qtbot.waitUntil(fits, timeout=2000)  # the notice's whole text has its height once the layouts ran


def test_a_kv_choice_while_n_heads_stays_forced_drops_the_old_kv_sentence(make_window):
    w = make_window(config=CFG, live_timing=False)
    cp = w.config_panel
    cp.d_model.spin.setValue(100)  # typed: n_heads and n_kv_heads both forced
    cp.d_model.spin.editingFinished.emit()
    assert "n_kv_heads is" in cp.last_notice or "n_heads is" in cp.last_notice
    cp.n_kv_heads.slider.setValue(0)  # the user picks the KV heads now
    assert "n_kv_heads is" not in cp.last_notice and f"n_heads is {cp.n_heads.value()}" in cp.last_notice
