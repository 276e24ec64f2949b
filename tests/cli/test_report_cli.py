import json
import subprocess
import sys

import pytest

from core.arch.config import AttentionConfig
from core.arch.presets import load_presets
from core.counts import flop_counts, kv_cache_bytes, param_counts
from tests.cli.conftest import run_cli


def test_report_json_keys_and_values(capsys):
    code, out, _ = run_cli(capsys, "report", "--d-model", "4096", "--heads", "32", "--kv-heads", "8",
                           "--seq-len", "2048", "--batch", "1", "--layers", "32", "--dtype", "float16", "--json")
    assert code == 0
    r = json.loads(out)
    assert set(r) == {"config", "params", "flops", "kv_cache", "timing"}
    assert set(r["config"]) == {"d_model", "n_heads", "n_kv_heads", "head_dim", "group_size", "mode", "seq_len",
                                "batch_size", "n_layers", "dtype", "causal", "bias", "phase"}
    assert r["config"]["mode"] == "GQA" and r["config"]["group_size"] == 4 and r["config"]["head_dim"] == 128
    assert r["params"] == {"q": 16777216, "k": 4194304, "v": 4194304, "o": 16777216,
                           "total": 41943040, "total_mha": 67108864}
    assert r["kv_cache"]["bytes_per_token"] == 131072  # the check table's Llama 3 8B row
    assert r["kv_cache"]["bytes_total"] == 131072 * 2048 and r["kv_cache"]["ratio_vs_mha"] == 0.25
    assert r["flops"]["attention"] == 4 * 32 * 2048 * 2048 * 128
    assert r["timing"] is None


def test_kv_heads_default_to_heads_and_dtype_to_the_device(capsys):
    code, out, _ = run_cli(capsys, "report", "--d-model", "512", "--heads", "16", "--json")
    r = json.loads(out)
    assert r["config"]["n_kv_heads"] == 16 and r["config"]["mode"] == "MHA" and r["config"]["dtype"] == "float32"


@pytest.mark.parametrize("preset", load_presets(), ids=lambda p: p.key)
def test_every_preset_reports_its_counts(capsys, preset):
    code, out, _ = run_cli(capsys, "report", "--preset", preset.key, "--seq-len", "100", "--json")
    assert code == 0
    r = json.loads(out)
    cfg = AttentionConfig(**preset.fields, seq_len=100)
    assert r["params"] == param_counts(cfg).to_dict()
    assert r["flops"] == flop_counts(cfg).to_dict()
    kv = kv_cache_bytes(cfg).to_dict()
    assert {k: v for k, v in r["kv_cache"].items() if k in kv} == kv
    extra = set(r["kv_cache"]) - set(kv)  # an MLA or DSA preset's latent beside its decompressed cache, no other key
    latent = cfg.widths is not None and cfg.widths.kind in ("mla", "dsa")
    assert extra == (set() if not latent else {"bytes_per_token_per_layer_latent",
                                               "bytes_per_token_per_layer_decompressed", "bytes_total_decompressed"})


def test_explicit_flags_override_the_preset(capsys):
    _, out, _ = run_cli(capsys, "report", "--preset", "Llama 3 8B", "--kv-heads", "1", "--no-causal", "--json")
    r = json.loads(out)
    assert r["config"]["d_model"] == 4096 and r["config"]["n_kv_heads"] == 1 and r["config"]["mode"] == "MQA"


def test_seeds_and_models_presets_exist(capsys):
    code, out, _ = run_cli(capsys, "report", "--list-presets")
    for key in ("gpt-2-small", "small-about-125m", "base-about-350m", "large-about-1b", "frontier-about-70b", "llama-3-8b",
                "llama-3-70b", "mistral-7b", "gpt-3-175b", "smollm2-135m", "all-minilm-l6-v2"):
        assert key in out


def test_table_shows_the_numbers(capsys):
    from torch import nn

    code, out, _ = run_cli(capsys, "report", "--preset", "gpt-2-small", "--seq-len", "8192", "--dtype", "float16")
    gpt2 = sum(p.numel() for p in nn.MultiheadAttention(768, 12, bias=True).parameters())  # GPT-2 has biases
    assert code == 0 and "36,864" in out and "288 MiB" in out and f"{gpt2:,}" in out and gpt2 == 2_362_368


def test_time_adds_a_timing_object(capsys):
    code, out, _ = run_cli(capsys, "report", "--d-model", "64", "--heads", "4", "--seq-len", "32",
                           "--time", "--json", "--device", "cpu")
    t = json.loads(out)["timing"]
    assert t["device"] == "cpu" and t["median_ms"] > 0 and t["reps"] >= 5
    assert t["tflops"] == pytest.approx(json.loads(out)["flops"]["total"] / (t["median_ms"] * 1e-3) / 1e12)


BAD = [
    (["--heads", "7"], "does not divide d_model"),
    (["--kv-heads", "5"], "does not divide n_heads"),
    (["--d-model", "0"], "at least 1"),
    (["--seq-len", "-1"], "at least 1"),
    (["--batch", "x"], "invalid int value"),
    (["--dtype", "int8"], "invalid choice"),
    (["--phase", "train"], "invalid choice"),
    (["--preset", "nope"], "unknown preset"),
    (["--device", "cuda"], "no CUDA GPU"),
    (["--d-model", "16384", "--heads", "128", "--seq-len", "131072", "--time"], "needs about"),
    (["--frobnicate"], "unrecognized arguments"),
]


@pytest.mark.parametrize("argv, words", BAD, ids=lambda x: " ".join(x) if isinstance(x, list) else x)
def test_bad_input_exits_2_with_one_line(capsys, argv, words):
    import torch

    if "cuda" in argv and torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    code, out, err = run_cli(capsys, "report", *argv)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and lines[0].startswith("attention-sandbox: error:")


def test_bad_input_in_a_real_process_has_no_traceback():
    proc = subprocess.run([sys.executable, "-m", "sandbox", "report", "--heads", "5"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "does not divide d_model" in proc.stderr


def test_the_app_without_a_display_says_what_to_do(monkeypatch, capsys):
    import sys as _sys

    from sandbox.window.app import run_app

    if not _sys.platform.startswith("linux"):
        pytest.skip("the check is for Linux")
    for var in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(var, raising=False)
    assert run_app() == 2
    assert "no display found" in capsys.readouterr().err
