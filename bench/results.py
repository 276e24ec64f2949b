"""Write bench/RESULTS.md from the runs bench/record.py kept in bench/out/: one section a benchmark, one row a run,
newest first, with its date, commit, label, the machine's load before it and its figures.

    python bench/results.py        (make bench runs it after the benchmarks)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
HEADER = ("# Benchmark results\n\nWritten by bench/results.py from the runs in bench/out/ (bench/record.py keeps each "
          "benchmark's --json output with its command, commit and date); do not edit by hand. The figures measured "
          "while the app was built, before this file was generated, are in bench/LOG.md.\n")


def figures(result: Any) -> dict[str, Any]:
    """A run's figures as flat columns: a dict's numbers as they are; a list of rows (first_window) as the median of
    each numeric column over its warm rows (the first is cold) and the cold row's."""
    if isinstance(result, dict):
        return {k: v for k, v in result.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    if isinstance(result, list) and result and all(isinstance(r, dict) for r in result):
        out: dict[str, Any] = {}
        keys = [k for k, v in result[0].items() if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "run"]
        for k in keys:
            warm = sorted(r[k] for r in result[1:] if isinstance(r.get(k), (int, float)))
            out[f"cold {k}"] = result[0][k]
            if warm:
                out[f"warm {k} (median of {len(warm)})"] = warm[len(warm) // 2]
        return out
    return {}


def cell(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def row_table(runs: list[dict[str, Any]]) -> str:
    """A benchmark whose result is {"rows": [...]} (one row a measurement): one table row per run and measurement."""
    columns = list(dict.fromkeys(k for r in runs for row in r["result"]["rows"] for k in row))
    head = ["date", "commit", "load before", *columns]
    out = ["| " + " | ".join(head) + " |\n|" + "---|" * len(head) + "\n"]
    for r in runs:
        for row in r["result"]["rows"]:
            cells = [r["date"], r["commit"], cell(r.get("load_before", "")), *(cell(row.get(c, "")) for c in columns)]
            out.append("| " + " | ".join(cells) + " |\n")
    return "".join(out)


def render(records: list[dict[str, Any]]) -> str:
    parts = [HEADER]
    for bench in sorted({r["bench"] for r in records}):
        runs = sorted((r for r in records if r["bench"] == bench), key=lambda r: (r["date"], r.get("file", "")),
                      reverse=True)
        if all(isinstance(r["result"], dict) and isinstance(r["result"].get("rows"), list) for r in runs):
            command = " ".join([f"python bench/{bench}.py", *runs[0]["args"], "--json"])
            parts.append(f"\n## {bench}\n\n`{command}` on {runs[0]['machine']}\n\n{row_table(runs)}")
            continue
        columns = list(dict.fromkeys(k for r in runs for k in figures(r["result"])))
        command = " ".join([f"python bench/{bench}.py", *runs[0]["args"], "--json"])
        parts.append(f"\n## {bench}\n\n`{command}` on {runs[0]['machine']}\n\n")
        head = ["date", "commit", "label", "load before", *columns]
        parts.append("| " + " | ".join(head) + " |\n|" + "---|" * len(head) + "\n")
        for r in runs:
            f = figures(r["result"])
            row = [r["date"], r["commit"], r.get("label", ""), cell(r.get("load_before", "")),
                   *(cell(f.get(c, "")) for c in columns)]
            parts.append("| " + " | ".join(row) + " |\n")
    return "".join(parts)


def main() -> int:
    records = [{**json.loads(p.read_text(encoding="utf-8")), "file": p.name} for p in sorted((HERE / "out").glob("*.json"))]
    (HERE / "RESULTS.md").write_text(render(records), encoding="utf-8")
    print(f"bench/RESULTS.md: {len(records)} runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
