"""What else the CPU is doing while we time: idle cores before a run, other processes' load during it.

torch's OpenMP threads wait at a barrier for every thread of an op; a thread whose core another process holds
waits a scheduler slice, so on this 2-core machine a 0.02 ms matmul takes 20 ms on two threads whenever another
process keeps one core busy. A CPU timing therefore runs on as many threads as there are idle cores (at least
one), and says how many cores other processes kept busy during it, from /proc/stat (all CPU time) minus
/proc/self/stat (ours). Linux only; elsewhere nothing is known and nothing is changed.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

PROC_STAT = Path("/proc/stat")
SELF_STAT = Path("/proc/self/stat")
PROC = Path("/proc")
SNAPSHOTS = 3  # readings of other processes' runnable threads before a timing (about 2 ms each here)
BUSY_CORES = 0.25  # other processes holding a quarter of a core or more during a run make it "busy"


@dataclass(frozen=True)
class CpuTimes:
    """Jiffies since boot: busy (all processes) and idle per CPU, and this process's own."""

    per_cpu: tuple[tuple[int, int], ...]  # (busy, idle) of each CPU
    own: int  # this process's user + system time, every thread and waited-for child included
    at: float  # perf_counter when read


def parse_proc_stat(text: str) -> tuple[tuple[int, int], ...]:
    """'cpu0 user nice system idle iowait irq softirq steal ...' lines -> (busy, idle) per CPU."""
    out = []
    for line in text.splitlines():
        name, *fields = line.split()
        if not name.startswith("cpu") or name == "cpu" or len(fields) < 4:
            continue
        values = [int(v) for v in fields[:8]]
        idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
        out.append((sum(values) - idle, idle))
    return tuple(out)


def parse_self_stat(text: str) -> int:
    """utime + stime of /proc/self/stat (fields 14 and 15, after the parenthesised name)."""
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12])


def read_times() -> CpuTimes | None:
    """Now's reading, or None where /proc is not there (macOS, Windows)."""
    try:
        return CpuTimes(parse_proc_stat(PROC_STAT.read_text()), parse_self_stat(SELF_STAT.read_text()),
                        time.perf_counter())
    except (OSError, ValueError, IndexError):
        return None


def other_cores(a: CpuTimes, b: CpuTimes) -> float:
    """Cores other processes kept busy, on average, between two readings."""
    busy = sum(p1[0] - p0[0] for p0, p1 in zip(a.per_cpu, b.per_cpu, strict=False))
    total = sum((p1[0] - p0[0]) + (p1[1] - p0[1]) for p0, p1 in zip(a.per_cpu, b.per_cpu, strict=False))
    if total <= 0 or not a.per_cpu:
        return 0.0
    cores = len(a.per_cpu)
    return max(0.0, (busy - (b.own - a.own)) / total * cores)


def procs_running(text: str) -> int:
    """/proc/stat's 'procs_running N': threads runnable right now, the one reading it included."""
    for line in text.splitlines():
        if line.startswith("procs_running "):
            return int(line.split()[1])
    raise ValueError("no procs_running line")


def others_running(proc: Path | None = None) -> int:
    """Threads of other processes runnable now (state R in /proc/PID/task/TID/stat): a process that holds a core
    is one of them whenever it is looked at. Ours are left out, OpenMP workers spinning after an op included."""
    own = str(os.getpid())
    count = 0
    for task in (proc or PROC).glob("[0-9]*/task/*/stat"):
        if task.parts[-4] == own:
            continue
        try:
            text = task.read_text()
        except OSError:  # a thread that ended meanwhile
            continue
        if text[text.rindex(")") + 2:].startswith("R"):
            count += 1
    return count


def timing_threads(default: int) -> tuple[int, CpuTimes | None]:
    """The intra-op thread count for a CPU timing: the cores no other process's runnable thread holds right now
    (at least 1, at most default), and the reading the run's load is measured from. Instant: no probe to wait for."""
    try:
        # the fewest others over a few readings: a process that holds a core is runnable in every one of them,
        # a task that wakes for a moment is not
        others = min(others_running() for _ in range(SNAPSHOTS))
        text = PROC_STAT.read_text()
        start = CpuTimes(parse_proc_stat(text), parse_self_stat(SELF_STAT.read_text()), time.perf_counter())
    except (OSError, ValueError, IndexError):
        return max(1, default), None
    cores = len(start.per_cpu) or default
    return max(1, min(default, cores - others)), start


def cpu_count() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
