"""The frontier's disk cache serves only whole, sound results; hostile figures never reach the output."""

import json
import math

import pytest
import torch

from core.models.frontier import cache as fc
from core.models.frontier.run import FrontierPoint, FrontierResult
from core.models.frontier.summary import budget_sentence
from core.models.kv.methods import KVMethod, ModelShape, default_sweep
from core.models.kv.quant import quant_dequant


def _result():
    base = FrontierPoint("baseline", None, 0, "m unchanged", 100.0, 1.0, loss=3.0, loss_change=0.0, js_mean=0.0,
                         output_rel_error=0.0)
    point = FrontierPoint("quant", "q4_0", 0, "quantised KV, q4_0", 28.1, 0.281, loss=3.1, loss_change=0.1,
                          js_mean=0.02, output_rel_error=0.2, seconds=1.0)
    return FrontierResult("m", "causal", 64, 1, 64, 64, base, [point], seconds=2.0)


def test_a_deeply_nested_cache_file_is_computed_again(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = tmp_path / "attention-sandbox" / "frontier" / "k.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"deep": ' + "[" * 100_000)  # RecursionError in json.loads
    assert fc.load("k") is None


@pytest.mark.parametrize("damage", [
    lambda d: d["points"][0].update(method="bogus"),
    lambda d: d["points"][0].update(js_mean=None),
    lambda d: d["points"][0].update(label=None),
    lambda d: d["points"][0].update(kv_bytes_per_token="abc"),
    lambda d: d["baseline"].update(kv_fraction=float("nan")),
    lambda d: d.update(complete=False),
    lambda d: d.update(points=[]),
    lambda d: d.pop("baseline"),
    lambda d: d["points"][0].update(loss=10**400),  # past a float's range: OverflowError in isfinite
    lambda d: d.update(seconds=None),
    lambda d: d.update(context="abc"),
    lambda d: d.update(samples=10**30),
    lambda d: d.update(kind="decoder"),
    lambda d: d["points"][0].update(sinks="abc"),
    lambda d: d["points"][0].update(setting=[1, 2]),
    lambda d: d["points"][0].update(label="window + 4 sinks, W=8"),  # a label its settings do not make
])
def test_a_damaged_cache_file_is_computed_again(tmp_path, monkeypatch, damage):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    fc.save("k", _result())
    assert fc.load("k") == _result()
    path = tmp_path / "attention-sandbox" / "frontier" / "k.json"
    data = json.loads(path.read_text())
    damage(data)
    path.write_text(json.dumps(data))
    assert fc.load("k") is None


def test_a_relative_cache_home_is_ignored(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")
    assert fc._path("k").is_absolute()


def test_non_finite_figures_become_null_and_never_win_a_budget():
    p = FrontierPoint("quant", "fp8_e4m3", 0, "q", float("inf"), 0.5, loss=1e6, loss_change=float("nan"), js_mean=0.1,
                      output_rel_error=0.1)
    out = p.to_json()
    assert out["kv_bytes_per_token"] is None and out["loss_change"] is None and out["perplexity"] is None
    json.dumps(out, allow_nan=False)
    rows = [{"method": "quant", "kv_fraction": 0.28, "cost": float("nan"), "setting_label": "q4_0"},
            {"method": "window", "kv_fraction": 0.25, "cost": 0.2, "setting_label": "W=256"},
            {"method": "baseline", "kv_fraction": 1.0, "cost": 0.0, "setting_label": ""}]
    text = budget_sentence(rows, 1.0, "causal", "m")
    assert "nan" not in text and text.startswith("At 1.00 of m's KV cache, window loses least: +0.200 loss")


def test_one_infinite_value_does_not_make_fp8_lose_the_rest():
    x = torch.randn(2, 64)
    x[0, 3] = float("inf")
    got = quant_dequant(x, "fp8_e4m3")
    assert torch.isfinite(got[1]).all() and torch.isfinite(got[0, :3]).all()
    assert quant_dequant(torch.empty(0, 64), "fp8_e4m3").shape == (0, 64)


def test_a_window_is_never_the_whole_sample():
    shape = ModelShape(2, 4, 2, 32, 128)
    windows = [m.setting for m in default_sweep(shape, 16, ("window",))]
    assert windows and all(w < 16 for w in windows)
    assert KVMethod("window_sinks", 12, 4) in default_sweep(shape, 32, ("window",))  # W - 4 recent + 4 sinks = 16
    assert math.isfinite(FrontierPoint("heads", 1, 0, "h", 1.0, 1.0).to_json()["kv_fraction"])


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_cache_entry_that_is_a_pipe_or_a_link_to_a_device_is_computed_again_at_once(tmp_path, monkeypatch, kind):
    """A FIFO hung the command; a link to /dev/zero was read until MemoryError."""
    import os

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = tmp_path / "attention-sandbox" / "frontier" / "k.json"
    path.parent.mkdir(parents=True)
    os.mkfifo(path) if kind == "fifo" else path.symlink_to("/dev/zero")
    assert fc.load("k") is None  # returns at once: nothing was read
