"""The CPU's other load: /proc parsed, other processes' cores counted, the timing's thread count sized to the idle
cores (a second process keeping a core busy makes a CPU timing run on one thread and say so)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from core.arch.config import AttentionConfig
from core.timing import cpu_load
from core.timing.cpu_load import (
    CpuTimes,
    other_cores,
    parse_proc_stat,
    parse_self_stat,
    procs_running,
    timing_threads,
)
from core.timing.layer import run_timing

STAT = """cpu  300 0 100 800 0 0 0 0 0 0
cpu0 150 0 50 400 0 0 0 0 0 0
cpu1 150 0 50 400 0 0 0 0 0 0
intr 12345
procs_running 3
procs_blocked 0
"""


def test_proc_stat_and_self_stat_are_read_field_by_field():
    assert parse_proc_stat(STAT) == ((200, 400), (200, 400))
    assert procs_running(STAT) == 3
    # a process name with spaces and parentheses: fields count from the last ')'
    own = "4242 (py (thon) x) S 1 2 3 4 5 6 7 8 9 10 70 30 0 0 20 0 1 0"
    assert parse_self_stat(own) == 100


def test_other_cores_subtracts_our_own_time():
    a = CpuTimes(((100, 100), (100, 100)), own=10, at=0.0)
    b = CpuTimes(((190, 110), (160, 140)), own=60, at=1.0)  # 150 busy ticks of 200, 50 of them ours
    assert other_cores(a, b) == pytest.approx((150 - 50) / 200 * 2)
    assert other_cores(a, a) == 0.0


def test_the_thread_count_is_the_cores_no_other_runnable_thread_holds(tmp_path, monkeypatch):
    import os

    own = tmp_path / "self"
    own.write_text("1 (python) S " + " ".join(["0"] * 20))
    stat = tmp_path / "stat"
    stat.write_text(STAT)
    proc = tmp_path / "proc"
    monkeypatch.setattr(cpu_load, "SELF_STAT", own)
    monkeypatch.setattr(cpu_load, "PROC_STAT", stat)
    monkeypatch.setattr(cpu_load, "PROC", proc)

    def task(pid: int, tid: int, state: str) -> None:
        path = proc / str(pid) / "task" / str(tid)
        path.mkdir(parents=True, exist_ok=True)
        (path / "stat").write_text(f"{tid} (a (b) c) {state} 1 2 3")

    task(os.getpid(), os.getpid(), "R")  # ours, spinning: not another process's
    task(os.getpid(), 99999, "R")
    task(11, 11, "S")  # asleep
    assert timing_threads(2)[0] == 2
    task(12, 12, "R")  # another process holds a core
    assert timing_threads(2)[0] == 1
    task(12, 13, "R")
    assert timing_threads(2)[0] == 1  # at least one
    assert timing_threads(1)[0] == 1
    monkeypatch.setattr(cpu_load, "PROC_STAT", tmp_path / "missing")
    assert timing_threads(2) == (2, None)  # no /proc: torch's own count, nothing measured


def test_a_cpu_timing_names_its_threads_and_restores_torchs():
    before = torch.get_num_threads()
    res = run_timing(AttentionConfig(d_model=64, n_heads=4, seq_len=16), torch.device("cpu"), budget_s=0.0)
    report = res.to_report()
    assert 1 <= report["threads"] <= before and report["other_load"] >= 0.0
    assert torch.get_num_threads() == before


@pytest.mark.skipif(not cpu_load.PROC_STAT.exists() or cpu_load.cpu_count() < 2, reason="needs Linux and 2 cores")
def test_a_second_process_holding_a_core_makes_the_timing_use_one_thread_and_flag_it():
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        while cpu_load.others_running() < 1:  # until the burner is seen running (a condition, not a sleep)
            pass
        res = run_timing(AttentionConfig(d_model=64, n_heads=4, seq_len=64), torch.device("cpu"), budget_s=0.3)
    finally:
        burner.kill()
        burner.wait()
    assert res.threads == 1
    # The machine's name keeps the machine's count (the panel shows "CPU (1 of 2 threads)"), not "(1 thread)".
    assert res.device_name == f"CPU ({torch.get_num_threads()} threads)" and torch.get_num_threads() >= 2
    assert res.other_load is not None and res.other_load >= cpu_load.BUSY_CORES  # the burner held about one core
