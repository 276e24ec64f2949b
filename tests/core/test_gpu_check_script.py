"""bench/gpu_check.py is run by hand on a lent GPU, where a crash costs device time: its --smoke form runs the same
logic small on the CPU, here. (Its layouts check asked the display path for 512 tokens on the GPU, refused since the
display cap of 256; the smoke form's 96 never met the cap. The check now asks for the cap itself.)"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_gpu_check_runs_whole_on_the_cpu_and_its_checks_agree():
    out = subprocess.run([sys.executable, "bench/gpu_check.py", "--smoke"], capture_output=True, text=True,
                         cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.strip().splitlines()
    result = json.loads(lines[-1])
    assert result["device"] == "cpu" and result["display_ok"] is True
    layouts = [line for line in lines if line.startswith("layout ")]
    assert len(layouts) == 3 and all(" OK " in line for line in layouts), layouts  # display == timed, each layout
    assert any(line.startswith("mla naive==absorbed") and " OK;" in line for line in lines)
    assert any(line.startswith("long map == pooled") and " OK;" in line for line in lines)
    assert 0 < result["windowed"]["flop_ratio"] < 1  # the band is a share of the full causal core's FLOPs
