"""The Frontier tab on MiniLM: the chart's points are the model's own KV bytes, the sentence names the
cheapest method under the budget, a run is cached, and the exports hold the table and a manifest."""

import csv
import json

import pytest

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
    under = [p for p in result["points"] if p["kv_fraction"] <= 1 / 3 * 1.07]
    cheapest = min(under, key=lambda p: 1 - p["embedding_cosine"])
    assert cheapest["setting_label"] == "q4_0"  # 4-bit K and V: 0.28 of the cache
    assert "quantised loses least" in tab.panel.sentence.text() and "(q4_0, 0.28 of the cache)" in tab.panel.sentence.text()

    paths = tab.export(tmp_path / "frontier.csv")
    rows = list(csv.DictReader(open(paths[0])))
    assert len(rows) == 1 + len(result["points"]) and rows[0]["method"] == "baseline"
    manifest = json.loads(paths[1].read_text())
    assert manifest["model"] == "all-MiniLM-L6-v2" and manifest["evaluation_text"] == "eval_alice.txt"
    png = tab.export(tmp_path / "frontier.png")[0]
    svg = tab.export(tmp_path / "frontier.svg")[0]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and b"<svg" in svg.read_bytes()[:400]

    tab.panel.run.click()  # the same frontier again: from the cache, at once
    assert "Read from the cache" in tab.panel.status.text() and tab.panel.result == result


def test_the_lesson_opens_smollm2_and_asks_for_every_method_read_at_a_third(make_window, monkeypatch):
    w = make_window()
    asked = []
    monkeypatch.setattr(w.runner, "submit_frontier", lambda key, families, n=2: asked.append((key, families)) or 7)
    w.tabs.setCurrentIndex(0)
    w.frontier.panel.boxes["quant"].setChecked(False)
    w.sweeps.panel.lesson_buttons["frontier"].click()
    assert w.tabs.currentWidget() is w.frontier.panel
    assert w.models.key == "smollm2-135m"  # opened for the lesson, then the frontier asked for
    assert asked == [("smollm2-135m", ("heads", "latent", "window", "quant"))]
    assert w.frontier.panel.budget_label.text() == "1/3 of the model's own" and w.frontier.panel.running
