"""Write files whole or not at all: a temporary file in the same folder, then one rename."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


FILE_MODE = 0o666 & ~_current_umask()  # what open() would have given the file


class ExportError(Exception):
    """A file could not be written; the sentence says which and why."""


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def check_folder(path: Path) -> None:
    parent = path.parent
    if not parent.is_dir():
        raise ExportError(f"cannot write {path.name}: the folder {parent} does not exist; choose an existing folder.")


@contextlib.contextmanager
def staged(paths: list[Path]) -> Iterator[list[Path]]:
    """Yield one temporary path per target; on success rename them all, on failure remove them all."""
    for p in paths:
        check_folder(p)
    temps: list[Path] = []
    try:
        for p in paths:
            fd, name = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".part", dir=p.parent)
            os.close(fd)
            temps.append(Path(name))
            os.chmod(name, FILE_MODE)
        yield temps
        for tmp, final in zip(temps, paths, strict=True):
            os.replace(tmp, final)
    except OSError as exc:
        raise ExportError(f"could not write to {paths[0].parent}: {_reason(exc)}. Nothing was written.") from exc
    finally:
        for tmp in temps:
            with contextlib.suppress(OSError):
                tmp.unlink()


def write_atomic(path: Path, write: Callable[[Path], None]) -> None:
    """write(tmp) fills a temporary file that becomes `path` only when it is complete."""
    with staged([path]) as (tmp,):
        write(tmp)


def write_text_atomic(path: Path, text: str) -> None:
    write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
