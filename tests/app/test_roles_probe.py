"""The Roles tab while the probe changes: it says at once that it is scoring, and on a text with no repeated
token its blank induction grid says why and offers the probe."""

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

TEXT = "The chef who trained in Lucknow cooked biryani"


def test_toggling_the_probe_says_at_once_that_the_heads_are_being_scored(make_window, qtbot):
    w = make_window(sync=False, kind="process", text=TEXT)
    qtbot.waitUntil(lambda: w.roles.result is not None, timeout=60000)
    w.tabs.setCurrentWidget(w.roles.panel)
    p = w.roles.panel
    assert p.explain.text().startswith("Scores on your text")
    QTest.keyClick(w, Qt.Key.Key_I, Qt.KeyboardModifier.ControlModifier)  # Ctrl+I
    assert p.explain.text().startswith("Scoring every head on the induction probe")  # before any result
    assert not p.grid.isEnabled()  # the last probe's grid, greyed
    qtbot.waitUntil(lambda: p.explain.text().startswith("Scores on the induction probe"), timeout=60000)
    assert p.grid.isEnabled() and w.roles.result.probe == "induction"


def test_a_blank_induction_grid_on_your_text_says_why_and_offers_the_probe(make_window, qtbot):
    w = make_window(text=TEXT)  # no token repeats
    w.tabs.setCurrentWidget(w.roles.panel)
    p = w.roles.panel
    p.role.setCurrentIndex(p.role.findData("induction"))
    assert float(p.scores["induction"].max()) == 0.0
    assert p.hint.isVisible() and "no token of your text repeats" in p.hint.text() and "Ctrl+I" in p.hint.text()
    p.hint.linkActivated.emit("induction")  # the hint's link
    assert w.roles.probe == "induction" and w.roles.result.probe == "induction"
    assert not p.hint.isVisible() and float(p.scores["induction"].max()) > 0.0
