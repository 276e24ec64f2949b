"""Timing from the command line: estimated first and refused above a limit unless --force, progress
on stderr, and Ctrl-C that stops at once (the measurement runs in a thread, so the main thread is
free to take the interrupt even while one long kernel call runs)."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from core.arch.config import AttentionConfig
from core.timing.layer import estimate_timing_s
from core.timing.memory import guard_memory

LIMIT_S = 60.0  # a timing expected to take longer is refused unless --force
T = TypeVar("T")


def seconds_text(seconds: float) -> str:
    return f"{seconds:,.0f} s" if seconds >= 10 else f"{seconds:.1f} s"


def check_estimate(cfg: AttentionConfig, device: Any, force: bool, budget_s: float = 0.3) -> float:
    """The estimate in seconds; ValueError (what to change) above LIMIT_S without --force. A run that
    would not fit in memory is refused first: --force cannot change that."""
    guard_memory(cfg, device)
    seconds = estimate_timing_s(cfg, device, budget_s)
    if seconds > LIMIT_S and not force:
        raise ValueError(f"timing this configuration takes about {seconds_text(seconds)} on {device.type.upper()} "
                         f"(more than {LIMIT_S:.0f} s); lower seq_len or batch, or add --force to run it anyway.")
    return seconds


def say(text: str) -> None:
    print(f"timing: {text}", file=sys.stderr, flush=True)


def interruptible(work: Callable[[Callable[[], bool]], T]) -> T:
    """work(should_stop) in a thread; Ctrl-C asks it to stop and leaves with status 130 within a
    second, whether or not the kernel running at that moment ever returns."""
    stop = threading.Event()
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = work(stop.is_set)
        except BaseException as exc:  # re-raised in the main thread, with its own type
            box["error"] = exc

    thread = threading.Thread(target=target, name="cli-timing", daemon=True)
    try:
        thread.start()  # inside the try: Ctrl-C can land while start() waits for the thread
        while thread.is_alive():
            thread.join(0.1)
    except KeyboardInterrupt:
        stop.set()
        print("attention-sandbox: interrupted; stopping the measurement.", file=sys.stderr, flush=True)
        thread.join(1.0)
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(130)  # a kernel still running in the thread cannot be waited for
    if "error" in box:
        raise box["error"]
    return box["result"]
