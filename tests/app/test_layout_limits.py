"""The 2026 layout's inputs at their limits: scales float32 cannot hold, KV formats, masks the guard must count,
windows from the CLI, huge values, the display's advice."""

from __future__ import annotations

import json

import pytest

from core.arch.config import AttentionConfig
from core.counts import timing_bytes
from core.kinds.standard.counts import mask_bytes
from core.report import build_report
from core.study.workspace import Pin, load_workspace, pin_report, save_workspace
from tests.cli.conftest import run_cli


@pytest.mark.parametrize("scale", [10**400, 10**309, 1e300, 1e-300, 5e-324, 0.0, float("inf"), True])
def test_a_softmax_scale_outside_what_float32_can_hold_is_one_sentence(scale):
    with pytest.raises(ValueError, match="softmax scale must be a positive number from"):
        AttentionConfig(d_model=64, n_heads=4, softmax_scale=scale)


def test_a_workspace_with_a_huge_scale_is_refused_in_a_sentence(tmp_path):
    cfg = AttentionConfig(d_model=64, n_heads=4, n_layers=1, seq_len=8, causal=True, softmax_scale=0.5)
    pin = Pin(name="A", config=cfg, report={}, text="", tokens=[], probs=None)
    pin.report = pin_report(pin, None)
    path = tmp_path / "w.json"
    save_workspace(path, [pin])
    text = path.read_text().replace('"softmax_scale": 0.5', '"softmax_scale": 1' + "0" * 400)
    path.write_text(text)
    with pytest.raises(ValueError, match="softmax scale"):
        load_workspace(path)


def test_an_architectures_kv_figures_use_its_kv_format():
    cfg = AttentionConfig(d_model=64, n_heads=2, n_layers=2, seq_len=10, kv_dtype="q4_0", causal=True, window=4,
                          layer_pattern="alternate")
    r = build_report(cfg, None, cfg.architecture(), None, 0)
    assert r["kv_cache"]["bytes_per_token_per_layer"] == 2 * 2 * 32 // 32 * 18 == 72
    assert {g["kv_bytes_per_token_per_layer"] for g in r["layers"]} == {72}
    assert r["kv_cache"] == build_report(cfg)["kv_cache"]


def test_the_guard_counts_a_t_by_t_mask_and_not_a_blockwise_ones():
    """W < T < 2W builds a T x T mask (about 8 bytes a pair with SDPA's float copy); T >= 2W none."""
    masked = AttentionConfig(d_model=64, n_heads=4, n_layers=1, causal=True, window=12000, layer_pattern="local",
                             seq_len=16384)
    assert mask_bytes(masked) >= 8 * 16384**2
    blockwise = masked.with_(window=16, sinks=True)
    assert mask_bytes(blockwise) < 16384**2 and timing_bytes(blockwise) < 2**28


def test_the_time_estimate_prices_the_full_causal_comparison(capsys):
    code, _, err = run_cli(capsys, "report", "--time", "--d-model", "64", "--heads", "4", "--layers", "1",
                           "--device", "cpu", "--window", "16", "--seq-len", "65536")
    assert code == 2 and "takes about" in err and "--force" in err


def test_window_sweeps_from_the_cli_turn_causal_on_and_give_a_pattern_its_window(capsys):
    code, out, _ = run_cli(capsys, "sweep", "--vary", "window=1,2,4", "--json")
    rows = json.loads(out)
    assert code == 0 and [r["status"] for r in rows] == ["ok"] * 3
    assert all(r["report"]["config"]["causal"] for r in rows)
    code, out, _ = run_cli(capsys, "sweep", "--vary", "window=1,2", "--layer-pattern", "alternate", "--json")
    rows = json.loads(out)
    assert code == 0 and [r["report"]["layout"]["n_local_layers"] for r in rows] == [6, 6]


def test_a_huge_value_is_not_echoed_in_full_and_a_dash_value_says_how(capsys):
    code, _, err = run_cli(capsys, "report", "--head-dim", "9" * 5000)
    assert code == 2 and len(err) < 400 and len(err.strip().splitlines()) == 1
    code, _, err = run_cli(capsys, "report", "--window", "8", "--layer-pattern", "-1:1")
    assert code == 2 and "--layer-pattern=-1:1" in err


def test_typing_global_turns_the_window_off(make_window):
    w = make_window()
    lc = w.config_panel.layout_controls
    lc.window.spin.setValue(8)
    lc.window_on.setChecked(True)
    lc.pattern.lineEdit().setText("global")
    lc.pattern.lineEdit().editingFinished.emit()
    cfg = w.config()
    assert not lc.window_on.isChecked() and cfg.window is None and cfg.layer_pattern == "global"


def test_the_display_says_to_lower_head_dim_when_it_is_the_width():
    from core.kinds.standard.display import DisplayProjector

    with pytest.raises(ValueError, match="lower d_model, the heads or head_dim"):
        DisplayProjector(AttentionConfig(d_model=64, n_heads=16, explicit_head_dim=2**20))
