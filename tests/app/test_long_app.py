"""The Long tab in the window: the overview shown is the core's map of the same layer, a zoom shows the
whole rows' probabilities with token labels, a decode run grows its cache, cancel stops at once, a map that would
not fit is refused with its bytes, and exports write what is on screen with their manifests."""

import json

import numpy as np
import pytest

from core.arch.config import AttentionConfig
from core.long.inputs import design_inputs
from core.long.map import block_for, full_probs, long_map
from core.models.source import shipped_unavailable_reason

LOCAL = AttentionConfig(d_model=96, n_heads=4, n_kv_heads=2, seq_len=1024, n_layers=6, causal=True, window=64,
                        layer_pattern="5:1", explicit_head_dim=32)


def long_window(make_window, qtbot, **kw):
    w = make_window(config=LOCAL, live_timing=False, **kw)
    qtbot.waitUntil(lambda: w.runner.is_idle() and w.view_is_current(), timeout=60000)
    w.tabs.setCurrentIndex(7)
    return w


def compute(w, qtbot, tokens=1024, pixels="256"):
    p = w.long.panel
    p.tokens.setValue(tokens)
    p.pixels.setCurrentText(pixels)
    w.long.compute()
    qtbot.waitUntil(lambda: w.long.running is None, timeout=120000)


def test_the_overview_and_its_figures_are_the_cores_map_of_the_layer_shown(make_window, qtbot):
    w = long_window(make_window, qtbot)
    compute(w, qtbot)
    v = w.long.panel.map.view
    assert v is not None and "local W=64" in v.what
    ref = design_inputs(LOCAL, LOCAL.layer_spec(0), 1024)  # layer 0 of 5:1 is local
    m = long_map(ref.q, ref.k, ref.rule, block_for(1024, 256), "max")
    np.testing.assert_allclose(v.pooled, m.pooled, atol=1e-6)
    rows = w.long.panel.stats.rows_shown
    assert len(rows) == 4 and rows[0][2] == f"{100 * m.stats.band[0]:.1f}%"  # the band column, as the core counts it
    assert m.stats.beyond.max() < 1e-6  # a local layer reads nothing beyond its window
    assert "1,024 seeded inputs" in w.long.panel.status.text() and w.long.panel.export_map.isEnabled()
    # the Model box's layer 5 is the global one of 5:1: its map has no band edge
    w.models.picker.layer.setValue(5)
    compute(w, qtbot)
    assert "global" in w.long.panel.map.view.what


def test_a_zoom_is_the_whole_rows_probabilities_with_token_labels(make_window, qtbot):
    w = long_window(make_window, qtbot)
    compute(w, qtbot)
    view = w.long.panel.map
    view.head.setCurrentIndex(2)  # head 1
    with qtbot.waitSignal(view.region_wanted, timeout=5000):
        view.plot.getViewBox().setRange(xRange=(340, 380), yRange=(420, 460), padding=0)  # the aspect lock widens one
        view.settle.start()
    qtbot.waitUntil(lambda: view.zoom is not None, timeout=60000)
    z = view.zoom
    ref = design_inputs(LOCAL, LOCAL.layer_spec(0), 1024)
    full = full_probs(ref.q, ref.k, ref.rule).numpy()
    (r0, r1), (c0, c1) = z.rows, z.cols
    assert z.block == 1 and z.labels == [f"#{i}" for i in range(c0, c1)]
    np.testing.assert_allclose(z.pooled, full[:, r0:r1, c0:c1], atol=1e-6)
    assert view.describe(c0 + 2.5, r0 + 3.5).startswith(f"head 1 · query #{r0 + 3} → key #{c0 + 2} · ")


def test_cancel_stops_a_long_map_at_once_and_keeps_the_view(make_window, qtbot):
    w = long_window(make_window, qtbot, sync=False)
    compute(w, qtbot, tokens=512)
    before = w.long.panel.map.view
    big = AttentionConfig(d_model=512, n_heads=16, n_kv_heads=16, seq_len=4096, causal=True, n_layers=2)
    w.config_panel.set_config(big)
    qtbot.waitUntil(lambda: w.runner.is_idle(), timeout=60000)
    w.models.picker.layer.setValue(0)
    w.long.panel.tokens.setValue(32768)  # minutes of work on two cores
    progress = []
    w.runner.progress.connect(lambda kind, p: progress.append(p) if kind == "long" else None)
    w.long.compute()
    qtbot.waitUntil(lambda: len(progress) >= 2, timeout=60000)
    w.long.cancel()
    qtbot.waitUntil(lambda: w.long.running is None, timeout=20000)
    assert w.long.panel.status.text() == "Cancelled."
    assert w.long.panel.map.view is before  # the overview on screen stays


