"""Unsaved pins are never lost: the pins of a session come back at the next start, a quit in the middle of a
change included; a session file that no longer reads is set aside, never overwritten."""

import json

from core.workspace import load_workspace
from sandbox.pins import session_file


def test_three_pins_and_a_quit_come_back_at_the_next_start(make_window, settings, qtbot):
    w = make_window()
    for n_kv in (0, 1, 2):  # three configurations, three pins
        w.config_panel.n_kv_heads.slider.setValue(n_kv)
        w.pins.pin_current()
    w.pins.rename(1, "grouped")
    names = [p.name for p in w.pins.pins]
    configs = [p.config for p in w.pins.pins]
    assert len(names) == 3
    w.close()  # Ctrl+Q, at once: the pending write is made on the way out
    again = make_window()
    assert [p.name for p in again.pins.pins] == names and [p.config for p in again.pins.pins] == configs
    assert again.pins.table.names == names
    assert "Restored 3 pins from the last session" in again.statusBar().currentMessage()
    assert again.pins.workspace_path is None  # restored, not a saved workspace of the user's


def test_a_pin_is_written_within_a_second_without_a_quit(make_window, settings, qtbot):
    w = make_window()
    w.pins.pin_current()
    path = session_file(settings.fileName())
    qtbot.waitUntil(lambda: path.exists(), timeout=5000)  # a crash after this keeps the pin
    assert [p.name for p in load_workspace(path)] == ["A"]


def test_an_unreadable_session_file_is_set_aside_not_overwritten(make_window, settings):
    path = session_file(settings.fileName())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"not": "a workspace"')
    w = make_window()
    assert w.pins.pins == []
    kept = path.with_name(path.name + ".unreadable")
    assert kept.read_text() == '{"not": "a workspace"' and "could not be restored" in w.statusBar().currentMessage()
    w.pins.pin_current()
    w.close()
    assert kept.read_text() == '{"not": "a workspace"' and json.loads(path.read_text())
