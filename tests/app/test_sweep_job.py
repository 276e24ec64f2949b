"""A sweep as a user runs it: it says why no point drew, its step text is read whole, its export dialog opens
where the last export went."""

from pathlib import Path

from PySide6.QtWidgets import QFileDialog


def test_a_sweep_with_no_valid_point_names_each_value_and_why(make_window):
    w = make_window()
    w.sweeps.run("n_heads", "3,5", timed=False)  # neither divides d_model 64
    caption = w.sweeps.panel.caption.text()
    assert caption.startswith("No point of this sweep made a valid configuration (")
    assert "n_heads=3: n_heads=3 does not divide d_model=64" in caption and "n_heads=5:" in caption


def test_the_step_of_a_timed_point_has_a_line_of_its_own_and_the_bar_reads_whole(make_window, qtbot):
    w = make_window(config=None)
    w.resize(1024, 700)
    w.tabs.setCurrentWidget(w.sweeps.panel)
    panel = w.sweeps.panel
    panel.set_running(12, "Heads at fixed width")
    step = "point 1 of 12: allocating the layer and its inputs (1/5)"
    panel.set_step(step)
    qtbot.waitUntil(lambda: panel.eta.isVisible() and panel.eta.width() > 0)
    # nothing to its right: it spans the panel (it once shared a row with the Export buttons and was cut)
    assert panel.eta.width() >= panel.eta.fontMetrics().horizontalAdvance(step)
    bar = panel.progress
    assert bar.text() == "0 of 12 points" and bar.fontMetrics().horizontalAdvance(bar.text()) < bar.width()


def test_the_sweep_export_dialog_opens_in_the_last_export_folder(make_window, monkeypatch, tmp_path):
    w = make_window()
    w.sweeps.run("seq_len", "8,16", timed=False)
    folder = tmp_path / "figures"
    folder.mkdir()
    w.sweeps.export(folder / "first.csv", "csv")  # an export remembers its folder
    asked = []
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (asked.append(a[2]), ("", ""))[1])
    w.sweeps._ask_path("png")
    assert Path(asked[0]) == folder / "sweep-seq_len.png"
