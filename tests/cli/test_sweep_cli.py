import csv
import io
import json

import pytest

from core.arch.config import AttentionConfig
from core.counts import flop_counts, kv_cache_bytes
from tests.cli.conftest import run_cli


def test_sweep_json_rows_with_valid_and_invalid_values(capsys):
    code, out, _ = run_cli(capsys, "sweep", "--preset", "llama-3-8b", "--seq-len", "512", "--vary",
                           "n_kv_heads=32,16,5,8", "--json")
    rows = json.loads(out)
    assert code == 0 and [r["status"] for r in rows] == ["ok", "ok", "skipped", "ok"]
    assert "does not divide n_heads" in rows[2]["reason"] and rows[2]["report"] is None
    cfg = AttentionConfig(d_model=4096, n_heads=32, n_kv_heads=8, n_layers=32, seq_len=512, causal=True)
    assert rows[3]["report"]["kv_cache"] == kv_cache_bytes(cfg).to_dict()
    assert rows[3]["report"]["flops"] == flop_counts(cfg).to_dict()


def test_sweep_csv_has_report_fields(capsys):
    code, out, _ = run_cli(capsys, "sweep", "--d-model", "64", "--heads", "4", "--vary", "seq_len=8,16",
                           "--time", "--csv", "--device", "cpu")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and [r["value"] for r in rows] == ["8", "16"]
    assert int(rows[1]["flops.attention"]) == 4 * 4 * 16 * 16 * 16 and float(rows[1]["timing.median_ms"]) > 0


@pytest.mark.parametrize("argv, words", [
    (["--vary", "seq_len="], "at least one value"),
    (["--vary", "seq_len=1..500"], "at most 64"),
    (["--vary", "dtype=1,2"], "cannot sweep"),
    (["--vary", "n_heads"], "KNOB=VALUES"),
    (["--heads", "4", "--kv-heads", "4", "--vary", "n_kv_heads=3,5"], "no value of n_kv_heads"),
])
def test_sweep_bad_input_exits_2(capsys, argv, words):
    code, out, err = run_cli(capsys, "sweep", *argv)
    assert code == 2 and words in err


def test_sweep_table_groups_digits(capsys):
    code, out, _ = run_cli(capsys, "sweep", "--preset", "llama-3-8b", "--vary", "seq_len=1024,2048")
    lines = out.splitlines()
    cfg = AttentionConfig(d_model=4096, n_heads=32, n_kv_heads=8, n_layers=32, seq_len=2048, causal=True)
    assert code == 0 and lines[2].split()[:5] == ["2,048", "ok", "41,943,040", f"{flop_counts(cfg).total:,}",
                                                   f"{kv_cache_bytes(cfg).bytes_total:,}"]
