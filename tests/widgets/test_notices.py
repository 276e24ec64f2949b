"""The configuration panel's notice line: each notice says what the controls show now, and goes once it no longer
does (a forced move a new setting ended, an attention switch, a preset, Custom, "is back")."""

from core.arch.config import AttentionConfig
from core.kinds.registry import kind_of
from widgets.controls.config_panel import ConfigPanel


def test_a_preset_or_pin_ends_what_was_forced_and_no_back_notice_follows(qtbot):
    """n_heads forced by d_model, then a pin: the next n_heads move said "n_heads 16 is back, as you chose it", of an
    intent the pin had already replaced."""
    panel = ConfigPanel(AttentionConfig(d_model=768, n_heads=12, n_kv_heads=4), ["auto"])
    qtbot.addWidget(panel)
    panel.d_model.spin.setValue(512)  # 12 does not divide 512: n_heads is forced
    assert "not your 12" in panel.last_notice
    panel.set_config(AttentionConfig(d_model=768, n_heads=12, n_kv_heads=4))  # a pin of 12 / 4
    panel.n_heads.spin.setValue(16)
    assert "is back" not in panel.last_notice


def test_an_attention_switch_s_notice_goes_when_the_heads_it_names_change(qtbot):
    panel = ConfigPanel(AttentionConfig(d_model=768, n_heads=12, n_kv_heads=4), ["auto"])
    qtbot.addWidget(panel)
    panel.kind_controls.kind.setCurrentIndex(1)  # MLA
    assert panel.last_notice.startswith("Attention MLA: 12 heads")
    panel.seq_len.spin.setValue(256)  # the workload: the layer it names is the same
    assert panel.last_notice.startswith("Attention MLA: 12 heads")
    panel.n_heads.spin.setValue(6)
    assert panel.config().n_heads == 6 and "12 heads" not in panel.notice_label.text()


def test_picking_custom_keeps_the_layers_and_says_what_the_list_shows(qtbot):
    panel = ConfigPanel(AttentionConfig(d_model=768, n_heads=12, n_kv_heads=4), ["auto"])
    qtbot.addWidget(panel)
    panel.preset.setCurrentIndex(panel.preset.findText("DeepSeek-V3"))
    panel.preset.activated.emit(panel.preset.currentIndex())
    cfg = panel.config()
    panel.preset.setCurrentIndex(0)
    panel.preset.activated.emit(0)  # Custom
    assert panel.config() == cfg and panel.last_notice.startswith("Custom: every control is yours")
    assert "names a preset while the layers are exactly its own" in panel.last_notice  # why it says DeepSeek-V3
    assert panel.preset.currentText() == "DeepSeek-V3"


def test_one_head_reads_as_one_head(qtbot):
    panel = ConfigPanel(AttentionConfig(d_model=768, n_heads=1, n_kv_heads=1), ["auto"])
    qtbot.addWidget(panel)
    assert panel.badge.toolTip().startswith("1 query head shares 1 key/value head")
    panel.kind_controls.kind.setCurrentIndex(1)  # MLA
    cfg = panel.config()
    assert cfg.n_heads == 1 and panel.last_notice.startswith("Attention MLA: 1 head, each")
    assert panel.badge.toolTip().startswith("1 head, each") and "1 heads" not in panel.kind_controls.notes["mla"].text()
    spec = cfg.layer_spec()
    assert kind_of(spec).kv_sharing(spec).startswith("1 head, each")


def test_notices_that_no_longer_hold_go(qtbot):
    """Found by a hostile review: each of these notices outlived what it described."""
    base = AttentionConfig(d_model=768, n_heads=12, n_kv_heads=4, seq_len=64, n_layers=12)
    panel = ConfigPanel(base, ["auto"])
    qtbot.addWidget(panel)
    panel.kind_controls.kind.setCurrentIndex(1)
    panel.kind_controls.kind.setCurrentIndex(0)  # back to standard: "Attention standard: MHA of 12 heads ..."
    assert panel.last_notice.startswith("Attention standard: MHA of 12 heads")
    panel.n_kv_heads.spin.setValue(1)  # MQA now: the sentence's "MHA" and its KV bytes are wrong
    assert panel.config().mode == "MQA" and "MHA of 12 heads" not in panel.notice_label.text()

    panel = ConfigPanel(base, ["auto"])
    qtbot.addWidget(panel)
    panel.d_model.spin.setValue(800)  # forces n_heads and n_kv_heads: "... Your 12 and 4 come back when it fits."
    assert "come back when it fits" in panel.last_notice
    panel.set_config(base.with_(d_model=1024, n_heads=16, n_kv_heads=8))  # a pin loaded: that can no longer happen
    assert "come back" not in panel.notice_label.text() and panel.last_notice == ""

    panel = ConfigPanel(base, ["auto"])
    qtbot.addWidget(panel)
    mistral = panel.preset.findText("Mistral 7B")  # its layers are Llama 3 8B's
    panel.preset.setCurrentIndex(mistral)
    panel.preset.activated.emit(mistral)
    panel.preset.setCurrentIndex(0)
    panel.preset.activated.emit(0)  # Custom: the list names the preset picked, not the first with these layers
    assert panel.preset.currentText() == "Mistral 7B" and panel.last_notice.startswith("Custom:")


