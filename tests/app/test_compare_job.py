"""The Compare tab as a user reads it: a pin's header selects its column, four pins fit a 1280x800 window with
nothing cut, and every dash says why on hover."""

from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest

from core.arch.config import AttentionConfig

CFG = AttentionConfig(d_model=768, n_heads=12, n_kv_heads=12, seq_len=512, n_layers=12, causal=True)


def four_pins(make_window, **kw):
    w = make_window(config=CFG, **kw)
    cp = w.config_panel
    cp._on_preset_activated(cp.preset.findText("GPT-2 small"))  # a named model: the plan has its parameters
    w.tabs.setCurrentWidget(w.plan.panel)  # the Plan tab used: pins carry the plan's long-named rows too
    for step in (5, 3, 1, 0):  # MHA, GQA-4, GQA-2, MQA
        w.config_panel.n_kv_heads.slider.setValue(step)
        w.pins.pin_current()
    w.tabs.setCurrentWidget(w.pins.table)
    return w


def test_clicking_a_pin_s_header_selects_it_and_answers_the_select_first_message(make_window, qtbot):
    w = four_pins(make_window)
    t = w.pins.table
    t.buttons["rename"].click()  # nothing selected, four pins: it asks
    assert t.empty.isVisible() and t.empty.text() == "Select a pin's column first."
    header = t.table.horizontalHeader()
    x = header.sectionViewportPosition(2) + header.sectionSize(2) // 2
    QTest.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     QPoint(x, header.height() // 2))
    assert t.selected() == 2
    assert not t.empty.isVisible()  # the request is answered: the message goes
    removed = []
    t.remove_requested.connect(removed.append)
    t.buttons["remove"].click()
    assert removed == [2]


def test_four_pins_fit_a_1280x800_window_with_no_figure_cut(make_window, qtbot):
    w = four_pins(make_window)
    w.resize(1280, 800)
    t = w.pins.table.table
    qtbot.waitUntil(lambda: t.viewport().width() > 0)
    header = t.horizontalHeader()
    used = sum(header.sectionSize(c) for c in range(t.columnCount()))
    assert t.columnCount() == 4 and used <= t.viewport().width()  # every pin in view, no sideways scrolling
    fm = t.fontMetrics()
    for r in range(t.rowCount()):
        for c in range(t.columnCount()):
            item = t.item(r, c)
            widest = max(fm.horizontalAdvance(line) for line in item.text().split("\n"))
            assert widest <= header.sectionSize(c), (t.verticalHeaderItem(r).text(), item.text())
    assert any(t.verticalHeaderItem(r).text().startswith("plan: memory") for r in range(t.rowCount()))
    names = t.verticalHeader()
    assert names.width() <= 200  # the metric names wrap rather than widen their column


def test_every_dash_says_why_on_hover(make_window):
    w = four_pins(make_window, live_timing=False)  # pins made with no timing
    t = w.pins.table.table
    labels = [t.verticalHeaderItem(r).text().replace("\n", " ") for r in range(t.rowCount())]
    dashes = [(labels[r], t.item(r, c).toolTip()) for r in range(t.rowCount()) for c in range(t.columnCount())
              if t.item(r, c).text().startswith("–")]
    assert dashes, "no dash to check"
    assert all(len(tip) > 20 and tip != "–" for _, tip in dashes), dashes
    timing = [tip for label, tip in dashes if label == "layer time"]
    assert timing and all(tip.startswith("Not measured") and "Measure now (Ctrl+M)" in tip for tip in timing)
