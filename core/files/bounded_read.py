"""Read a user's (or a cache's) file only when it is a regular file of a bounded size: a FIFO would block the read
for good, /dev/zero would fill memory, a 6 GB config.json would raise MemoryError, and 200,000 nested brackets
RecursionError. Each of those is a ValueError with a sentence instead."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from core.format import format_bytes


class Unreadable(ValueError):
    """A file the app will not read; `reason` says why in a few words (the message names the file too)."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def read_bounded(path: Path, limit: int, what: str) -> bytes:
    """The whole file, when it is a regular file of at most `limit` bytes; else a ValueError naming it as `what`."""
    def refuse(reason: str) -> Unreadable:
        return Unreadable(f"{what} ({path}) {reason}", reason)

    try:
        info = os.stat(path)
    except OSError as exc:
        raise refuse(f"cannot be read: {exc.strerror or exc}.") from exc
    if not stat.S_ISREG(info.st_mode):
        raise refuse("is not a regular file (a pipe, a device or a folder); the app reads only files.")
    if info.st_size > limit:
        raise refuse(f"is {format_bytes(info.st_size)}; the app reads at most {format_bytes(limit)} of it, so it "
                     "cannot be what it should be.")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO put there since the stat does not block the open
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise refuse("is not a regular file; the app reads only files.")
            data = f.read(limit + 1)
    except OSError as exc:
        raise refuse(f"cannot be read: {exc.strerror or exc}.") from exc
    if len(data) > limit:
        raise refuse(f"grew past {format_bytes(limit)} while it was read; the app reads no more.")
    return data


def read_json_bounded(path: Path, limit: int, what: str) -> Any:
    """read_bounded, then JSON: broken, non-UTF-8 or too deeply nested text is a ValueError too."""
    data = read_bounded(path, limit, what)
    try:
        return json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:120]
        raise Unreadable(f"{what} ({path}) is not readable JSON ({reason}).", f"not JSON: {reason}") from None
