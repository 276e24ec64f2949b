"""bench/RESULTS.md is written from bench/out/'s records, never by hand: every record becomes one row with its
figures, newest first, and a list of rows (first_window's) becomes its cold figure and the median of its warm ones."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def results_module():
    spec = importlib.util.spec_from_file_location("bench_results", ROOT / "bench" / "results.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_record_is_a_row_with_its_figures_newest_first():
    r = results_module()
    records = [
        {"bench": "live_latency", "args": [], "label": "before", "date": "2026-12-05 21:00", "commit": "a3d3a60",
         "load_before": 0.1, "machine": "x86_64, 2 cores", "result": {"p50_ms": 9.5, "p95_ms": 14.25, "note": "ok"}},
        {"bench": "live_latency", "args": [], "label": "after", "date": "2026-12-05 21:10", "commit": "b2dd8fd",
         "load_before": 0.05, "machine": "x86_64, 2 cores", "result": {"p50_ms": 9.0, "p95_ms": 15.0}},
        {"bench": "first_window", "args": [], "label": "", "date": "2026-12-05 21:20", "commit": "b2dd8fd",
         "load_before": 0.0, "machine": "x86_64, 2 cores",
         "result": [{"window_s": 1.5}, {"window_s": 0.7}, {"window_s": 0.9}, {"window_s": 0.8}]},
    ]
    text = r.render(records)
    lines = text.splitlines()
    live = lines.index("## live_latency")
    rows = [line for line in lines[live:] if line.startswith("| 2026")]
    assert rows[0].startswith("| 2026-12-05 21:10 | b2dd8fd | after | 0.05 | 9 | 15 |")
    assert rows[1].startswith("| 2026-12-05 21:00 | a3d3a60 | before | 0.1 | 9.5 | 14.25 |")
    assert "| date | commit | label | load before | p50_ms | p95_ms |" in text and "note" not in text
    first = lines.index("## first_window")
    assert "| cold window_s | warm window_s (median of 3) |" in lines[first + 4]
    assert lines[first + 6].endswith("| 1.5 | 0.8 |")
