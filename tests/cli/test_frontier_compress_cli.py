"""`attention-sandbox frontier --protocol compress` on SmolLM2: one JSON row per point with its method, ratio,
kept tokens, KV bytes (from the model's config) and loss equal to kvpress's recorded figure; budgets in MiB and in
sequences on a GPU (the planner's memory rule); the second run read from the cache; bad input one sentence."""

import json
from pathlib import Path

import pytest

from core.models.catalog import shipped_unavailable_reason
from core.plan.gpus import find_gpu
from sandbox.cli.main import main

pytestmark = pytest.mark.skipif(bool(shipped_unavailable_reason("smollm2-135m")), reason="SmolLM2 is not installed")
REFERENCE = json.loads((Path(__file__).parents[1] / "models" / "kvpress_smollm2.json").read_text())
PER_TOKEN = 30 * 2 * 3 * 64 * 2  # SmolLM2's config: 30 layers, 3 KV heads of 64, bf16 K and V


def test_json_rows_equal_kvpress_and_the_cache_answers_the_second_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    args = ["frontier", "--model", "smollm2-135m", "--protocol", "compress", "--methods", "streaming,knorm",
            "--ratios", "0.75", "--json"]
    assert main(args) == 0
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert data["protocol"] == "compress" and data["bytes_per_token"] == PER_TOKEN
    base, *rows = data["rows"]
    assert base["method"] == "baseline" and base["kv_bytes"] == 1024 * PER_TOKEN
    ref = {(r["method"], r["ratio"]): r["loss_change"] for r in REFERENCE["rows"][1:]}
    assert [r["method"] for r in rows] == ["streaming", "knorm"]
    for r in rows:
        assert r["ratio"] == 0.75 and r["kept_tokens"] == 256 and r["kv_bytes"] == 256 * PER_TOKEN
        assert r["loss_change"] == pytest.approx(ref[(r["method"], 0.75)], abs=2e-5)
    best = min(rows, key=lambda r: r["loss_change"])["method"]
    assert data["sentences"]["1/4"].startswith(f"At 1/4 of SmolLM2-135M's cache (5.62 MiB a sequence), "
                                               f"{'Knorm' if best == 'knorm' else 'StreamingLLM'} loses least")
    assert "from the cache" not in err
    assert main(args) == 0
    again, err = capsys.readouterr()
    assert json.loads(again)["rows"] == data["rows"] and "from the cache" in err


def test_sequences_on_a_gpu_share_its_memory_as_the_planner_counts(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert main(["frontier", "--model", "smollm2-135m", "--protocol", "compress", "--methods", "tova",
                 "--budget-gpu", "h100-sxm", "--sequences", "20000", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    gpu = find_gpu("h100-sxm")
    params = 134_515_008  # SmolLM2-135M's parameters (embeddings tied)
    want_mib = (gpu.memory_bytes * 0.9 - 2 * params) / 20000 / 2**20
    assert data["budget_mib"] == pytest.approx(want_mib)
    (row,) = data["rows"][1:]
    assert row["kept_tokens"] == int(want_mib * 2**20 // PER_TOKEN) and row["kv_bytes"] <= want_mib * 2**20
    assert "20,000 sequences on one" in data["sentences"]["budget"]


@pytest.mark.parametrize("args, words", [
    (["--ratios", "0.5"], "--ratios and the budgets are the compress protocol's; add --protocol compress"),
    (["--protocol", "compress", "--ratios", "1.5"], "--ratios takes fractions of the context to evict, each above 0"),
    (["--protocol", "compress", "--methods", "snapkv,pyramid"], "--methods takes a comma-separated list of streaming"),
    (["--protocol", "compress", "--budget-mib", "40"], "already fits in 40 MiB: nothing to evict"),
    (["--protocol", "compress", "--budget-mib", "0.001"], "holds no token of SmolLM2-135M's cache"),
    (["--protocol", "compress", "--budget-gpu", "h200"], "--budget-gpu needs --sequences"),
    (["--protocol", "compress", "--model", "minilm-l6"], "is an encoder: it keeps no KV cache to evict from"),
])
def test_bad_compress_input_is_one_sentence(tmp_path, monkeypatch, capsys, args, words):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    model = [] if "--model" in args else ["--model", "smollm2-135m"]
    with pytest.raises(SystemExit) as exc:
        main(["frontier", *model, *args])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert words in err and "Traceback" not in err