def test_a_map_that_would_not_fit_is_refused_with_the_bytes_it_needs(make_window, qtbot, monkeypatch):
    import sandbox.jobs.long as lw

    monkeypatch.setattr(lw, "free_memory_bytes", lambda device: 50 * 2**20)
    w = long_window(make_window, qtbot)
    compute(w, qtbot)
    text = w.long.panel.status.text()
    assert text.startswith("Stopped: this overview needs about ") and "choose fewer tokens or fewer pixels" in text
    assert w.long.panel.map.view is None


def test_exports_write_the_map_and_its_manifest_or_refuse_a_users_json(make_window, qtbot, tmp_path):
    w = long_window(make_window, qtbot)
    compute(w, qtbot, tokens=600, pixels="256")
    v = w.long.panel.map.view
    paths = w.long.export("map", tmp_path / "map.npy")
    assert [p.name for p in paths] == ["map.npy", "map.npy.json"]
    np.testing.assert_array_equal(np.load(paths[0]), v.pooled)
    manifest = json.loads(paths[1].read_text())
    assert manifest["block_tokens"] == block_for(600, 256) == 3 and manifest["tokens"] == 600
    assert manifest["stats"]["band_width"] == 64 and manifest["title"] == "Attention Sandbox long map"
    png = w.long.export("map", tmp_path / "map.png")
    assert png and png[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = w.long.export("map", tmp_path / "map.svg")
    assert svg and b"<svg" in svg[0].read_bytes()[:2000]
    (tmp_path / "mine.npy.json").write_text('{"mine": true}')
    assert w.long.export("map", tmp_path / "mine.npy") == [] and "not an Attention Sandbox manifest" in w.last_alert
    assert json.loads((tmp_path / "mine.npy.json").read_text()) == {"mine": True}


def test_a_random_weight_decode_curve_is_timed_and_exported(make_window, qtbot, tmp_path):
    w = long_window(make_window, qtbot)
    p = w.long.panel
    p.tokens.setValue(2048)
    p.steps.setValue(6)
    w.long.decode()
    qtbot.waitUntil(lambda: w.long.running is None, timeout=120000)
    curve = w.long.curve
    assert curve is not None and len(curve["points"]) == 6
    assert [pt["cached"] for pt in curve["points"]] == [min(pt["context"], 64) for pt in curve["points"]]
    assert "Past its window the step reads 64 tokens" in p.decode.summary.text()
    paths = w.long.export("decode", tmp_path / "curve.csv")
    lines = paths[0].read_text().splitlines()
    assert lines[0] == "context,cached,median_ms,p25_ms,p75_ms,kv_bytes" and len(lines) == 7


@pytest.mark.skipif(bool(shipped_unavailable_reason("smollm2-135m")), reason="the SmolLM2 wheel is not installed")
def test_smollm2s_decode_run_grows_its_cache_step_by_step(make_window, qtbot, tmp_path):
    w = long_window(make_window, qtbot)
    with qtbot.waitSignal(w.runner.model_loaded, timeout=180000):
        w.models.load("smollm2-135m")
    qtbot.waitUntil(lambda: w.runner.is_idle() and w.models.key == "smollm2-135m", timeout=120000)
    w.text.setText("Alice was beginning to get very tired")
    qtbot.waitUntil(lambda: w.runner.is_idle(), timeout=60000)
    p = w.long.panel
    p.steps.setValue(4)
    w.long.decode()
    qtbot.waitUntil(lambda: w.long.running is None, timeout=120000)
    steps = p.decode.steps
    n_prompt = steps[0].n_cached
    assert [s.n_cached for s in steps] == [n_prompt + i for i in range(4)]  # 4 tokens: the prefill makes the first
    assert [s.kv_bytes for s in steps] == [30 * 2 * 3 * 64 * 2 * s.n_cached for s in steps]  # bf16, every layer
    assert all(s.row.shape == (9, s.n_cached) for s in steps)
    np.testing.assert_allclose([s.row.sum() for s in steps], 9.0, atol=1e-4)  # each head's row sums to 1
    lines = w.long.export("decode", tmp_path / "run.csv")[0].read_text().splitlines()
    assert lines[0] == "step,cached_tokens,kv_bytes,step_ms,token" and len(lines) == 5


def test_a_zoom_after_a_cancelled_overview_is_of_the_map_on_screen_and_changes_are_flagged(make_window, qtbot):
    w = long_window(make_window, qtbot, sync=False)
    compute(w, qtbot, tokens=1024)
    shown = w.long.panel.map.view
    assert not w.long.panel.stale.isVisible()
    w.models.picker.layer.setValue(5)  # the settings now describe the global layer: the map on screen is layer 0's
    assert w.long.panel.stale.isVisible() and "layer 0 (local W=64)" in w.long.panel.stale.text()
    progress = []
    w.runner.progress.connect(lambda kind, p: progress.append(p) if kind == "long" else None)
    w.long.panel.tokens.setValue(32768)
    w.long.compute()
    qtbot.waitUntil(lambda: len(progress) >= 1, timeout=60000)
    w.long.cancel()
    qtbot.waitUntil(lambda: w.long.running is None, timeout=20000)
    view = w.long.panel.map
    assert view.view is shown
    view.head.setCurrentIndex(1)
    w.long.zoom(100, 140, 60, 100)
    qtbot.waitUntil(lambda: w.long.running is None and view.zoom is not None, timeout=60000)
    ref = design_inputs(LOCAL, LOCAL.layer_spec(0), 1024)  # layer 0's, as the map on screen
    np.testing.assert_allclose(view.zoom.pooled, full_probs(ref.q, ref.k, ref.rule).numpy()[:, 100:140, 60:100],
                               atol=1e-6)
    view.fit()  # Ctrl+0: the whole map, the zoom gone
    assert view.zoom is None and view.visible_region() == (0, 1024, 0, 1024)
    vb = view.plot.getViewBox()
    vb.scaleBy((1000, 1000))  # a wheel spun far out stops eight maps wide
    assert max(vb.viewRange()[0][1] - vb.viewRange()[0][0], vb.viewRange()[1][1] - vb.viewRange()[1][0]) <= 8 * 1024 + 1


@pytest.mark.skipif(bool(shipped_unavailable_reason("smollm2-135m")), reason="the SmolLM2 wheel is not installed")
def test_every_layers_figures_reach_the_roles_tab_and_its_csv(make_window, qtbot, tmp_path):
    from core.long.inputs import model_inputs
    from resources import long_text

    w = long_window(make_window, qtbot)
    with qtbot.waitSignal(w.runner.model_loaded, timeout=180000):
        w.models.load("smollm2-135m")
    qtbot.waitUntil(lambda: w.runner.is_idle() and w.models.key == "smollm2-135m", timeout=120000)
    w.tabs.setCurrentIndex(7)
    w.long.panel.tokens.setValue(256)
    w.long.panel.band.setValue(32)
    w.long.every_layer()
    qtbot.waitUntil(lambda: w.long.running is None, timeout=120000)
    panel = w.roles.panel
    assert w.tabs.currentWidget() is panel and panel.role.currentData() == "long sink"
    grid = panel.scores["long sink"]
    assert grid.shape == (30, 9)
    m = w.runner._worker.models["smollm2-135m"]
    ids = m.tokenizer(long_text())["input_ids"][:256]
    li = model_inputs(m, ids, 20, [])
    ref = long_map(li.q, li.k, li.rule, 256, "max", band=32).stats
    np.testing.assert_allclose(grid[20], ref.sink, atol=2e-5)
    np.testing.assert_allclose(panel.scores["long band"][20], ref.band, atol=2e-5)
    assert panel.table.horizontalHeaderItem(2).text() == "long sink"
    qtbot.waitUntil(lambda: w.roles.result is not None, timeout=60000)
    header = w.roles.csv_text().splitlines()[0].split(",")
    assert header[-4:] == ["long_sink", "long_band", "long_beyond", "long_distance"]
    w.models.use_random()  # another model: its figures go
    assert "long sink" not in panel.scores and panel.role.findData("long sink") < 0
