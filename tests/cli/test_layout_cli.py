"""The CLI's layout flags: the report's layout and layer_kinds keys against the formula and the check
table, --window's defaults, sweeps of window and head_dim, and bad layouts in one line."""

from __future__ import annotations

import json

import pytest

from tests.cli.conftest import run_cli


def report(capsys, *argv):
    code, out, err = run_cli(capsys, "report", "--json", *argv)
    assert code == 0, err
    return json.loads(out)


def test_gpt_oss_20b_report_splits_its_layers(capsys):
    r = report(capsys, "--preset", "gpt-oss-20b", "--seq-len", "4096", "--dtype", "bfloat16")
    lay = r["layout"]
    assert (lay["n_local_layers"], lay["n_global_layers"], lay["window"], lay["sinks"], lay["biases"]) == (
        12, 12, 128, True, "all")
    per_token_layer = 2 * 8 * 64 * 2
    kinds = {k["kind"]: k for k in r["layer_kinds"]}
    assert kinds["global"]["kv_bytes_total"] == 12 * per_token_layer * 4096
    assert kinds["local W=128"]["kv_bytes_total"] == 12 * per_token_layer * 128
    assert r["kv_cache"]["bytes_total"] == sum(k["kv_bytes_total"] for k in r["layer_kinds"])
    assert r["params"]["sinks"] == 64 and "qk_norm" not in r["params"]
    assert r["params"]["o"] == 4096 * 2880 + 2880  # o bias
    assert sum(k["params"] for k in r["layer_kinds"]) == 24 * r["params"]["total"]


def test_window_alone_makes_every_layer_local_and_causal(capsys):
    """Mistral-7B-v0.1 by hand: the check table's Llama 3 8B / Mistral 7B row, 131,072 B a token, held to W."""
    r = report(capsys, "--d-model", "4096", "--heads", "32", "--kv-heads", "8", "--layers", "32", "--dtype",
               "float16", "--window", "4096", "--seq-len", "8192")
    assert r["config"]["causal"] is True and r["layout"]["layer_pattern"] == "local"
    assert r["kv_cache"]["bytes_per_token"] == 131072
    assert r["kv_cache"]["bytes_total"] == 131072 * 4096  # 512 MiB, not the 1 GiB of 8k global tokens
    code, _, err = run_cli(capsys, "report", "--window", "4096", "--no-causal")
    assert code == 2 and "needs a causal mask" in err and len(err.strip().splitlines()) == 1


def test_bias_spellings(capsys):
    base = ["--d-model", "3584", "--heads", "28", "--kv-heads", "4"]
    none, qkv, all_four = (report(capsys, *base, *flag)["params"]["total"] for flag in
                           (["--no-bias"], ["--bias", "qkv"], ["--bias"]))
    assert qkv - none == 3584 + 2 * 512 and all_four - qkv == 3584
    assert report(capsys, *base, "--bias", "qkv")["config"]["bias"] == "qkv"


def test_sweep_window_and_head_dim(capsys):
    code, out, _ = run_cli(capsys, "sweep", "--preset", "gemma-3-27b", "--seq-len", "8192", "--dtype", "bfloat16",
                           "--vary", "window=512,1024,8192", "--json")
    rows = json.loads(out)
    assert code == 0 and [r["value"] for r in rows] == [512, 1024, 8192]
    for r in rows:
        W = r["value"]
        assert r["report"]["kv_cache"]["bytes_total"] == 2 * 16 * 128 * 2 * (10 * 8192 + 52 * min(8192, W))
    code, out, _ = run_cli(capsys, "sweep", "--d-model", "1024", "--heads", "16", "--kv-heads", "8",
                           "--vary", "head_dim=64,128", "--json")
    rows = json.loads(out)
    assert [r["report"]["params"]["q"] for r in rows] == [1024 * 16 * 64, 1024 * 16 * 128]


@pytest.mark.parametrize("argv, says", [
    (["--window", "0"], "window must be a whole number of tokens from 1"),
    (["--window", str(2**20 + 1)], "from 1 to 1,048,576"),
    (["--window", "8", "--layer-pattern", "LG"], "lists 2 layers but the model has 12"),
    (["--window", "8", "--layer-pattern", ""], "names no layer"),
    (["--layer-pattern", "local"], "no window is set"),
    (["--head-dim", "48", "--kv-dtype", "q8_0"], "not a multiple of 32"),
    (["--kv-dtype", "int4"], "KV-cache dtype 'int4' is not known"),
    (["--bias", "o"], "bias 'o' is not known"),
    (["--head-dim", "0"], "head_dim must be a whole number from 1"),
])
def test_bad_layouts_exit_2_with_one_line(capsys, argv, says):
    code, _, err = run_cli(capsys, "report", *argv)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and says in lines[0] and lines[0].startswith("attention-sandbox: error: ")


def test_sweep_the_kv_format_against_the_check_table(capsys):
    """Llama 3 8B at 8k tokens: 1 GiB in fp16, half in fp8, 34/64 of it in q8_0, 18/64 in q4_0."""
    code, out, _ = run_cli(capsys, "sweep", "--preset", "llama-3-8b", "--seq-len", "8192", "--dtype", "float16",
                           "--vary", "kv_dtype=float16,fp8_e5m2,q8_0,q4_0", "--json")
    rows = json.loads(out)
    assert code == 0 and [r["report"]["kv_cache"]["bytes_total"] for r in rows] == [
        2**30, 2**29, 2**30 // 64 * 34, 2**30 // 64 * 18]
    code, _, err = run_cli(capsys, "sweep", "--vary", "kv_dtype=")
    assert code == 2 and "enter at least one kv_dtype" in err
