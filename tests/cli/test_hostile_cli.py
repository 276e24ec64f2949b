"""Hostile command lines: each exits 2 with one sentence that says what to change, at once."""

import json

import pytest

from tests.cli.conftest import run_cli


@pytest.mark.parametrize("argv, words", [
    (["report", "--d-model", "9223372036854775808"], "d_model must be at most 1,048,576, not 9223372036854775808"),
    (["report", "--d-model", "1000000000000000001", "--heads", "2"], "d_model must be at most 1,048,576"),
    (["report", "--d-model", "1" + "0" * 400, "--heads", "3"], "not a 401-digit number"),
    (["sweep", "--vary", "d_model=9223372036854775809"], "a swept value must be at most"),
    (["sweep", "--vary", "d_model=2097152"], "d_model must be at most 1,048,576"),
    (["sweep", "--vary", "seq_len=1.." + "1" + "0" * 400 + " log"], "a swept value must be at most"),
    (["sweep", "--vary", "seq_len=1..2 log 100000000"], "a log range takes 1 to 64 points, not 100000000"),
    (["sweep", "--vary", "seq_len=1..100000000000"], "is 100,000,000,000 points"),
    (["report", "--preset", ""], "preset"),
    (["heads", "--model", "minilm-l6", "--probe", "induction", "--seed", "-5"], "--seed must be from 0 to"),
    (["report", "--seq-len", "-3"], "seq_len must be at least 1"),
    # an MLA flag with --kv-heads and no --heads or --preset: a KeyError traceback once, for each command
    (["report", "--attention=mla", "--kv-heads=4"], "an MLA layer rebuilds one key and value per query head"),
    (["sweep", "--attention=mla", "--kv-heads=4", "--vary", "seq_len=8,16"], "an MLA layer rebuilds one key"),
    (["plan", "--attention=mla", "--kv-heads=4"], "an MLA layer rebuilds one key"),
    # a 401-digit value is named by its size, never echoed whole
    (["frontier", "--model", "minilm-l6", "--samples", "9" * 401], "not a 401-digit number"),
    (["longmap", "--tokens", "512", "--pixels", "9" * 401, "--out", "/tmp/never-made"], "not a 401-digit number"),
    (["longmap", "--tokens", "512", "--band", "9" * 401, "--out", "/tmp/never-made"], "not a 401-digit number"),
    (["longmap", "--tokens", "512", "--layer", "9" * 401, "--out", "/tmp/never-made"], "a 401-digit number"),
    (["decode", "--steps", "9" * 401], "not a 401-digit number"),
])
def test_hostile_values_exit_2_with_one_sentence(capsys, argv, words):
    code, out, err = run_cli(capsys, *argv)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("attention-sandbox: error: "), err
    assert words in lines[0] and "Traceback" not in err and "9" * 60 not in err


def test_a_sweep_with_no_valid_value_says_why_each_failed(capsys):
    code, _, err = run_cli(capsys, "sweep", "--heads", "4", "--kv-heads", "4", "--vary", "n_kv_heads=3,5")
    assert code == 2 and "no value of n_kv_heads made a valid configuration (3: n_kv_heads=3 does not divide" in err
    assert "5: n_kv_heads=5 does not divide" in err


def test_list_presets_as_json(capsys):
    code, out, _ = run_cli(capsys, "report", "--list-presets", "--json")
    presets = json.loads(out)
    llama = next(p for p in presets if p["key"] == "llama-3-8b")
    assert code == 0 and (llama["d_model"], llama["n_heads"], llama["n_kv_heads"], llama["n_layers"]) == (4096, 32, 8, 32)
    hybrid = next(p for p in presets if p["key"] == "qwen3-next-80b-a3b")  # a stack as a file keeps it
    from core.arch.stack import Stack

    assert Stack.from_dict(hybrid["stack"]).pattern == "DDDA" * 12 and hybrid["n_layers"] == 48


def test_inspect_out_that_cannot_be_written_is_one_sentence(capsys):
    pytest.importorskip("transformers")
    code, _, err = run_cli(capsys, "inspect", "--model", "minilm-l6", "--out", "/proc/self")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "could not write" in err and "Traceback" not in err
