from pathlib import Path

import numpy as np
import pytest
import torch
from PySide6.QtWidgets import QApplication

from core.arch.config import AttentionConfig
from core.counts import flop_counts, kv_cache_bytes, param_counts
from core.inputs.embedding import embed_tokens
from core.inputs.tokens import DEFAULT_TEXT, simple_tokenize
from core.kinds.standard.layer import AttentionLayer
from tests.app.conftest import SMALL


def assert_metrics_match(w, cfg):
    p, f, kv = param_counts(cfg), flop_counts(cfg), kv_cache_bytes(cfg)
    m = w.metrics
    assert m.values["params"].text() == f"{p.total:,}"
    assert m.values["q"].text() == f"{p.q:,}" and m.values["v"].text() == f"{p.v:,}"
    assert m.values["flops"].text() == f"{f.total:,}"
    assert m.values["kv_token"].text() == f"{kv.bytes_per_token:,} B"
    assert m.values["kv_total"].text() == f"{kv.bytes_total:,} B"


def assert_view_matches(w, cfg):
    hm = w.last_heatmaps
    assert hm.config == cfg and w.view_is_current()
    n = len(hm.tokens)
    assert hm.probs.shape == (cfg.n_heads, n, n) and w.mosaic.probs is hm.probs
    assert w.mosaic.layout_.n_heads == cfg.n_heads and w.mosaic.group_size == cfg.group_size


def test_opens_with_the_seeds_sentence_and_correct_numbers(make_window):
    w = make_window(text=None, use_settings=False)
    assert w.text.text() == DEFAULT_TEXT
    assert w.last_heatmaps.tokens == simple_tokenize(DEFAULT_TEXT)
    assert_metrics_match(w, w.config())
    assert w.last_timing.config == w.config() and w.timing.labels["state"].text().startswith("measured")
    assert "CPU" in w.timing.labels["state"].text() or w.last_timing.result.device != "cpu"


@pytest.mark.parametrize("control, action, check", [
    ("d_model", lambda p: p.d_model.spin.setValue(96), lambda c: c.d_model == 96),
    ("n_heads", lambda p: p.n_heads.slider.setValue(p.n_heads.choices().index(4)), lambda c: c.n_heads == 4),
    ("n_kv_heads", lambda p: p.n_kv_heads.slider.setValue(0), lambda c: c.kv_heads == 1 and c.mode == "MQA"),
    ("seq_len", lambda p: p.seq_len.spin.setValue(5), lambda c: c.seq_len == 5),
    ("batch", lambda p: p.batch_size.spin.setValue(3), lambda c: c.batch_size == 3),
    ("n_layers", lambda p: p.n_layers.slider.setValue(31), lambda c: c.n_layers == 32),
    ("dtype", lambda p: p.dtype.setCurrentText("bfloat16"), lambda c: c.dtype == "bfloat16"),
    ("causal", lambda p: p.causal.setChecked(False), lambda c: not c.causal),
    ("bias", lambda p: p.bias.setChecked(True), lambda c: c.bias),
    ("phase", lambda p: p.phase.setCurrentText("decode"), lambda c: c.phase == "decode"),
])
def test_each_control_updates_metrics_and_heatmaps_exactly(make_window, control, action, check):
    w = make_window()
    action(w.config_panel)
    cfg = w.config()
    assert check(cfg), control
    assert_metrics_match(w, cfg)
    assert_view_matches(w, cfg)
    assert w.last_timing.config == cfg


