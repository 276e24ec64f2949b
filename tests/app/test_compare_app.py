import json

import numpy as np

from core.counts import kv_cache_bytes, param_counts
from core.report import build_report
from core.study.compare import comparison
from core.study.sweep import parse_values
from sandbox.jobs.types import SweepProgress
from tests.app.conftest import SMALL


def test_pins_hold_exact_numbers_timing_and_heatmaps(make_window):
    w = make_window()
    a = w.pins.pin_current()
    w.config_panel.n_kv_heads.slider.setValue(w.config_panel.n_kv_heads.choices().index(8))
    b = w.pins.pin_current()
    assert (a.name, b.name) == ("A", "B")
    assert a.report == build_report(SMALL, a.report["timing"]) and a.report["timing"]["median_ms"] > 0
    assert b.config.kv_heads == 8 and b.report["params"] == param_counts(b.config).to_dict()
    np.testing.assert_array_equal(a.probs, w.pins.pins[0].probs)
    table = w.pins.table
    assert table.table.columnCount() == 2 and table.names == ["A", "B"]
    rows = {r.label: r for r in comparison([a.report, b.report], 0)}
    kv_a, kv_b = kv_cache_bytes(a.config).bytes_total, kv_cache_bytes(b.config).bytes_total
    assert rows["KV cache, B x T x L"].cells[1].relation == f"x{kv_b / kv_a:.3g}"
    r = [table.table.verticalHeaderItem(i).text().replace("\n", " ") for i in range(table.table.rowCount())].index("KV cache, B x T x L")
    assert table.table.item(r, 1).text().endswith(f"x{kv_b / kv_a:.3g}")
    assert "KV cache, B x T x L" in table.text() and "| metric | A (baseline) | B |" in table.markdown()


def test_pin_waits_for_its_timing_in_async_mode(make_window, async_kind, qtbot):
    w = make_window(sync=False, kind=async_kind)
    qtbot.waitUntil(w.view_is_current, timeout=20000)
    pin = w.pins.pin_current()
    qtbot.waitUntil(lambda: pin.report["timing"] is not None, timeout=20000)
    assert pin.report == build_report(pin.config, pin.report["timing"])


def test_rename_remove_and_load_on_sliders(make_window):
    w = make_window()
    w.pins.pin_current()
    w.config_panel.seq_len.spin.setValue(17)
    w.pins.pin_current()
    w.pins.rename(0, "MHA?")
    w.pins.rename(1, "MHA?")  # taken: refused with a message
    assert [p.name for p in w.pins.pins] == ["MHA?", "B"] and "already named" in w.statusBar().currentMessage()
    w.pins.load_on_sliders(0)
    assert w.config() == SMALL
    w.pins.remove(0)
    assert [p.name for p in w.pins.pins] == ["B"] and w.pins.table.table.columnCount() == 1


def test_diff_of_a_pin_with_itself_is_all_zeros(make_window):
    w = make_window()
    w.pins.pin_current()
    w.pins.pin_current()
    dialog = w.pins.open_diff(0, 1)
    assert np.all(dialog.mosaic.probs == 0) and "head by head" in dialog.note.text()
    # No difference has no scale to draw: the bar said "-1.000 → 0 → +1.000", a range no cell reached.
    assert dialog.mosaic.bar_text.text() == "0 everywhere: A and B attend exactly alike"
    dialog.close()


def test_diff_refuses_different_texts(make_window):
    w = make_window()
    w.pins.pin_current()
    w.text.setText("another text entirely")
    w.pins.pin_current()
    assert w.pins.open_diff(0, 1) is None and "different tokens" in w.last_alert


def test_workspace_save_open_and_a_damaged_file_changes_nothing(make_window, tmp_path):
    w = make_window()
    w.pins.pin_current()
    w.config_panel.seq_len.spin.setValue(20)
    w.pins.pin_current()
    path = tmp_path / "ws.json"
    assert w.pins.save(path)
    saved = [(p.name, p.report) for p in w.pins.pins]
    w.pins.remove(0)
    assert w.pins.open(path) and [(p.name, p.report) for p in w.pins.pins] == saved
    bad = tmp_path / "bad.json"
    bad.write_text('{"app": "attention-sandbox", "schema": 1, "pins": [{"name": 1}]}')
    before = list(w.pins.pins)
    assert not w.pins.open(bad)
    assert w.pins.pins == before and "damaged" in w.last_alert
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps({"app": "attention-sandbox", "schema": 7, "pins": []}))
    assert not w.pins.open(newer) and "newer" in w.last_alert and w.pins.pins == before


def test_sweep_points_carry_the_engine_numbers_and_plots(make_window):
    w = make_window()
    w.pins.pin_current()  # SMALL itself lies on the seq_len line
    sid = w.sweeps.run("seq_len", "16,32,64,3", timed=True)
    assert sid is not None
    result = w.sweeps.result
    assert [r.value for r in result.rows] == [16, 32, 64, 3] and not result.partial
    for row in result.rows:
        cfg = SMALL.with_(seq_len=row.value)
        assert row.report["config"]["seq_len"] == row.value
        assert row.report["kv_cache"] == kv_cache_bytes(cfg).to_dict()
        assert row.report["timing"]["median_ms"] > 0
    assert w.sweeps.pinned_marks() == [(64, "A")]
    assert len(w.sweeps.panel.plots.plots["time"].listDataItems()) >= 1
    assert "4 points of seq_len" in w.sweeps.panel.caption.text()
    assert w.sweeps.panel.plots.describe(0).startswith("16: params")


