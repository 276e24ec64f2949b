"""Unsaved pins are never lost: the pins of a session come back at the next start, a quit in the middle of a
change included; a session file that no longer reads is set aside, never overwritten."""

import json

from core.study.workspace import load_workspace
from sandbox.tabs.compare import session_file


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
    (kept,) = path.parent.glob(path.name + ".*.unreadable")
    assert kept.read_text() == '{"not": "a workspace"' and "could not be restored" in w.statusBar().currentMessage()
    w.pins.pin_current()
    w.close()
    assert kept.read_text() == '{"not": "a workspace"' and json.loads(path.read_text())
    path.write_text("garbage again")  # a second unreadable file never replaces the first one set aside
    make_window()
    kept_files = sorted(path.parent.glob(path.name + ".*.unreadable"))
    assert len(kept_files) == 2 and {f.read_text() for f in kept_files} == {'{"not": "a workspace"', "garbage again"}


def test_a_pin_that_would_make_the_session_unopenable_is_refused(make_window, monkeypatch):
    """Five pins of 416 MiB maps were saved, and the next start refused the 2 GiB session whole: a pin past the
    limits a workspace opens with is refused when it is asked for, with the sizes."""
    import sandbox.tabs.compare as pins

    w = make_window()
    size = 4 * w.last_heatmaps.probs.size
    monkeypatch.setattr(pins, "MAX_TOTAL_MAP_BYTES", 2 * size)  # room for two pins of these maps
    assert w.pins.pin_current() and w.pins.pin_current()
    assert w.pins.pin_current() is None and len(w.pins.pins) == 2
    assert w.statusBar().currentMessage().startswith("Not pinned: its heatmaps are")


def test_opening_a_workspace_keeps_the_unsaved_pins_it_replaces(make_window, settings, tmp_path):
    from core.study.workspace import load_workspace

    w = make_window()
    w.pins.pin_current()
    w.pins.save(tmp_path / "one.attn.json")  # A, saved
    w.config_panel.n_kv_heads.slider.setValue(0)
    w.pins.pin_current()  # B, never saved in a workspace
    assert w.pins.open(tmp_path / "one.attn.json") and [p.name for p in w.pins.pins] == ["A"]
    (kept,) = session_file(settings.fileName()).parent.glob("pins-replaced-*.attn.json")
    assert [p.name for p in load_workspace(kept)] == ["A", "B"] and str(kept) in w.statusBar().currentMessage()
    assert w.pins.open(tmp_path / "one.attn.json")  # nothing unsaved this time: nothing more is written
    assert len(list(kept.parent.glob("pins-replaced-*.attn.json"))) == 1


def test_a_quit_whose_save_fails_keeps_the_pins_elsewhere_without_asking(make_window, settings, monkeypatch,
                                                                         tmp_path):
    """A session file that cannot be written at quit: the pins go to the home (or temporary) folder, plainly, and the
    window closes (a question there hung every test that closed a window with a failing save)."""
    from core.study.workspace import load_workspace

    w = make_window()
    w.pins.pin_current()
    monkeypatch.setattr(w.pins, "session_path", session_file(settings.fileName()).with_name("no") / "x" / "\0")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    w.close()
    assert not w.isVisible()
    (kept,) = home.glob("attention-sandbox-pins-*.attn.json")
    assert [p.name for p in load_workspace(kept)] == ["A"]
