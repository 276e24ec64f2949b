"""A sweep as a user runs it: it says why no point drew, its step text is read whole, its export dialog opens
where the last export went."""

from pathlib import Path

from PySide6.QtWidgets import QFileDialog

from sandbox.jobs.types import SweepProgress


def test_a_sweep_with_no_valid_point_names_each_value_and_why(make_window):
    w = make_window()
    w.sweeps.run("n_heads", "3,5", timed=False)  # neither divides d_model 64
    caption = w.sweeps.panel.caption.text()
    assert caption.startswith("No point of this sweep made a valid configuration (n_heads = 3, 5: n_heads=N does not "
                              "divide d_model=64")
    # 64 values that fail for one reason: one line, the values counted (6,253 characters once, the window 1,259 px tall)
    w.sweeps.run("n_heads", "65..128 step 1", timed=False)
    caption = w.sweeps.panel.caption.text()
    assert len(caption) < 300 and "n_heads = 65, 66, 67, 68, 69, 70, 71, 72 and 56 more: " in caption
    notes = w.sweeps.panel.notes.text().splitlines()
    assert len(notes) == 6 and notes[-1].startswith("… and 59 more")
    assert w.minimumSizeHint().height() <= 800


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


def _sweep_to_end(w, qtbot, knob="seq_len", values="8,16,24,32,40,48", timed=True):
    w.sweeps.run(knob, values, timed=timed)
    qtbot.waitUntil(lambda: w.sweeps.result is not None, timeout=60000)
    return w.sweeps.result


def test_esc_outside_the_sweep_tab_and_a_stray_cancel_never_stop_a_sweep(make_window, async_kind, qtbot):
    """A sweep stops only for the user's Cancel (or Esc in its own tab) or another sweep: Esc pressed to leave the
    text field, a Cancel with no sweep running, and an older sweep's cancel arriving late all leave it running."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    w = make_window(sync=False, kind=async_kind)
    qtbot.waitUntil(lambda: w.runner.is_idle(), timeout=60000)
    w.sweeps.cancel()  # nothing runs: nothing is sent that could stop the next sweep
    w.runner.cancel("sweep", 0)  # a late cancel of the sweep before the next one
    progress = []
    w.runner.progress.connect(lambda kind, p: progress.append(p.done) if isinstance(p, SweepProgress) else None)
    w.tabs.setCurrentWidget(w.heat_tab)
    w.sweeps.run("seq_len", "8,16,24,32,40,48", timed=True)
    w.text.setFocus()
    QTest.keyClick(w.text, Qt.Key.Key_Escape)  # leaves the text field: the sweep in the Sweep tab runs on
    qtbot.waitUntil(lambda: w.sweeps.result is not None, timeout=60000)
    result = w.sweeps.result
    assert not result.partial and [r.value for r in result.ok_rows()] == [8, 16, 24, 32, 40, 48]
    assert progress == sorted(progress) and progress[-1] == 6  # one sweep, counted up, never back


def test_esc_in_the_sweep_tab_cancels_the_sweep_it_shows(make_window, async_kind, qtbot):
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    w = make_window(sync=False, kind=async_kind)
    qtbot.waitUntil(lambda: w.runner.is_idle(), timeout=60000)
    w.tabs.setCurrentWidget(w.sweeps.panel)
    w.activateWindow()
    w.sweeps.panel.values.setFocus()
    # Esc in the values field is the field's: the sweep runs on; Esc with the plots in focus cancels it
    w.runner.progress.connect(lambda kind, p: QTest.keyClick(w.sweeps.panel.values, Qt.Key.Key_Escape)
                              if isinstance(p, SweepProgress) and p.done == 1 else None)
    w.runner.progress.connect(lambda kind, p: (w.sweeps.panel.plots.setFocus(),
                                               QTest.keyClick(w.sweeps.panel.plots, Qt.Key.Key_Escape))
                              if isinstance(p, SweepProgress) and p.done == 3 else None)
    w.sweeps.run("seq_len", ",".join(str(8 * i) for i in range(1, 40)), timed=True)
    qtbot.waitUntil(lambda: w.sweeps.result is not None, timeout=60000)
    assert w.sweeps.result.partial and w.sweeps.result.stopped_reason == "cancelled"
    assert len(w.sweeps.result.rows) >= 3  # not at the first Esc, the field's
    assert "Partial: cancelled." in w.sweeps.panel.caption.text()
