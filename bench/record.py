"""Run one benchmark with --json and keep what it printed in bench/out/, with the command, the commit, the date and
the machine's load, so that bench/results.py can write bench/RESULTS.md from it (no figure is copied by hand).

    python bench/record.py live_latency.py [its args...] [--label before] [--root OTHER_CHECKOUT]

--root runs another checkout's copy of the benchmark on its own code (PYTHONPATH), for a before/after pair in one
sitting; the record names that checkout's commit.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def git(root: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    return out.stdout.strip()


def printed_json(stdout: str) -> object:
    """What the benchmark printed with --json: its whole output, or its last line when progress lines come first."""
    try:
        return json.loads(stdout)
    except json.JSONDecodeError:
        return json.loads(stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> int:
    label, root = "", ROOT
    if "--label" in argv:
        i = argv.index("--label")
        label, argv = argv[i + 1], argv[:i] + argv[i + 2:]
    if "--root" in argv:
        i = argv.index("--root")
        root, argv = Path(argv[i + 1]).resolve(), argv[:i] + argv[i + 2:]
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    script, args = argv[0], argv[1:]
    command = [sys.executable, str(root / "bench" / script), *args, "--json"]
    load = os.getloadavg()[0]
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    env = {**os.environ, "PYTHONPATH": str(root)}
    run = subprocess.run(command, cwd=root, capture_output=True, text=True, env=env)
    if run.returncode:
        sys.stderr.write(run.stderr)
        return run.returncode
    record = {"bench": Path(script).stem, "args": args, "label": label, "date": started,
              "commit": git(root, "rev-parse", "--short", "HEAD"), "load_before": round(load, 2),
              "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}",
              "result": printed_json(run.stdout)}
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    name = f"{record['bench']}-{time.strftime('%Y%m%d-%H%M%S')}{'-' + label if label else ''}.json"
    (out / name).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(out / name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
