"""Write files whole or not at all: temporary files in the target's own folder, fsynced, then renamed.

- A group (an image and its manifest) is written to temporary names first and renamed together at
  the end; if a rename fails part-way, the error says exactly which files were replaced.
- The file's mode is kept (a 0600 file stays 0600; a new one gets what open() would give it), and a
  target that is a symlink to a file inside its own folder is written through: that file is replaced, the
  link stays. A link to anywhere else is refused (a link planted in an output folder must not make a save
  replace a file elsewhere), and so is anything that is not a regular file: a device (/dev/null), a FIFO or a
  socket would otherwise be renamed over and turned into a file.
- A name longer than the file system takes (255 bytes) is refused with a sentence before anything is written.
- Temporary names carry our pid (.NAME.PID.RANDOM.part); a save killed by SIGKILL leaves one, and
  the next save into that folder removes those whose process is gone.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
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


NAME_MAX_BYTES = 255  # a file name's longest on the file systems this runs on (ext4, APFS, NTFS)
KINDS = {stat.S_IFCHR: "a device", stat.S_IFBLK: "a device", stat.S_IFIFO: "a FIFO (named pipe)",
         stat.S_IFSOCK: "a socket"}


def _shown(name: str) -> str:
    return name if len(name) <= 60 else f"{name[:40]}…"


def _too_long(path: Path) -> tuple[str, int] | None:
    """The first part of path longer than a file name may be, with its size in bytes; None when all fit."""
    for part in path.parts:
        size = len(os.fsencode(part))
        if size > NAME_MAX_BYTES:
            return part, size
    return None


def real_target(path: Path) -> Path:
    """Where writing `path` may land, or an ExportError saying why it may not: a name of at most 255 bytes; through
    a symlink only to a file inside the link's own folder (so the link keeps pointing at the new file); only over
    a regular file or nothing."""
    path = Path(path)
    if long := _too_long(path):
        raise ExportError(f"the name {_shown(long[0])} is {long[1]:,} bytes; a file or folder name may have at most "
                          f"{NAME_MAX_BYTES}: choose a shorter one. Nothing was written.")
    target = path
    if path.is_symlink():
        folder = Path(os.path.realpath(path.parent))
        real = Path(os.path.realpath(path))
        if folder not in real.parents:
            raise ExportError(f"{_shown(path.name)} is a link to {real}, outside {path.parent}; the app writes only "
                              "inside the folder you chose: remove the link or choose another name. Nothing was "
                              "written.")
        target = real
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return target
    except OSError as exc:
        raise ExportError(f"cannot write {_shown(path.name)}: {_reason(exc)}. Nothing was written.") from exc
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):  # a folder in the way is said by the caller
        kind = KINDS.get(stat.S_IFMT(mode), "not a regular file")
        raise ExportError(f"{path} is {kind}, not a file; the app writes only over regular files: choose another "
                          "name. Nothing was written.")
    return target


def out_folder(text: str, flag: str = "--out", make: bool = True) -> Path:
    """The folder a command writes into, made if missing (make), or a sentence saying what to give instead: an empty
    name, a name part over 255 bytes, a file in the way or a folder that cannot be made (ValueError / ExportError)."""
    if not text.strip():
        raise ValueError(f"{flag} is empty; give a folder, such as {flag} maps.")
    folder = Path(text).expanduser()
    if long := _too_long(folder):
        raise ValueError(f"{flag}: the name {_shown(long[0])} is {long[1]:,} bytes; a folder name may have at most "
                         f"{NAME_MAX_BYTES}: give a shorter one.")
    try:
        if folder.exists() and not folder.is_dir():
            raise ValueError(f"{flag} {folder} is a file; give a folder.")
        if make:
            folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExportError(f"cannot create the folder {folder}: {_reason(exc)}; choose another {flag}.") from exc
    return folder


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
            short = p.name
            while len(os.fsencode(short)) > 180:  # the temporary name (name, pid, random, .part) must fit too
                short = short[:-1]
            fd, name = tempfile.mkstemp(prefix=f".{short}.{os.getpid()}.", suffix=".part", dir=p.parent)
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


def write_cache_file(path: Path, text: str) -> bool:
    """A cache entry written whole or not at all, its folder made; False (and nothing raised) when the cache folder
    cannot be written: a cache is an optimisation, and the next run computes again."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, text)
    except (OSError, ExportError):
        return False
    return True