def test_heatmaps_equal_an_independent_recomputation(make_window):
    w = make_window(text="the cat sat on the mat")
    hm = w.last_heatmaps
    cfg = hm.config
    layer = AttentionLayer(cfg, seed=w.seed)
    with torch.no_grad():
        ref = layer.attention_probs(embed_tokens(hm.tokens, cfg.d_model, w.seed))[0].numpy()
    np.testing.assert_allclose(hm.probs, ref, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(hm.probs.sum(-1), 1.0, rtol=1e-5)
    assert np.all(np.triu(hm.probs, 1) == 0)  # causal
    # The same token gets the same embedding: both 'the' rows attend identically at position 0.
    assert w.mosaic.describe(0, 4, 0).endswith(f"{hm.probs[0, 4, 0]:.4f}")


def test_display_is_limited_to_256_tokens_and_says_so(make_window):
    w = make_window(config=SMALL.with_(seq_len=4096), text="word " * 300)
    assert len(w.last_heatmaps.tokens) == 256 and "showing 256 of 300 tokens" in w.info.text()
    w.config_panel.seq_len.spin.setValue(10)
    assert len(w.last_heatmaps.tokens) == 10 and "(seq_len)" in w.info.text()


def test_empty_text_gives_a_message_not_a_crash(make_window):
    w = make_window()
    w.text.setText("   ")
    assert "no tokens" in w.info.text() and "no tokens" in w.last_error
    w.text.setText("back again")
    assert w.last_heatmaps.tokens == ["back", "again"] and w.last_error == ""


def test_rapid_changes_end_on_the_last_config_without_stale_views(make_window, async_kind, qtbot):
    w = make_window(sync=False, kind=async_kind)
    shown = []
    w.runner.heatmaps_ready.connect(lambda r: shown.append((r.request_id, w.runner.latest_id)))
    panel = w.config_panel
    choices = panel.n_heads.choices()
    for i in range(100):
        panel.n_heads.slider.setValue(i % len(choices))
        panel.seq_len.spin.setValue(8 + i % 13)
    qtbot.waitUntil(lambda: not w.pacer.holding(), timeout=5000)  # a drag's newest step waits for its frame
    last = w.config()
    assert (last.n_heads, last.seq_len) == (choices[99 % len(choices)], 8 + 99 % 13)  # the controls' last values
    qtbot.waitUntil(lambda: w.runner.is_idle() and w.last_timing is not None and w.last_timing.config == last
                    and w.view_is_current(), timeout=30000)  # the last maps may wait for a frame's end (FramePacer)
    assert_view_matches(w, last)
    assert_metrics_match(w, last)
    # Every result the window accepted was the newest at the time; stale ones were dropped.
    assert w.last_heatmaps.request_id == w.runner.latest_id


def test_clicking_a_tile_opens_that_head(make_window):
    w = make_window()
    view = w.open_head(3)
    assert view is not None and view.head == 3
    np.testing.assert_array_equal(view.probs, w.last_heatmaps.probs[3])
    assert "KV group 0" in view.windowTitle()  # heads 0-3 share KV head 0 at group size 4
    view.close()


def test_timing_refused_by_the_memory_guard_is_shown_and_the_app_goes_on(make_window, monkeypatch):
    import core.device

    w = make_window()
    monkeypatch.setattr(core.device, "free_memory_bytes", lambda device: 1024)
    w.config_panel.seq_len.spin.setValue(33)
    assert "needs about" in w.timing.labels["state"].text() and "needs about" in w.statusBar().currentMessage()
    assert w.view_is_current()  # heatmaps still shown
    monkeypatch.undo()
    w.config_panel.seq_len.spin.setValue(34)
    assert w.last_timing.config.seq_len == 34


def test_out_of_memory_in_the_worker_is_reported_and_the_worker_serves_on(make_window, monkeypatch):
    import sandbox.jobs.compute

    w = make_window()

    def oom(*a, **k):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(sandbox.jobs.compute, "run_timing", oom)
    w.config_panel.seq_len.spin.setValue(40)
    assert "out of memory" in w.timing.labels["state"].text()
    monkeypatch.undo()
    w.config_panel.seq_len.spin.setValue(41)
    assert w.last_timing.config.seq_len == 41


def test_settings_restore_the_last_config_and_text(make_window, settings):
    w = make_window(config=None)
    target = AttentionConfig(d_model=128, n_heads=4, n_kv_heads=2, seq_len=32, n_layers=3)
    w.config_panel.set_config(target)
    w.text.setText("remember me")
    w.close()
    w2 = make_window(config=None)
    assert w2.config() == target and w2.text.text() == "remember me"


def test_a_damaged_saved_config_falls_back_to_the_default(make_window, settings):
    settings.setValue("version", 1)
    settings.setValue("config", '{"d_model": 100, "n_heads": 7}')
    w = make_window(config=None)
    assert w.config().d_model == 768


def test_closing_stops_the_worker_thread(make_window, async_kind, qtbot):
    from tests.app.conftest import runner_threads

    w = make_window(sync=False, kind=async_kind)
    qtbot.waitUntil(w.runner.is_idle, timeout=20000)
    pids = w.runner.worker_pids() if async_kind == "process" else []
    assert async_kind == "thread" or len(pids) >= 2  # the main worker and the timing worker
    w.close()
    assert runner_threads() == []
    assert all(not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
               for pid in pids), "a worker process outlived its window"


def test_editing_the_text_keeps_the_measurement_of_an_unchanged_configuration(make_window):
    w = make_window()
    first = w.last_timing
    assert first is not None and first.measures(w.config(), "auto")
    timings = []
    w.runner.timing_started.connect(timings.append)
    w.text.setText("a different text for the heatmaps")
    w.roles.toggle_probe()
    assert timings == []  # no new measurement: timing runs random inputs of the same shapes
    assert w.last_timing is first and w.timing.labels["state"].text().startswith("measured")
    pin = w.pins.pin_current()
    assert pin.report["timing"] == first.result.to_report()  # the pin has the kept measurement
    w.config_panel.seq_len.spin.setValue(w.config().seq_len + 1)  # a new shape is measured again
    assert len(timings) == 1 and w.last_timing is not first


def test_a_text_edit_during_a_measurement_shows_at_once_and_measures_again(make_window, async_kind, qtbot):
    w = make_window(sync=False, kind=async_kind, max_timing_s=0.0)  # live timings are skipped: only Measure now times
    qtbot.waitUntil(lambda: w.runner.is_idle() and w.last_heatmaps is not None, timeout=30000)
    started, ready = [], []
    w.runner.timing_started.connect(started.append)
    w.runner.timing_ready.connect(ready.append)
    w.timing_budget_s = 0.5
    w.request(force_timing=True)  # Measure now
    qtbot.waitUntil(lambda: bool(started), timeout=30000)
    w.text.setText("edited while measuring")
    # The new text's heatmaps do not wait for the measurement: it is interrupted...
    qtbot.waitUntil(lambda: w.last_heatmaps.tokens == ["edited", "while", "measuring"], timeout=30000)
    # ...and starts again, still as Measure now (a live timing would be skipped here).
    qtbot.waitUntil(lambda: w.runner.is_idle() and bool(ready), timeout=60000)
    QApplication.processEvents()
    assert len(started) == 2 and len(ready) == 1 and ready[0].request_id == started[1]
    assert w.last_timing is ready[0] and w.timing.labels["state"].text().startswith("measured")
