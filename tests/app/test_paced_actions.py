"""Actions on their way through the paced live loop (sandbox/window/frame_pacer.py): Ctrl+P right after a drag pins
the drag's end once its heatmaps are shown, and maps laid out anew behind another tab fit when shown."""

from PySide6.QtCore import QRectF

from sandbox.tabs.compare import PIN_WAIT_S


def test_a_pin_asked_for_while_the_heatmaps_are_on_their_way_is_made_once_they_are_shown(make_window, qtbot):
    w = make_window(sync=False)
    qtbot.waitUntil(w.view_is_current, timeout=30000)
    panel = w.config_panel
    before = w.config().n_heads
    panel.n_heads.slider.setValue(panel.n_heads.slider.value() + 1)  # the step's heatmaps are not computed yet
    assert not w.view_is_current()
    assert w.pins.pin_current() is None and "once the heatmaps" in w.statusBar().currentMessage()
    qtbot.waitUntil(lambda: len(w.pins.pins) == 1, timeout=int(PIN_WAIT_S * 1000) + 5000)
    pin = w.pins.pins[0]
    assert pin.config == w.config() and pin.config.n_heads != before  # the change, not the view before it
    assert pin.probs.shape[0] == pin.config.n_heads


def test_nothing_on_its_way_is_refused_at_once(make_window):
    w = make_window()
    w.text.setText("")  # no tokens: no heatmaps will come for this
    assert w.pins.pin_current() is None and "Nothing to pin yet" in w.statusBar().currentMessage()
    assert not w.pins._pin_wait.isActive()


def test_maps_laid_out_anew_behind_another_tab_are_fitted_when_their_tab_is_shown(make_window):
    w = make_window()
    tabs = w.tabs
    tabs.setCurrentIndex(1)
    assert not w.mosaic.isVisible()
    panel = w.config_panel
    panel.n_heads.slider.setValue(len(panel.n_heads.choices()) - 1)  # the most heads: a grid of a new shape
    tabs.setCurrentIndex(0)
    lay = w.mosaic.layout_
    assert lay.n_heads == w.config().n_heads
    seen = w.mosaic.plot.getViewBox().viewRect()
    assert seen.contains(QRectF(0, 0, lay.width, lay.height)), (seen, lay.width, lay.height)


def test_a_long_status_message_takes_the_whole_bar_and_the_device_label_returns_after_it(make_window):
    """A stranger found long messages cut by the device label on the bar's right (a model's forced n_kv_heads)."""
    w = make_window()
    bar, label = w.statusBar(), w.worker_status.label
    metrics = bar.fontMetrics()
    bar.showMessage("timing skipped")  # short: both fit
    assert not label.isHidden() and bar.toolTip() == "timing skipped"
    room = bar.width() - label.sizeHint().width()
    words = "n_kv_heads is 3, as SmolLM2 was trained: its 9 heads share 3 K/V heads in groups of 3; "
    long = words * 1
    while metrics.horizontalAdvance(long + words) < bar.width() - 40:
        long += words
    assert metrics.horizontalAdvance(long) > room  # a message that the label would cut
    bar.showMessage(long)
    assert label.isHidden() and bar.toolTip() == long
    bar.clearMessage()
    assert not label.isHidden() and bar.toolTip() == ""


def test_a_pin_asked_for_before_the_view_moved_on_is_not_made_of_the_new_view(make_window, qtbot):
    w = make_window(sync=False)
    qtbot.waitUntil(w.view_is_current, timeout=30000)
    said: list[str] = []
    w.statusBar().messageChanged.connect(said.append)
    slider = w.config_panel.n_kv_heads.slider
    slider.setValue(slider.value() + 1)  # its heatmaps are on their way
    assert w.pins.pin_current() is None
    slider.setValue(slider.value() + 1)  # the user moves on before they are shown
    qtbot.waitUntil(lambda: any("view changed" in s for s in said), timeout=int(PIN_WAIT_S * 1000) + 5000)
    qtbot.waitUntil(w.view_is_current, timeout=30000)
    assert w.pins.pins == []
