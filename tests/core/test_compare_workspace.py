import json

import numpy as np
import pytest

from core.arch.config import AttentionConfig
from core.report import build_report
from core.study.compare import as_csv, as_markdown, attention_diff, comparison
from core.study.workspace import SCHEMA, Pin, load_workspace, migrate, next_pin_name, save_workspace

MHA = AttentionConfig(d_model=4096, n_heads=32, seq_len=2048, n_layers=32)
GQA = MHA.with_(n_kv_heads=8)
TIMING = {"median_ms": 10.0, "core_median_ms": 4.0, "prefill_ms": 10.0, "decode_ms": 1.0, "tflops": 2.0}
# Every field a measurement carries (TimingResult.to_report()), as a saved workspace holds it.
FULL_TIMING = {"device": "cpu", "device_name": "CPU (2 threads)", "backend": "flash", "dtype": "float32",
               "median_ms": 0.123456789, "p25_ms": 0.12, "p75_ms": 0.13, "tflops": 1e-3, "reps": 9,
               "core_median_ms": 0.05, "core_p25_ms": 0.04, "core_p75_ms": 0.06, "core_tflops": 2e-3,
               "fused_qkv_ms": 0.01, "separate_qkv_ms": None, "prefill_ms": 0.123456789, "decode_ms": 0.02}


def test_comparison_against_a_baseline_matches_the_seeds_example():
    reports = [build_report(MHA, TIMING), build_report(GQA, {**TIMING, "prefill_ms": 9.7, "decode_ms": 0.3})]
    rows = {r.label: r for r in comparison(reports, baseline=0)}
    assert rows["KV cache, B x T x L"].cells[1].relation == "x0.25"
    assert rows["parameters / layer"].cells[1].relation == "-37.5%"
    assert rows["prefill time"].cells[1].relation == "x0.97"
    assert rows["decode time"].cells[1].relation == "x0.3" and rows["decode time"].cells[1].better is True
    assert rows["FLOPs attention core"].cells[1].relation == "="
    assert rows["parameters / layer"].cells[0].relation == ""  # the baseline itself
    # Better/worse flips with the baseline.
    rows_b = {r.label: r for r in comparison(reports, baseline=1)}
    assert rows_b["KV cache, B x T x L"].cells[0].relation == "x4" and rows_b["KV cache, B x T x L"].cells[0].better is False


def test_table_exports():
    reports = [build_report(MHA), build_report(GQA)]
    rows = comparison(reports, 0)
    csv_text = as_csv(["A", "B"], rows)
    assert csv_text.splitlines()[0] == "metric,A,B" and "x0.25" in csv_text
    md = as_markdown(["A", "B"], rows, 0)
    assert md.startswith("| metric | A (baseline) | B |") and "|---|---|---|" in md


def test_diff_with_itself_is_zero_and_mismatches_are_explained_or_refused():
    rng = np.random.default_rng(0)
    a = rng.random((8, 5, 5), dtype=np.float32)
    d, note = attention_diff(a, list("abcde"), a, list("abcde"))
    assert np.all(d == 0) and note == "A minus B, head by head (8 heads)."
    assert attention_diff(a[:1], list("abcde"), a[:1], list("abcde"))[1] == "A minus B, head by head (1 head)."
    d, note = attention_diff(a, list("abcde"), a[:4], list("abcde"))
    assert d.shape == (4, 5, 5) and "matched by index" in note and "last 4 heads of A" in note
    with pytest.raises(ValueError, match="different tokens"):
        attention_diff(a, list("abcde"), a, list("abcdf"))


def _pin(name, cfg, timing=None, tokens=("x", "y")):
    probs = np.random.default_rng(1).random((cfg.n_heads, len(tokens), len(tokens)), dtype=np.float32)
    return Pin(name, cfg, build_report(cfg, timing), "x y", list(tokens), probs, seed=3, device="cpu")


def test_workspace_round_trip_keeps_exact_numbers(tmp_path):
    small = AttentionConfig(d_model=64, n_heads=8, n_kv_heads=2)
    pins = [_pin("A", small, FULL_TIMING), _pin("B", small.with_(n_kv_heads=8))]
    path = tmp_path / "w.json"
    save_workspace(path, pins)
    back = load_workspace(path)
    assert [p.name for p in back] == ["A", "B"]
    for p, q in zip(pins, back, strict=True):
        assert q.config == p.config and q.report == p.report and q.tokens == p.tokens and q.seed == 3
        np.testing.assert_array_equal(q.probs, p.probs)