def test_the_head_dim_lock_names_the_n_heads_it_forces(qtbot):
    panel = ConfigPanel(AttentionConfig(d_model=768, n_heads=10, n_kv_heads=10, seq_len=64, n_layers=2,
                                        explicit_head_dim=64), ["auto"])
    qtbot.addWidget(panel)
    panel.layout_controls.lock.setChecked(True)  # 10 does not divide 768: n_heads moves, and says so
    cfg = panel.config()
    assert cfg.n_heads != 10 and 768 % cfg.n_heads == 0
    assert f"n_heads is {cfg.n_heads}, not your 10: 10 does not divide d_model 768" in panel.last_notice
    panel.layout_controls.lock.setChecked(False)  # its own width again: the user's 10 is back, and said
    assert panel.config().n_heads == 10 and "n_heads 10" in panel.last_notice and "back" in panel.last_notice


def test_a_real_model_s_forced_kv_heads_give_the_model_s_reason_not_a_false_divisor(qtbot):
    """SmolLM2 (9 heads, 3 KV heads) at 576 heads: n_kv_heads became 64 "because 3 does not divide n_heads 576",
    which it does; the real reason is that its KV heads re-split with the heads (576 x P / 9, P dividing 3)."""
    from core.models.choices import ModelShape

    panel = ConfigPanel(AttentionConfig(d_model=576, n_heads=9, n_kv_heads=3), ["auto"])
    qtbot.addWidget(panel)
    shape = ModelShape("SmolLM2-135M", "causal", 30, 9, 3, 64, 576, False)
    panel.set_model_shape(shape)
    panel.n_heads.spin.setValue(576)
    assert panel.config().kv_heads == min(shape.kv_choices(576)) == 64
    assert "does not divide" not in panel.last_notice
    assert "With 576 heads only 64, 192 KV heads can be reached" in panel.last_notice


def test_an_is_back_notice_goes_once_the_user_moves_a_head_count_again(qtbot):
    panel = ConfigPanel(AttentionConfig(d_model=768, n_heads=12, n_kv_heads=4), ["auto"])
    qtbot.addWidget(panel)
    panel.n_heads.spin.setValue(1)  # n_kv_heads forced from 4 to 1
    panel.n_heads.spin.setValue(12)
    assert panel.last_notice == "n_kv_heads 4 is back, as you chose it."
    panel.n_kv_heads.spin.setValue(2)  # the user's own move: the sentence no longer describes the slider
    assert panel.config().kv_heads == 2 and "is back" not in panel.notice_label.text()


def test_a_new_notice_of_as_many_lines_relays_nothing_above_it(qtbot):
    """A drag across forced moves changed the notice at every other step, and each new text relaid the Architecture
    box, the side panel and the config panel (0.35 ms a time, inside the drag's longest stalls)."""
    from PySide6.QtCore import QEvent, QObject
    from PySide6.QtWidgets import QApplication, QGroupBox

    panel = ConfigPanel(AttentionConfig(d_model=768, n_heads=12, n_kv_heads=4), ["auto"])
    qtbot.addWidget(panel)
    panel.resize(400, 800)  # the side panel's width: every notice here takes the two lines the line reserves
    panel.show()
    for _ in range(3):  # the first show's layout requests, each posted by the last
        QApplication.processEvents()
    box = panel.findChildren(QGroupBox)[0]
    seen = []

    class Requests(QObject):
        def eventFilter(self, obj, event):  # noqa: N802 (Qt's name)
            if obj is box and event.type() == QEvent.Type.LayoutRequest:
                seen.append(panel.last_notice)
            return False

    spy = Requests()
    box.installEventFilter(spy)
    for heads in (6, 12, 6):  # 4 does not divide 6: n_kv_heads forced, then back, then forced again
        panel.n_heads.spin.setValue(heads)
        QApplication.processEvents()
    assert "not your 4" in panel.last_notice and seen == []


def test_a_refusal_is_said_until_a_valid_change(qtbot):
    """An odd qk_rope is refused with "The previous setting is kept."; the sentence goes once the user makes a valid
    change (it once stayed through every later edit, describing a setting long gone)."""
    panel = ConfigPanel(AttentionConfig(d_model=768, n_heads=12, n_kv_heads=4), ["auto"])
    qtbot.addWidget(panel)
    panel.kind_controls.kind.setCurrentIndex(1)  # MLA
    spin = panel.kind_controls.spins["mla"]["qk_rope_head_dim"]
    spin.setValue(63)
    assert "must be even" in panel.last_notice and panel.last_notice.endswith("The previous setting is kept.")
    assert spin.value() == 64  # put back
    panel.kind_controls.spins["mla"]["kv_lora_rank"].setValue(256)
    assert panel.last_notice == ""
