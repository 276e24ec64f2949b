"""The app's log file, in the user's cache folder: unexpected worker errors land there with their
traceback, so a user can send it and the app can keep running."""

from __future__ import annotations

import logging
from logging.handlers import RotatingFileHandler
from pathlib import Path

from core.models.catalog import cache_dir

LOG_NAME = "attention-sandbox.log"
_handler: RotatingFileHandler | None = None


def log_path() -> Path:
    return cache_dir() / LOG_NAME


def setup_log_file() -> Path | None:
    """Attach (once) a rotating file handler to the root logger. None when the folder is not writable."""
    global _handler
    path = log_path()
    if _handler is not None and Path(_handler.baseFilename) == path:
        return path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = RotatingFileHandler(path, maxBytes=1_000_000, backupCount=2, encoding="utf-8")
    except OSError:
        return None
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.setLevel(logging.INFO)
    root = logging.getLogger()
    if _handler is not None:
        root.removeHandler(_handler)
        _handler.close()
    root.addHandler(handler)
    if root.level > logging.INFO or root.level == logging.NOTSET:
        root.setLevel(logging.INFO)
    _handler = handler
    return path
