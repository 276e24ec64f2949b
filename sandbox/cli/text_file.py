"""Reading a user's text file, bounded: a device or a pipe that never ends is refused, never read into memory."""

from __future__ import annotations

from pathlib import Path

MAX_TEXT_BYTES = 64 * 2**20  # far more prose than any tab reads (SmolLM2's 8,192 tokens are about 35 KB)


def read_text(path: str | Path, why: str = "") -> str:
    """The file's text (UTF-8), read no further than MAX_TEXT_BYTES; a ValueError that says what to give otherwise.
    why: the end of the too-long sentence ("the frontier reads at most 64 samples of 1,024 tokens")."""
    if not str(path).strip():  # `--text-file ""` is a mistake to name, not a request for the default text
        raise ValueError("--text-file is empty; give the path of a UTF-8 text file.")
    target = Path(path)
    try:
        if target.exists() and not target.is_file():  # a FIFO would block the open itself, a device never end
            raise ValueError(f"{target} is not a regular file (a pipe, a device or a folder); give a UTF-8 text file.")
        with open(target, "rb") as f:
            data = f.read(MAX_TEXT_BYTES + 1)
        if len(data) > MAX_TEXT_BYTES:
            raise ValueError(f"the text file {target} is over {MAX_TEXT_BYTES // 2**20} MB; give a shorter one"
                             + (f" ({why})." if why else "."))
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read the text file {target}: {getattr(exc, 'strerror', None) or exc}; "
                         "give a UTF-8 text file.") from exc
