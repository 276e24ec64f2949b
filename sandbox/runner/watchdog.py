"""The process runner's watchdog (sandbox/runner/process_runner.py), on a thread of its own.

A worker frozen mid-job (SIGSTOP, a wedged driver) would keep the window waiting for ever: while a worker
has work it is pinged (its reader thread answers whatever its main thread computes), and one silent for
hang_s is killed and replaced as after a crash. A worker that has not said hello START_HANG_S after its
start (a hung import) is killed too, and counts as a failed start; the spare is watched for that as well."""

from __future__ import annotations

import time
from typing import Any

WATCH_S = 1.0  # how often the workers with work are asked whether they are alive
START_HANG_S = 180.0  # torch's import takes 2 s here and a minute on a cold, slow disk: three is frozen


def watch(runner: Any) -> None:
    """runner: a ProcessRunner; returns when it closes."""
    while not runner.closed.wait(WATCH_S):
        with runner._lock:
            now = time.monotonic()
            busy = []
            for child in (runner._main, runner._timing, runner._spare):
                if child is None:
                    continue
                if not child.ready.is_set():
                    if now - child.started_at > runner.start_hang_s:
                        child.hung = True
                        child.process.kill()
                    child.last_answer = now  # starting: no ping to answer yet
                elif not child.jobs or child is runner._spare:
                    child.last_answer = now  # idle: nothing to wait for
                elif now - child.last_answer > runner._hang_s:
                    child.hung = True
                    child.process.kill()
                else:
                    busy.append(child)
        for child in busy:
            runner._send(child, ("ping",))
