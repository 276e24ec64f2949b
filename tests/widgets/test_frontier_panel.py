"""The Frontier tab's chart on its own: points that overlap are each reachable (a second click selects the
next), a new result clears the selection and the buttons that need one, and selecting never re-ranges."""

from types import SimpleNamespace

from PySide6.QtCore import QPointF

from widgets.frontier.panel import FrontierPanel


def point(method, setting, label, kv, cost):
    return {"method": method, "setting": setting, "sinks": 0, "label": label, "kv_bytes_per_token": kv,
            "kv_fraction": kv / 1000, "loss": 3 + cost, "loss_change": cost, "cost": cost, "js_mean": 0.0,
            "output_rel_error": 0.0, "embedding_cosine": None, "setting_label": str(setting)}


RESULT = {"model": "m", "kind": "causal", "samples": 1, "context": 64, "seconds": 1.0, "complete": True,
          "baseline": point("baseline", None, "m unchanged", 1000, 0.0),
          "points": [point("quant", "fp8_e4m3", "quantised KV, fp8_e4m3", 500, 0.0160),
                     point("quant", "fp8_e5m2", "quantised KV, fp8_e5m2", 500, 0.0161),
                     point("heads", 1, "fewer KV heads (pooled), K=1", 250, 6.0)]}


def test_overlapping_points_are_each_reachable_and_a_new_result_clears_the_selection(qtbot):
    panel = FrontierPanel()
    qtbot.addWidget(panel)
    panel.resize(900, 700)
    panel.show()
    qtbot.waitExposed(panel)
    panel.show_result(RESULT)
    chart = panel.chart
    vb = chart.plot.getPlotItem().getViewBox()
    x_range = vb.viewRange()
    at = vb.mapViewToScene(QPointF(2.69897, 0.01605))  # log10(500): both fp8 points, a pixel apart
    click = SimpleNamespace(scenePos=lambda: at)
    chart._on_mouse_clicked(click)
    first = chart.selected["setting"]
    chart._on_mouse_clicked(click)
    assert {first, chart.selected["setting"]} == {"fp8_e4m3", "fp8_e5m2"}  # the second click: the other one
    assert panel.pin_point.isEnabled() and panel.open_point.isEnabled()
    assert vb.viewRange() == x_range  # the selection ring moves no axis
    panel.show_result(RESULT)  # a new result (the lesson, another run): nothing selected, nothing to pin
    assert chart.selected is None and not panel.pin_point.isEnabled() and not panel.open_point.isEnabled()


def test_the_plan_tabs_parameter_box_reads_counts_as_people_write_them():
    import pytest

    from widgets.plan.panel import parse_count

    assert [parse_count(t) for t in ("70,553,706,496", "70.55B", "1.04T", "7B", "135M", "1_000")] == [
        70_553_706_496, 70_550_000_000, 1_040_000_000_000, 7 * 10**9, 135 * 10**6, 1000]
    for bad in ("1,2,3", "9" * 400 + ".5", "70.5.5B", "１２", "-5", "1e999", "", "0", "123456789012345"):
        with pytest.raises(ValueError):
            parse_count(bad)
