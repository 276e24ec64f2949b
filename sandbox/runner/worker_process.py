"""The worker process's side of the pipe: torch is imported here, never in the window's process.

Messages in (tuples, pickled by multiprocessing):
  ("latest", rid)                    the newest request id: anything older is stale (read at once)
  ("cancel", kind, job_id)           stop that background job between steps or timing repeats (read at once);
                                     job_id None: the newest of its kind; an older job's cancel, arriving late,
                                     leaves a newer one running
  ("stop",)                          leave
  ("heatmaps" | "timing", token, rid, request)   rid is the newest request id too (read at once)
  ("load", token, key, allow_pickle, quiet)
  ("job", token, BackgroundJob)      a sweep (a point a step), the KV frontier (a point a step) or a Long tab job
                                     (an overview, zoom or decode run): every step in turn, live requests queued
                                     meanwhile run between steps
  ("clear", token) / ("warm", token) drop the display caches / import what opening a model needs
  ("roof", token, device)            measure this machine's peak FLOP/s, bandwidth and memory
  ("release", names)                 the window has copied these shared-memory arrays out (read at once)
  ("ping",)                          answered ("pong",) by the reader thread: the worker is not frozen
Messages out:
  ("hello", WorkerInfo)              once, when torch is loaded
  ("emit", name, args)               a runner signal and its arguments (a result's big arrays in shared
                                     memory: sandbox/runner/shared_arrays.py)
  ("done", token)                    a job has ended (however it ended): the window counts what is left
"""

from __future__ import annotations

import os
import queue
import sys
import threading
from collections import deque
from multiprocessing.connection import Connection
from multiprocessing.shared_memory import SharedMemory
from typing import Any

from sandbox.jobs.book import JobBook
from sandbox.runner.shared_arrays import release, release_all, to_shared


class _Served:
    def __init__(self, conn: Connection) -> None:
        from sandbox.jobs.worker import Worker, worker_info  # torch loads here, in the worker

        self.conn = conn
        self.send_lock = threading.Lock()
        self.latest = 0
        self.book = JobBook()  # the newest background job of each kind sent: an older one stops
        self.quiet = False  # a reload after a restart: the window has the model's shape already
        self.blocks: dict[str, SharedMemory] = {}  # arrays sent in shared memory, until the window has them
        self.blocks_lock = threading.Lock()
        self.jobs: queue.Queue[tuple[Any, ...] | None] = queue.Queue()
        self.deferred: deque[tuple[Any, ...] | None] = deque()  # met between two sweep points, run after it
        self.worker = Worker(self.emit, lambda rid: rid != self.latest, self.book.stopped)
        self.send(("hello", worker_info()))

    def send(self, message: tuple[Any, ...]) -> None:
        with self.send_lock:
            self.conn.send(message)

    def emit(self, name: str, *args: object) -> None:
        if name == "model_loaded" and self.quiet:
            return
        if name in ("heatmaps_ready", "done"):  # a mosaic, or a job's end (a long map): big arrays
            with self.blocks_lock:
                args = (*args[:-1], to_shared(args[-1], self.blocks))
        self.send(("emit", name, args))

    def read(self) -> None:
        """The reader thread: control messages take effect at once, jobs queue for the main thread."""
        try:
            while True:
                message = self.conn.recv()
                kind = message[0]
                if kind == "latest":
                    self.latest = max(self.latest, message[1])
                elif kind == "cancel":
                    self.book.cancel(message[1], message[2])
                elif kind == "ping":
                    self.send(("pong",))  # alive, whatever the main thread is computing
                elif kind == "release":
                    with self.blocks_lock:
                        release(message[1], self.blocks)
                elif kind == "stop":
                    break
                else:
                    if kind == "job":
                        try:
                            self.book.start(message[2].job_kind, message[2].job_id)
                        except ValueError:  # an id the window refused already: stale, its steps stop at once
                            pass
                    elif kind in ("heatmaps", "timing"):
                        self.latest = max(self.latest, message[2])  # a live request is the newest one sent
                    self.jobs.put(message)
        except (EOFError, OSError):
            with self.blocks_lock:
                release_all(self.blocks)
            os._exit(0)  # the window has gone: leave now, not after the kernel call in progress
        self.jobs.put(None)

    def run(self) -> None:
        threading.Thread(target=self.read, name="sandbox-worker-reader", daemon=True).start()
        while (message := self.deferred.popleft() if self.deferred else self.jobs.get()) is not None:
            self.run_one(message)
        with self.blocks_lock:
            release_all(self.blocks)  # asked to stop: whatever the window did not take goes too

    def run_one(self, message: tuple[Any, ...]) -> None:
        try:
            self.job(message[0], message[2:])
        finally:
            self.send(("done", message[1]))

    def job(self, kind: str, args: tuple[Any, ...]) -> None:
        w = self.worker
        if kind == "heatmaps":
            w.heatmaps(*args)
        elif kind == "timing":
            w.timing(*args)
        elif kind == "load":
            key, allow_pickle, quiet = args
            self.quiet = quiet
            try:
                w.load(key, allow_pickle)
            finally:
                self.quiet = False
        elif kind == "job":
            (job,) = args
            index = 0
            while w.step(job, index):
                index += 1
                self._run_waiting_live_jobs()
        elif kind == "roof":
            w.roof(*args)
        elif kind == "clear":
            w.clear()
        elif kind == "warm":
            from core.models.source import warm_imports

            warm_imports()

    def _run_waiting_live_jobs(self) -> None:
        """Between two sweep points, the heatmaps (and timings) asked for meanwhile run first; a new
        sweep (or the end) waits until this one has stopped."""
        while True:
            try:
                message = self.jobs.get_nowait()
            except queue.Empty:
                return
            if message is None or message[0] == "job":
                self.deferred.append(message)
            else:
                self.run_one(message)


def serve(conn: Connection) -> None:
    """The worker's loop, on the window's socket (sandbox/runner/process_runner.py starts it)."""
    try:
        _Served(conn).run()
    except (EOFError, OSError, KeyboardInterrupt):
        pass


# The timing worker yields the cores to the window and to the heatmaps: on an idle machine a timing runs as
# fast as at priority 0, but when the user moves a slider mid-timing, the new heatmaps and their paint no
# longer wait for the timing's threads (bench/live_latency.py's cancel_ms; the repeats that overlap are
# stale and thrown away). Sweeps, which time on the main worker, keep priority 0.
TIMING_NICE = 10

if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[2] == "timing" and hasattr(os, "nice"):
        os.nice(TIMING_NICE)
    serve(Connection(int(sys.argv[1])))
