"""The CLI's MLA flags: the report's MLA keys against the check values and the formulas written out, the flags
over a preset, sweeps of kv_lora_rank and of attention (MLA against its equal-KV GQA partner), bad widths in one
line."""

from __future__ import annotations

import json

import pytest

from tests.cli.conftest import run_cli


def report(capsys, *argv):
    code, out, err = run_cli(capsys, "report", "--json", *argv)
    assert code == 0, err
    return json.loads(out)


def test_deepseek_v3_by_flags_equals_its_preset_and_the_check_values(capsys):
    flags = report(capsys, "--attention", "mla", "--d-model", "7168", "--heads", "128", "--kv-lora-rank", "512",
                   "--q-lora-rank", "1536", "--qk-nope-dim", "128", "--qk-rope-dim", "64", "--v-head-dim", "128",
                   "--layers", "61", "--dtype", "bfloat16", "--causal")
    preset = report(capsys, "--preset", "deepseek-v3", "--dtype", "bfloat16")
    assert flags == preset
    assert preset["params"]["total"] == 187_107_328
    kv = preset["kv_cache"]
    assert kv["bytes_per_token_per_layer"] == kv["bytes_per_token_per_layer_latent"] == 1152
    assert kv["bytes_per_token_per_layer_decompressed"] == 128 * (192 + 128) * 2 == 81920
    assert kv["bytes_per_token"] == 1152 * 61 and kv["bytes_total"] == 1152 * 61 * 1024
    m = preset["mla"]
    assert m["equivalent_gqa_heads"] == 2.25 and m["flops_form"] == "naive"
    # the naive decode core by hand: 2 H (n + r + v) FLOPs a key, 1024 keys
    assert m["forms"]["naive"]["decode_core_flops"] == 2 * 128 * (192 + 128) * 1024
    assert m["forms"]["absorbed"]["decode_core_flops"] == 2 * 128 * (2 * 512 + 64) * 1024
    assert preset["config"]["attention"] == "mla" and preset["config"]["mode"] == "MLA"


def test_widths_over_a_preset_and_a_plain_q_proj(capsys):
    r = report(capsys, "--preset", "deepseek-v3", "--q-lora-rank", "0")
    assert "q_a" not in r["params"] and r["params"]["q"] == 7168 * 128 * 192
    r = report(capsys, "--preset", "llama-3-8b", "--kv-lora-rank", "256")  # a width alone implies MLA
    assert r["config"]["mode"] == "MLA" and r["mla"]["kv_lora_rank"] == 256 and r["mla"]["q_lora_rank"] == 1536
    r = report(capsys, "--preset", "deepseek-v3", "--attention", "standard")
    assert r["config"]["mode"] == "MHA" and "mla" not in r


@pytest.mark.parametrize(("argv", "words"), [
    (["--attention", "mla", "--qk-rope-dim", "63"], "must be even"),
    (["--attention", "mla", "--kv-lora-rank", "0"], "kv_lora_rank (--kv-lora-rank) must be a whole number from 1"),
    (["--preset", "deepseek-v3", "--kv-heads", "8"], "drop --kv-heads"),
    (["--attention", "standard", "--v-head-dim", "64"], "--v-head-dim sets a width of MLA layers"),
    (["--preset", "deepseek-v3", "--window", "128"], "turn off the sliding window"),
])
def test_bad_mla_input_is_one_sentence(capsys, argv, words):
    code, out, err = run_cli(capsys, "report", *argv)
    assert code == 2 and out == "" and words in err and len(err.strip().splitlines()) == 1


def test_a_rank_above_d_model_is_allowed_and_warned(capsys):
    code, out, err = run_cli(capsys, "report", "--preset", "deepseek-v3", "--kv-lora-rank", "8192")
    assert code == 0 and "kv_lora_rank 8192 is not below d_model 7168" in err and "warning" in err


def test_sweeps_of_kv_lora_rank_and_of_attention(capsys):
    code, out, err = run_cli(capsys, "sweep", "--preset", "deepseek-v3", "--dtype", "bfloat16", "--vary",
                             "kv_lora_rank=128,512", "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert [r["report"]["kv_cache"]["bytes_per_token_per_layer"] for r in rows] == [(128 + 64) * 2, (512 + 64) * 2]
    code, out, err = run_cli(capsys, "sweep", "--preset", "deepseek-v3", "--dtype", "bfloat16", "--vary",
                             "attention=mla,gqa", "--json")
    rows = {r["value"]: r["report"] for r in json.loads(out)}
    gqa = rows["gqa"]
    assert gqa["config"]["mode"] == "GQA" and gqa["config"]["n_kv_heads"] == 2 and gqa["config"]["head_dim"] == 128
    assert gqa["kv_cache"]["bytes_per_token_per_layer"] == 2 * 2 * 128 * 2  # 1,024 B against the latent's 1,152
    code, out, err = run_cli(capsys, "sweep", "--preset", "llama-3-8b", "--vary", "attention=mla,gqa")
    assert code == 2 and "choose attention MLA" in err
