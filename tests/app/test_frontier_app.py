"""The Frontier tab on MiniLM: the chart's points are the model's own KV bytes, the sentence names the
cheapest method under the budget, a run is cached, and the exports hold the table and a manifest."""

import csv
import json

import pytest

from core.format import format_bytes
from core.models.catalog import shipped_unavailable_reason

pytestmark = pytest.mark.skipif(bool(shipped_unavailable_reason("minilm-l6")), reason="the [models] extra is missing")


def test_a_frontier_run_charts_every_point_and_says_which_method_loses_least(make_window, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    w = make_window()
    tab = w.frontier
    assert not tab.panel.run.isEnabled()  # random weights: nothing to run on
    w.models.load("minilm-l6")
    assert tab.panel.run.isEnabled() and "all-MiniLM-L6-v2" in tab.panel.model_label.text()
    for key, box in tab.panel.boxes.items():
        box.setChecked(key in ("heads", "quant"))
    tab.panel.run.click()
    result = tab.panel.result
    assert result["complete"] and not tab.panel.running
    L, H, h = 6, 12, 32  # MiniLM's config: 6 layers of 12 heads of 32
    assert result["baseline"]["kv_bytes_per_token"] == 2 * L * H * h * 2
    plotted = sorted(p["kv_bytes_per_token"] for p in tab.panel.chart.points)
    assert plotted == sorted([2 * L * H * h * 2] + [2 * L * k * h * 2 for k in (6, 4, 3, 2, 1)]
                             + [2 * L * H * h * b for b in (2, 1, 1, 34 / 32, 18 / 32)])
    tab.panel.budget.setValue(1)  # 1/3
    under = [p for p in result["points"] if p["kv_fraction"] <= 1 / 3]
    cheapest = min(under, key=lambda p: 1 - p["embedding_cosine"])
    assert cheapest["setting_label"] == "q4_0"  # 4-bit K and V: 0.28 of the cache
    assert "quantised loses least" in tab.panel.sentence.text() and "(q4_0, 0.281 of the cache)" in tab.panel.sentence.text()

    paths = tab.export(tmp_path / "frontier.csv")
    rows = list(csv.DictReader(open(paths[0])))
    assert len(rows) == 1 + len(result["points"]) and rows[0]["method"] == "baseline"
    manifest = json.loads(paths[1].read_text())
    assert manifest["model"] == "all-MiniLM-L6-v2" and manifest["evaluation_text"] == "eval_alice.txt"
    png, png_manifest = tab.export(tmp_path / "frontier.png")
    svg, svg_manifest = tab.export(tmp_path / "frontier.svg")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and b"<svg" in svg.read_bytes()[:400]
    assert json.loads(png_manifest.read_text())["file"] == "frontier.png" != json.loads(svg_manifest.read_text())["file"]
    assert b"quantised KV" in svg.read_bytes() and b"unchanged model" in svg.read_bytes()  # the legend is in the file
    (tmp_path / "mine.csv.json").write_text('{"my": "data"}')  # a user's own file is never replaced
    with pytest.raises(ValueError, match="not an Attention Sandbox manifest"):
        tab.export(tmp_path / "mine.csv")

    tab.panel.run.click()  # the same frontier again: from the cache, at once
    assert "Read from the cache" in tab.panel.status.text() and tab.panel.result == result
    w.models.use_random()  # back to random weights: the model's chart goes with it
    assert tab.panel.result is None and tab.panel.chart.points == [] and not tab.panel.run.isEnabled()
    assert not tab.panel.export_table.isEnabled()


def test_the_lesson_opens_smollm2_and_asks_for_every_method_read_at_a_third(make_window, monkeypatch):
    w = make_window()
    asked = []
    submit = w.runner.submit
    monkeypatch.setattr(w.runner, "submit", lambda job: asked.append((job.model, job.families)) or 7
                        if getattr(job, "job_kind", "") == "frontier" else submit(job))
    w.tabs.setCurrentIndex(0)
    w.frontier.panel.boxes["quant"].setChecked(False)
    w.sweeps.panel.lesson_buttons["frontier"].click()
    assert w.tabs.currentWidget() is w.frontier.panel
    assert w.models.key == "smollm2-135m"  # opened for the lesson, then the frontier asked for
    assert asked == [("smollm2-135m", ("heads", "latent", "window", "quant"))]
    assert w.frontier.panel.budget_label.text() == "1/3 of the model's own" and w.frontier.panel.running


def test_in_the_app_runner_heatmaps_run_between_points_and_cancel_keeps_the_points_done(make_window, qtbot,
                                                                                      tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    w = make_window(sync=False, kind="process")
    w.runner.wait_ready(120)
    w.models.load("minilm-l6")
    qtbot.waitUntil(lambda: w.models.key == "minilm-l6", timeout=120_000)
    qtbot.waitUntil(lambda: w.runner.is_idle() and w.view_is_current(), timeout=60_000)
    tab = w.frontier
    seen = []
    w.runner.progress.connect(lambda kind, p: seen.append(("point", p.done) if p.point is not None else
                                                          ("start", (p.done, p.total, p.eta_s))))
    w.runner.heatmaps_ready.connect(lambda r: seen.append(("heatmaps", r.request_id)))
    tab.panel.run.click()
    assert "Measuring the unchanged model first" in tab.panel.chart.empty.toPlainText()  # not "Run the frontier"
    # Before its first (slowest) step, the run says its steps and a first guess of their time.
    qtbot.waitUntil(lambda: any(k == "start" for k, _ in seen), timeout=120_000)
    start = next(d for k, d in seen if k == "start")
    assert [k for k, _ in seen if k in ("start", "point")][0] == "start"  # said before any point
    assert start[0] == 0 and start[1] >= 2 and start[2] > 0
    qtbot.waitUntil(lambda: sum(k == "point" for k, _ in seen) >= 2, timeout=120_000)
    rid = w.request()  # heatmaps asked for mid-frontier come back before it ends
    qtbot.waitUntil(lambda: ("heatmaps", rid) in seen, timeout=60_000)
    assert w.runner.running("frontier")
    tab.panel.cancel.click()
    qtbot.waitUntil(lambda: not tab.panel.running, timeout=60_000)
    points = [d for k, d in seen if k == "point"]
    assert 2 <= len(points) < 33 and "cancelled part way" in tab.panel.status.text()
    assert len(tab.panel.result["points"]) == len(points) - 1  # every point done stays on the chart (baseline apart)
    # a worker killed mid-frontier: the tab says so in a sentence and can run again once the model is back
    n = len(seen)
    tab.panel.run.click()
    qtbot.waitUntil(lambda: any(k == "point" for k, _ in seen[n:]), timeout=120_000)
    w.runner.kill_worker("main")
    qtbot.waitUntil(lambda: not tab.panel.running, timeout=60_000)
    assert "the compute worker stopped during the frontier; run it again" in tab.panel.status.text()
    qtbot.waitUntil(lambda: w.runner.is_idle(), timeout=120_000)  # the model reloaded in a new worker
    assert tab.panel.run.isEnabled() and tab.panel.result is not None  # the points shown before stay


def test_a_point_opens_in_the_heatmaps_is_pinned_with_its_method_and_comes_back_from_a_workspace(
        make_window, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    w = make_window()
    w.models.load("minilm-l6")
    tab = w.frontier
    for key, box in tab.panel.boxes.items():
        box.setChecked(key == "quant")
    tab.panel.run.click()
    q4 = next(p for p in tab.panel.result["points"] if p["setting"] == "q4_0")
    tab.panel.chart.select(q4)
    tab.panel._on_point_clicked(q4)
    assert tab.panel.open_point.isEnabled() and tab.panel.pin_point.isEnabled()
    tab.panel.pin_point.click()
    hm = w.last_heatmaps
    assert w.tabs.currentIndex() == 0 and w.models.kv_method == ("quant", "q4_0", 0)
    assert hm.model.fidelity["kv_method"] == "quantised KV, q4_0" and hm.model.after is not None
    assert not w.models.picker.kv_point.isHidden() and "q4_0" in w.models.picker.kv_point.text()
    assert w.mosaic.title.text() == "Changed, every layer: quantised KV, q4_0"
    assert "KV cache as quantised KV, q4_0" in w.models.fidelity.values["change"].text()
    # the maps drawn are the model's own attention over q4_0 keys and values (tests/models/test_kv_point.py)
    assert 0 < hm.model.fidelity["js_divergence_mean"] < 0.05 and (hm.probs != hm.model.before).any()
    # the Costs panel counts the point's cache as the chart does: 2 x 6 layers x 12 heads x 32 x 18/32 bytes a token
    assert w.metrics.values["kv_token"].text() == "2,592 B" == f"{q4['kv_bytes_per_token']:,.0f} B"
    assert w.pins.pins, w.statusBar().currentMessage()
    table = w.pins.table.table
    labels = {table.verticalHeaderItem(i).text().replace("\n", " "): i for i in range(table.rowCount())}
    assert table.item(labels["KV cache of the text, changed"], 0).text().startswith(
        format_bytes(hm.model.fidelity["kv_cache_bytes_after"]))
    pin = w.pins.pins[-1]
    assert pin.model["kv_point"] == {"method": "quant", "setting": "q4_0", "sinks": 0, "label": "quantised KV, q4_0"}
    assert pin.model["changed"] == "every layer's KV: quantised KV, q4_0"

    w.models.picker.kv_clear.click()  # back to the trained heads
    assert w.models.kv_method is None and w.models.picker.kv_point.isHidden()
    assert w.last_heatmaps.model.after is None and w.last_heatmaps.model.fidelity["kv_method"] is None

    assert w.pins.save(tmp_path / "ws.attn.json")
    data = json.loads((tmp_path / "ws.attn.json").read_text())
    big = {"method": "latent_pca", "setting": 769, "sinks": 0, "label": "latent KV (PCA), r=769"}
    data["pins"][-1]["model"]["kv_point"] = data["pins"][-1]["report"]["model"]["kv_point"] = big
    (tmp_path / "bad.attn.json").write_text(json.dumps(data))
    assert not w.pins.open(tmp_path / "bad.attn.json")  # MiniLM's keys and values are 768 wide
    assert "latent rank 769 is more than the model's 768" in w.last_alert
    w.pins.pins = []
    assert w.pins.open(tmp_path / "ws.attn.json")
    w.pins.load_on_sliders(len(w.pins.pins) - 1)
    assert w.models.kv_method == ("quant", "q4_0", 0)
    assert w.last_heatmaps.model.fidelity["kv_method"] == "quantised KV, q4_0"
    w.config_panel.set_config(w.config().with_(n_kv_heads=6))  # a change of heads replaces the point
    assert w.models.kv_method is None and w.last_heatmaps.model.fidelity["kv_method"] is None


def test_a_cancel_right_after_the_unchanged_model_keeps_it_drawn(make_window, qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    w = make_window(sync=False, kind="process")
    w.runner.wait_ready(120)
    w.models.load("minilm-l6")
    qtbot.waitUntil(lambda: w.models.key == "minilm-l6" and w.runner.is_idle(), timeout=120_000)
    tab = w.frontier
    w.runner.progress.connect(lambda kind, p: tab.panel.cancel.click()
                              if p.point is not None and p.point["method"] == "baseline" else None)
    tab.panel.run.click()
    qtbot.waitUntil(lambda: not tab.panel.running, timeout=120_000)
    assert tab.panel.result is not None and tab.panel.result["baseline"]["method"] == "baseline"
    assert "Cancelled before" not in tab.panel.status.text()


def test_a_cancelled_run_s_last_step_leaves_the_run_that_replaced_it():
    """In the thread runner a cancel then a new run let the old run's queued step clear the new run
    ("AssertionError" at the new run's next step)."""
    from sandbox.jobs.frontier import FrontierWork
    from sandbox.jobs.types import FrontierDone

    said = []
    work = FrontierWork(lambda *a: said.append(a), {}, str)
    work.run, work.run_id = object(), 2  # the new run, started
    work._end(FrontierDone(1, None, "cancelled"))  # the old run's end, arriving after
    assert work.run is not None and said[-1][:2] == ("done", "frontier") and said[-1][2].run_id == 1
    work._end(FrontierDone(2, None, "cancelled"))
    assert work.run is None
