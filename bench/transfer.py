"""Pipe or shared memory for a 64-head mosaic: how the worker's heatmaps reach the window.

A child started as the app starts its workers (a fresh interpreter on a socket pair, sandbox/runner/process_runner.py)
sends a (64, 256, 256) float32 array (16 MiB: the largest mosaic the window draws) N times, two ways:
- pipe: pickled over the socket (what the app does: multiprocessing's Connection.send / recv);
- shm: written into a multiprocessing.shared_memory block; only its name crosses, and the window copies it out
  (it must own the array: the block is freed at once).
Printed per way: the median and p95 ms from the send's start to the array usable in the parent, and the
parent's own CPU ms per array (what the window's process pays while it could be painting).
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import time
from multiprocessing.connection import Connection
from multiprocessing.shared_memory import SharedMemory
from pathlib import Path

import numpy as np

SHAPE = (64, 256, 256)
CHILD = r"""
import sys, time
import numpy as np
from multiprocessing.connection import Connection
from multiprocessing.shared_memory import SharedMemory
conn = Connection(int(sys.argv[1]))
rng = np.random.default_rng(0)
probs = rng.random((64, 256, 256), dtype=np.float32)
while True:
    how = conn.recv()
    if how == "stop":
        break
    t0 = time.time()
    if how == "pipe":
        conn.send((t0, probs))
    else:
        block = SharedMemory(create=True, size=probs.nbytes)
        from multiprocessing import resource_tracker
        resource_tracker.unregister(block._name, "shared_memory")  # the parent unlinks it
        np.ndarray(probs.shape, probs.dtype, buffer=block.buf)[:] = probs
        conn.send((t0, block.name))
        block.close()
"""


def one(conn: Connection, how: str) -> tuple[float, float]:
    conn.send(how)
    t_cpu = time.process_time()
    t0, payload = conn.recv()
    if how == "pipe":
        arr = payload
    else:
        block = SharedMemory(name=payload)
        arr = np.array(np.ndarray(SHAPE, np.float32, buffer=block.buf))  # the window owns its copy
        block.close()
        block.unlink()
    cpu = time.process_time() - t_cpu
    assert arr.shape == SHAPE
    return (time.time() - t0) * 1e3, cpu * 1e3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    here, there = socket.socketpair()
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(there.fileno())], pass_fds=[there.fileno()],
                             cwd=Path(__file__).resolve().parents[1])
    there.close()
    conn = Connection(here.detach())
    rows = {}
    for how in ("pipe", "shm"):
        one(conn, how)  # warm
    results: dict[str, list[tuple[float, float]]] = {"pipe": [], "shm": []}
    for _ in range(args.n):  # interleaved, so drift hits both
        for how in ("pipe", "shm"):
            results[how].append(one(conn, how))
    conn.send("stop")
    child.wait(10)
    for how, vals in results.items():
        wall = sorted(v[0] for v in vals)
        rows[how] = {"median_ms": round(statistics.median(wall), 2), "p95_ms": round(wall[int(0.95 * (len(wall) - 1))], 2),
                     "parent_cpu_ms": round(statistics.median(v[1] for v in vals), 2)}
    print(json.dumps(rows) if args.json else rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
