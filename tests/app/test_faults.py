"""Faults injected into the running app: each gives a message, leaves nothing half-written, and the
app goes on serving the next request."""

import json
import os

import numpy as np
import pytest

from core.files.atomic import ExportError
from sandbox.tabs.export_render import ExportJob


def test_an_unexpected_worker_error_is_shown_logged_with_its_traceback_and_survived(make_window, monkeypatch, tmp_path):
    import sandbox.jobs.worker

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    w = make_window()
    real = sandbox.jobs.worker.compute_heatmaps

    def broken(*args, **kwargs):
        raise RuntimeError("the display path broke")

    monkeypatch.setattr(sandbox.jobs.worker, "compute_heatmaps", broken)
    w.config_panel.seq_len.spin.setValue(99)
    assert "RuntimeError: the display path broke" in w.last_error and "details in" in w.last_error
    log = (tmp_path / "attention-sandbox" / "attention-sandbox.log").read_text()
    assert "Traceback (most recent call last)" in log and "RuntimeError: the display path broke" in log
    monkeypatch.setattr(sandbox.jobs.worker, "compute_heatmaps", real)
    w.config_panel.seq_len.spin.setValue(98)
    assert w.last_error == "" and w.view_is_current()


def test_a_full_disk_during_the_write_leaves_no_file(make_window, tmp_path, monkeypatch):
    w = make_window()

    def no_space(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "save", no_space)
    with pytest.raises(ExportError, match="No space left"):
        w.export_to(ExportJob(tmp_path / "x.npy", "npy"))
    assert list(tmp_path.iterdir()) == []


def test_the_export_dialog_path_reports_failures_without_blocking(make_window):
    w = make_window()
    dialog = w.make_export_dialog()
    dialog.path.setText("/proc/attention.png")  # /proc refuses new files, even to root
    assert w.export_chosen(dialog) == []
    assert "could not write" in w.last_alert and "Export failed" in w.statusBar().currentMessage()
    dialog.close()


def test_saving_a_workspace_killed_before_the_rename_keeps_the_old_file(make_window, tmp_path, monkeypatch):
    w = make_window()
    w.pins.pin_current()
    path = tmp_path / "ws.json"
    assert w.pins.save(path)
    before = path.read_bytes()
    w.pins.pin_current()

    def killed(*a, **k):
        raise OSError(4, "Interrupted system call")

    monkeypatch.setattr(os, "replace", killed)
    assert not w.pins.save(path)
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["ws.json"]
    assert len(json.loads(before)["pins"]) == 1 and len(w.pins.pins) == 2  # the open workspace is untouched


def test_a_workspace_that_is_not_json_changes_nothing(make_window, tmp_path):
    w = make_window()
    w.pins.pin_current()
    bad = tmp_path / "notjson.json"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n")
    before = list(w.pins.pins)
    assert not w.pins.open(bad)
    assert w.pins.pins == before and ("not JSON" in w.last_alert or "cannot read" in w.last_alert)


def test_heatmaps_too_large_to_draw_are_refused_before_computing_them(make_window):
    from core.arch.config import AttentionConfig
    from core.kinds.display_guard import display_map_bytes

    w = make_window(max_timing_s=0.0, text="word " * 300)
    assert display_map_bytes(16384, 256) > 16 * 2**30  # 16,384 heads of 256 tokens: over 16 GiB to show
    w.config_panel.set_config(AttentionConfig(d_model=16384, n_heads=16384, seq_len=4096))
    assert "the heatmaps of 16,384 heads x 256 tokens need about" in w.last_error
    assert "shorten the text or use fewer heads" in w.info.text()
    w.text.setText("just four words here")  # a short text fits: the same heads are drawn
    assert w.last_error == "" and w.last_heatmaps.probs.shape == (16384, 4, 4)


@pytest.mark.parametrize("damage", [
    lambda d: d["pins"][0]["report"].__setitem__("timing", "fast"),
    lambda d: d["pins"][0]["report"].__setitem__("timing", {"median_ms": "x"}),
    lambda d: d.__setitem__("pins", 5),
    lambda d: d["pins"][0].__setitem__("seed", 1e400),
])
def test_a_damaged_workspace_changes_nothing_in_the_window(make_window, tmp_path, damage):
    w = make_window()
    w.pins.pin_current()
    w.config_panel.seq_len.spin.setValue(20)
    w.pins.pin_current()
    mine = tmp_path / "mine.json"
    assert w.pins.save(mine)
    data = json.loads(mine.read_text())
    damage(data)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    before = list(w.pins.pins)
    assert not w.pins.open(bad)
    assert w.pins.pins == before and w.pins.workspace_path == mine  # the user's pins and save path stay
    assert "bad.json is damaged" in w.last_alert and "\n" not in w.last_alert
    bad_bytes = bad.read_bytes()
    assert w.pins.save()  # Ctrl+S writes the user's own file, never the refused one
    assert bad.read_bytes() == bad_bytes and len(json.loads(mine.read_text())["pins"]) == 2