@pytest.mark.parametrize("content, words", [
    ("not json {", "not JSON"),
    ('{"hello": 1}', "not an Attention Sandbox workspace"),
    ('[1, 2]', "not an Attention Sandbox workspace"),
    ('{"app": "attention-sandbox", "schema": 99, "pins": []}', "newer Attention Sandbox"),
    ('{"app": "attention-sandbox", "schema": 1, "pins": [{"name": "A"}]}', "damaged: pin 1"),
])
def test_bad_workspace_files_are_refused(tmp_path, content, words):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=words):
        load_workspace(path)


def test_edited_numbers_are_refused(tmp_path):
    path = tmp_path / "w.json"
    save_workspace(path, [_pin("A", AttentionConfig(d_model=64, n_heads=4))])
    data = json.loads(path.read_text())
    data["pins"][0]["report"]["params"]["total"] += 1
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="do not match"):
        load_workspace(path)


def test_schema_0_is_migrated(tmp_path):
    cfg = AttentionConfig(d_model=64, n_heads=4)
    old = {"version": 0, "pins": [{"name": "old", "config": cfg.to_dict(), "report": build_report(cfg)}]}
    assert migrate(old)["schema"] == SCHEMA
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    (pin,) = load_workspace(path)
    assert pin.name == "old" and pin.seed == 0 and pin.probs is None


def test_save_is_atomic_when_interrupted(tmp_path, monkeypatch):
    import os

    path = tmp_path / "w.json"
    save_workspace(path, [_pin("A", AttentionConfig(d_model=64, n_heads=4))])
    before = path.read_bytes()

    def boom(*a, **k):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "replace", boom)
    from core.files.atomic import ExportError

    with pytest.raises(ExportError):
        save_workspace(path, [])
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["w.json"]


def test_pin_names():
    assert next_pin_name([]) == "A" and next_pin_name(["A", "B"]) == "C"
    assert next_pin_name([chr(65 + i) for i in range(26)]) == "A2"


def test_schema_1_is_migrated_to_random_weights_read_as_text(tmp_path):
    cfg = AttentionConfig(d_model=64, n_heads=4, n_kv_heads=2)
    old = {"app": "attention-sandbox", "schema": 1,
           "pins": [{"name": "A", "config": cfg.to_dict(), "report": build_report(cfg, FULL_TIMING), "text": "x y",
                     "tokens": ["x", "y"], "seed": 0, "device": "cpu", "probs": None}]}
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(old))
    (pin,) = load_workspace(path)
    assert (pin.arch, pin.model, pin.probe) == (None, None, "text") and pin.report["timing"] == FULL_TIMING
    assert migrate(old)["schema"] == SCHEMA == 2


def test_a_workspace_that_would_inflate_in_memory_or_is_too_big_is_refused_before_parsing(tmp_path, monkeypatch):
    """150 MB of empty pins took 3.7 GB and 31 s to refuse; a 3 GB file was read to 2 GiB before being refused."""
    import core.study.workspace as ws

    path = tmp_path / "empty-pins.json"
    n = ws.MAX_CONTAINERS + 1
    path.write_bytes(b'{"app": "attention-sandbox", "schema": 2, "pins": [' + b"{}," * (n - 1) + b"{}]}")
    parsed = []
    monkeypatch.setattr(ws.json, "loads", lambda *a, **k: parsed.append(1))
    with pytest.raises(ValueError, match=r"JSON objects and lists; a workspace holds at most 1,000,000"):
        load_workspace(path)
    assert parsed == []  # counted in C, never parsed
    monkeypatch.undo()
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(ws.MAX_FILE_BYTES + 1)  # holes: nothing on the disk
    read = []
    real_open = open
    monkeypatch.setattr("builtins.open", lambda *a, **k: (read.append(a[0]), real_open(*a, **k))[1])
    with pytest.raises(ValueError, match="larger than a workspace may be .* it was not read"):
        load_workspace(big)
    assert str(big) not in map(str, read)  # refused by its size, before any read
