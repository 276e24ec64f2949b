"""One worker process as the window sees it: how it is started, what it is doing, and how its end reads."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]  # where the sandbox package is, for the worker to import it
STAGES = {"heatmaps": "computing the heatmaps", "timing": "timing the layer", "load": "loading a model",
          "sweep": "running a sweep", "frontier": "running the KV frontier", "long": "mapping a long context",
          "clear": "clearing its caches",
          "roof": "measuring this machine", "warm": "preparing to open models"}


@dataclass
class WorkerChild:
    role: str  # main or timing
    process: Any
    conn: Connection
    ready: threading.Event = field(default_factory=threading.Event)
    jobs: dict[int, str] = field(default_factory=dict)  # token -> kind, sent and not done
    retired: bool = False  # stopped on purpose: its end is not a crash
    last_answer: float = field(default_factory=time.monotonic)  # its last message, pong included
    started_at: float = field(default_factory=time.monotonic)
    hung: bool = False  # killed by the watchdog: it had stopped answering


def exit_code(process: subprocess.Popen) -> int | None:
    """The worker's exit status once its socket closed (it may take a moment to be reaped)."""
    try:
        return process.wait(2.0)
    except subprocess.TimeoutExpired:
        return None


def death_cause(exitcode: int | None) -> str:
    """'killed (SIGKILL: out of memory?)', 'crashed (SIGSEGV)', 'exited with code 3'."""
    if exitcode is None:
        return "stopped answering"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        if name == "SIGKILL":
            return "was killed (SIGKILL: out of memory?)"
        return f"crashed ({name})"
    return f"exited with code {exitcode}"


def start_worker(role: str) -> WorkerChild:
    """A fresh interpreter (never a fork of a process that holds Qt and threads, nor a re-import of the
    caller's main module, as multiprocessing's spawn does), joined by a socket pair."""
    here, there = socket.socketpair()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    process = subprocess.Popen([sys.executable, "-m", "sandbox.runner.worker_process", str(there.fileno()), role],
                               pass_fds=[there.fileno()], env=env, stdin=subprocess.DEVNULL)
    there.close()
    return WorkerChild(role, process, Connection(here.detach()))


def cannot_start_message(role: str, cause: str, times: int, timing_kept: bool = False) -> str:
    """What the window says when workers of one role keep dying before their hello."""
    if role == "main":
        return (f"The compute worker could not start ({cause}, {times} times): the terminal that started the app "
                "shows why (a broken install, or too little memory).")
    if timing_kept:
        return (f"A spare timing worker could not start ({cause}, {times} times): timing goes on without a spare "
                "(the terminal that started the app shows why).")
    return (f"The timing worker could not start ({cause}, {times} times): heatmaps, models and sweeps go on; "
            "live timing is unavailable until the app is started again (the terminal that started it shows why).")


IDLE_DEATH = "nothing was lost"  # the end of the sentence for a worker that died with no work


def death_message(cause: str, stages: list[str], reloading: str, role: str = "main") -> str:
    """One sentence: what happened, what it was doing, what was started and kept (stages: what it was doing)."""
    reload = f"; {reloading} is being loaded again" if reloading else ""
    which = "compute" if role == "main" else "timing"
    if not stages:
        return f"An idle {which} worker {cause}. A new one has started{reload}; {IDLE_DEATH}."
    return (f"The {which} worker {cause} while {' and '.join(stages)}. A new one has started{reload}; your pins, "
            "results and workspace are kept, and what it was doing was not started again (change a setting or "
            "press Measure now to run it).")
