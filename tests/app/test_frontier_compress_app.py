"""The Frontier tab's compress protocol on SmolLM2: the protocol switch keeps each protocol's chart apart, the points
sit at their kept tokens times the config's bytes a token, the sentence names the method kvpress's own losses say
loses least, the strip shows each layer and head's kept tokens, and a byte budget picks each method's setting."""

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from core.models.catalog import shipped_unavailable_reason

pytestmark = pytest.mark.skipif(bool(shipped_unavailable_reason("smollm2-135m")), reason="SmolLM2 is not installed")
REFERENCE = json.loads((Path(__file__).parents[1] / "models" / "kvpress_smollm2.json").read_text())
PER_TOKEN = 30 * 2 * 3 * 64 * 2  # SmolLM2's config: 30 layers, 3 KV heads of 64, bf16 K and V


def choose(panel, presses, families=()):
    panel.protocol.setCurrentIndex(panel.protocol.findData("compress"))
    for key, box in panel.compress.boxes.items():
        box.setChecked(key in presses)
    for key, box in panel.boxes.items():
        box.setChecked(key in families)


def test_compress_protocol_charts_presses_and_strips_their_kept_tokens(make_window, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    w = make_window()
    tab = w.frontier
    w.models.load("smollm2-135m")
    p = tab.panel
    choose(p, ("snapkv", "knorm"))
    assert p.compress.isVisibleTo(p) and p.views.isTabVisible(1) and p.views.tabText(1) == "Kept tokens"
    p.run.click()
    result = p.result
    assert result["complete"] and result["protocol"] == "compress" and len(result["points"]) == 8
    assert sorted(q["kv_bytes"] for q in p.chart.points) == sorted(
        [1024 * PER_TOKEN] + [k * PER_TOKEN for k in (768, 512, 256, 128)] * 2)
    assert p.chart.x_key == "kv_bytes" and "compress protocol" in p.chart.plot.getPlotItem().titleLabel.text
    ref = {(r["method"], r["ratio"]): r["loss_change"] for r in REFERENCE["rows"][1:]}
    p.budget.setValue(2)  # 1/4 of the cache
    best = min(("snapkv", "knorm"), key=lambda m: ref[(m, 0.75)])
    name = {"snapkv": "SnapKV", "knorm": "Knorm"}[best]
    assert p.sentence.text().startswith(f"At 1/4 of SmolLM2-135M's cache (5.62 MiB a sequence), {name} loses least: "
                                        f"{ref[(best, 0.75)]:+.3f} nats a token (256 tokens kept, 5.62 MiB).")

    snap = next(q for q in result["points"] if q["method"] == "snapkv" and q["setting"] == 0.75)
    p.chart.select(snap)
    p._on_point_clicked(snap)
    assert p.views.tabText(1) == "Kept tokens: SnapKV, 256 kept"
    kept = p.strip.kept
    assert kept.shape == (30, 3, 1024) and (kept.sum(-1) == 256).all() and kept[:, :, -64:].all()
    assert np.allclose(p.strip.share(), kept.reshape(90, 1024).mean(0))
    assert "256 of 1,024 a row" in p.strip.title.text()
    assert p.strip.text.toPlainText().startswith("Alice was beginning to get very tired")
    shaded = p.strip.text.toHtml()  # the last token (always kept: SnapKV's window) shaded full, as Qt writes it
    assert 'background-color:rgba(240,228,66,0.847059);"> was nothing else to do' in shaded  # 0.85 in 255ths

    csv_path, _manifest = tab.export(tmp_path / "compress.csv")
    rows = list(csv.DictReader(open(csv_path)))
    assert list(rows[0]) == ["method", "family", "label", "ratio", "kept_tokens", "kv_bytes", "kv_fraction", "loss",
                             "loss_change", "seconds"]
    assert json.loads(_manifest.read_text())["protocol"] == "compress"

    p.protocol.setCurrentIndex(p.protocol.findData("window"))  # the other protocol: its own (empty) chart
    assert p.result is None and p.chart.points == [] and not p.views.isTabVisible(1)
    p.protocol.setCurrentIndex(p.protocol.findData("compress"))
    assert p.result == result and len(p.chart.points) == 9


def test_a_byte_budget_keeps_what_it_holds_and_says_who_loses_least_there(make_window, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    w = make_window()
    tab = w.frontier
    w.models.load("smollm2-135m")
    p = tab.panel
    choose(p, ("streaming", "tova"), families=("window",))
    p.compress.mode.setCurrentIndex(p.compress.mode.findData("mib"))
    p.compress.mib.setValue(5.0)
    p.run.click()
    result = p.result
    kept = 5 * 2**20 // PER_TOKEN  # 227 tokens
    evict = [q for q in result["points"] if q["family"] == "evict"]
    assert [q["kept_tokens"] for q in evict] == [kept, kept]
    layer = [(q["method"], q["setting"]) for q in result["points"] if q["family"] == "layer"]
    assert layer == [("window", 128), ("window_sinks", 124)]  # the largest windows within 5 MiB
    best = min(result["points"], key=lambda q: q["loss_change"])
    assert p.sentence.text().startswith("At 5.00 MiB a sequence, ")
    assert f"loses least: {best['loss_change']:+.3f} nats" in p.sentence.text()
    assert not p.budget.isEnabled() and p.budget_label.text() == "5.00 MiB a sequence"
    # a run's first step already carries its budget: the sentence is the budget's while the points come in
    from sandbox.jobs.types import FrontierProgress

    p.protocol.setCurrentIndex(p.protocol.findData("window"))
    first = {**result["baseline"], "protocol": "compress", "budget_mib": 5.0, "budget_words": "5.00 MiB a sequence"}
    tab._on_progress(FrontierProgress(tab.newest, 1, 5, 1.0, "", first))
    assert p.shown_protocol() == "compress" and p.budget_label.text() == "5.00 MiB a sequence"
    assert "5.00 MiB a sequence" in p.sentence.text()


def test_an_encoder_is_refused_the_compress_protocol_in_a_sentence(make_window):
    w = make_window()
    w.models.load("minilm-l6")
    p = w.frontier.panel
    choose(p, ("snapkv",))
    p.run.click()
    assert "is an encoder: it keeps no KV cache to evict from" in p.status.text() and not p.running


def test_an_eviction_point_opens_in_heatmaps_with_each_head_s_evicted_keys_grey(make_window, tmp_path, monkeypatch):
    from core.models.evict.ratio import n_kept
    from resources import EVAL_TEXT

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    text = " ".join(EVAL_TEXT.read_text(encoding="utf-8").split()[:120])  # about 150 tokens: past SnapKV's window
    w = make_window(text=text)
    tab = w.frontier
    w.models.load("smollm2-135m")
    p = tab.panel
    choose(p, ("streaming", "snapkv"))
    p.run.click()
    for method, ratio in (("streaming", 0.75), ("snapkv", 0.25)):
        point = next(q for q in p.result["points"] if q["method"] == method and q["setting"] == ratio)
        assert tab.open_point(point)
        hm = w.last_heatmaps
        sel, view = hm.selection, hm.model
        T = len(hm.tokens)
        assert view.fidelity["kv_method"] == f"{'StreamingLLM' if method == 'streaming' else 'SnapKV'} evicting " \
                                             f"{ratio:g} of the text"
        keep = view.kept[0]  # (K, T): the layer's kept keys, a KV head a row
        assert keep.shape == (3, T) and (keep.sum(-1) == n_kept(T, ratio)).all()
        if method == "streaming":  # the first 4 and the most recent, in every head
            want = np.zeros(T, dtype=bool)
            want[:4] = want[T - (n_kept(T, 0.75) - 4):] = True
            assert (keep == want).all(), (T, np.nonzero(keep[0])[0].tolist())
        else:
            assert keep[:, T - 64:].all()  # SnapKV's observation window
        # each query reads its head's kept keys and itself: the trained maps renormalised over them
        read = np.repeat(keep, 3, axis=0)[:, None, :] | np.eye(T, dtype=bool)[None]  # (H, T, T)
        read &= np.tril(np.ones((T, T), dtype=bool))[None]
        want = np.where(read, view.before, 0.0)
        want /= want.sum(-1, keepdims=True)
        assert np.allclose(hm.probs, want, atol=2e-5)
        assert (sel.skipped() == (np.tril(np.ones((T, T), dtype=bool))[None] & ~read)).all()
    snap = next(q for q in p.result["points"] if q["method"] == "snapkv" and q["setting"] == 0.875)
    tab.open_point(snap)  # 150 tokens at 0.875 keep 18, fewer than SnapKV's window: said, not drawn as ties fall
    said = w.statusBar().currentMessage()
    assert "The eviction point is not shown: " in said and "SnapKV always keeps 64 tokens, but ratio 0.875 of" in said
    assert w.models.kv_method is None and w.models.picker.kv_point.isHidden()  # cleared, not left
    assert w.last_heatmaps.selection is None  # the maps as trained again