def test_invalid_sweep_values_are_reported_per_value_and_bad_lists_ask_for_correction(make_window):
    w = make_window()
    w.sweeps.run("n_kv_heads", "8,3,2", timed=False)
    statuses = [(r.value, r.status) for r in w.sweeps.result.rows]
    assert statuses == [(8, "ok"), (3, "skipped"), (2, "ok")]
    assert "n_kv_heads=3: skipped" in w.sweeps.panel.notes.text()
    assert w.sweeps.run("seq_len", "", timed=False) is None and "at least one value" in w.sweeps.panel.caption.text()
    assert w.sweeps.run("seq_len", "1..500", timed=False) is None and "at most 64" in w.sweeps.panel.caption.text()


def test_cancelling_mid_sweep_keeps_finished_points_marked_partial(make_window, async_kind, qtbot):
    w = make_window(sync=False, kind=async_kind)
    qtbot.waitUntil(w.runner.is_idle, timeout=20000)
    done = []
    w.runner.progress.connect(lambda kind, p: (done.append(p.done), w.sweeps.cancel() if p.done == 2 else None)
                              if isinstance(p, SweepProgress) else None)
    w.sweeps.run("seq_len", "8,16,24,32,40,48,56,64", timed=True)
    qtbot.waitUntil(lambda: w.sweeps.result is not None, timeout=30000)
    result = w.sweeps.result
    assert result.partial and result.stopped_reason == "cancelled"
    assert 2 <= len(result.rows) < 8 and [r.value for r in result.rows] == [8, 16, 24, 32, 40, 48, 56, 64][: len(result.rows)]
    assert "Partial: cancelled" in w.sweeps.panel.caption.text()


def test_memory_guard_stops_the_sweep_at_that_point(make_window, monkeypatch):
    import core.device

    w = make_window()
    real = core.device.free_memory_bytes
    monkeypatch.setattr(core.device, "free_memory_bytes", lambda d: 8 * 2**20 if w.sweeps.result is None else real(d))
    w.sweeps.run("seq_len", "16,4096,32", timed=True)
    rows = w.sweeps.result.rows
    assert [r.status for r in rows] == ["ok", "refused"] and w.sweeps.result.partial
    assert "needs about" in w.sweeps.result.stopped_reason


def test_lesson_heads_at_fixed_width_caption_from_numbers(make_window):
    w = make_window()
    w.sweeps.run_lesson("seq", timed=False)
    assert "core FLOPs x16,384 (grows as T^2.00)" in w.sweeps.panel.caption.text()
    assert len(w.sweeps.result.rows) == len(parse_values("128..16384 log"))


def test_sweep_exports(make_window, tmp_path):
    w = make_window()
    w.tabs.setCurrentWidget(w.sweeps.panel)
    w.sweeps.run("seq_len", "8,16", timed=False)
    w.sweeps.export(tmp_path / "s.csv", "csv")
    lines = (tmp_path / "s.csv").read_text().splitlines()
    assert lines[0].startswith("value,status") and len(lines) == 3
    w.sweeps.export(tmp_path / "s.png", "png")
    from PySide6.QtGui import QImage

    assert not QImage(str(tmp_path / "s.png")).isNull()


def test_diff_legend_and_hover_name_the_pins_and_the_true_direction(make_window):
    w = make_window()
    w.pins.pin_current()  # A
    w.config_panel.n_kv_heads.slider.setValue(0)  # MQA: other keys, other maps
    w.pins.pin_current()  # B
    w.pins.rename(0, "trained")
    w.pins.rename(1, "pooled")
    dialog = w.pins.open_diff(1, 0)  # the selected pin minus the baseline, as the Compare tab asks
    a, b = w.pins.pins[0].probs, w.pins.pins[1].probs
    diff = dialog.mosaic.probs
    np.testing.assert_array_equal(diff, b - a)
    assert dialog.windowTitle() == "pooled − trained"
    m = float(np.abs(b - a).max())
    assert dialog.mosaic.bar_text.text() == f"{-m:+.3f} (trained larger) → 0 → {m:+.3f} (pooled larger)"
    h, q, k = np.unravel_index(np.argmax(b - a), diff.shape)  # a cell where "pooled" is larger
    hover = dialog.mosaic.describe(int(h), int(q), int(k))
    assert f"pooled − trained {float(diff[h, q, k]):+.4f} (pooled larger)" in hover
    h, q, k = np.unravel_index(np.argmin(b - a), diff.shape)  # and one where "trained" is larger
    assert "(trained larger)" in dialog.mosaic.describe(int(h), int(q), int(k))
    dialog.close()


def test_sweep_plots_label_log_axes_with_majors_and_keep_legends_off_the_curves(make_window):
    w = make_window()
    w.tabs.setCurrentWidget(w.sweeps.panel)
    w.pins.pin_current()
    w.sweeps.run("seq_len", "16..4096 log", timed=False)
    plots = w.sweeps.panel.plots.plots
    flops = plots["flops"]
    axis = flops.getAxis("left")
    assert axis.logMode
    lo, hi = flops.getViewBox().viewRange()[1]
    ((_, ticks),) = axis.tickValues(lo, hi, axis.geometry().height())
    labels = axis.tickStrings(ticks, 1.0, 1.0)
    assert len(labels) >= 2 and all(label[0] in "125" for label in labels)  # 1M, 10M, 2G ...: round values only
    for p in plots.values():
        assert p.legend is None  # no legend box on the curves
    assert "━ total" in flops.titleLabel.text and "━ core" in flops.titleLabel.text
