"""Write files whole or not at all: temporary files in the target's own folder, fsynced, then renamed.

- A group (an image and its manifest) is written to temporary names first and renamed together at
  the end; if a rename fails part-way, the error says exactly which files were replaced.
- The file's mode is kept (a 0600 file stays 0600; a new one gets what open() would give it), and a
  target that is a symlink is written through: the file it points to is replaced, the link stays.
- Temporary names carry our pid (.NAME.PID.RANDOM.part); a save killed by SIGKILL leaves one, and
  the next save into that folder removes those whose process is gone.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


FILE_MODE = 0o666 & ~_current_umask()  # what open() would have given the file
_PART = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.[^.]+\.part$")


class ExportError(Exception):
    """A file could not be written; the sentence says which and why."""


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def check_folder(path: Path) -> None:
    parent = path.parent
    if not parent.is_dir():
        raise ExportError(f"cannot write {path.name}: the folder {parent} does not exist; choose an existing folder.")


def real_target(path: Path) -> Path:
    """Where writing `path` must land: through symlinks, so a link keeps pointing at the new file."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale_parts(folder: Path) -> list[Path]:
    """Remove our own temporary files left in `folder` by a process that no longer runs."""
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        m = _PART.match(entry.name)
        if m and int(m["pid"]) != os.getpid() and not _alive(int(m["pid"])):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
    return removed


def _fsync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):  # some file systems cannot open a folder for fsync
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def staged(paths: list[Path]) -> Iterator[list[Path]]:
    """Yield one temporary path per target; on success fsync and rename them all, on failure remove
    the temporary files. Raises ExportError saying what was, and was not, written."""
    targets = [real_target(Path(p)) for p in paths]
    for p in targets:
        check_folder(p)
        if p.is_dir():  # found before any file is replaced, not by the second rename
            raise ExportError(f"cannot write {p.name}: a folder of that name is in the way; choose another name. "
                              "Nothing was written.")
    for folder in {p.parent for p in targets}:
        clean_stale_parts(folder)
    temps: list[Path] = []
    replaced: list[Path] = []
    try:
        for p in targets:
            fd, name = tempfile.mkstemp(prefix=f".{p.name}.{os.getpid()}.", suffix=".part", dir=p.parent)
            os.close(fd)
            temps.append(Path(name))
            try:
                mode = p.stat().st_mode & 0o7777  # keep an existing file's mode
            except OSError:
                mode = FILE_MODE
            os.chmod(name, mode)
        yield temps
        for tmp in temps:
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
        for tmp, final in zip(temps, targets, strict=True):
            os.replace(tmp, final)
            replaced.append(final)
        for folder in {p.parent for p in targets}:
            _fsync_folder(folder)
    except OSError as exc:
        if replaced:
            done = ", ".join(p.name for p in replaced)
            missing = ", ".join(p.name for p in targets if p not in replaced)
            raise ExportError(f"wrote {done} but could not write {missing} in {targets[0].parent}: "
                              f"{_reason(exc)}.") from exc
        raise ExportError(f"could not write to {targets[0].parent}: {_reason(exc)}. Nothing was written.") from exc
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
