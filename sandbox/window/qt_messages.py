"""Qt's own messages on stderr, less the one the offscreen platform prints for every window it shows
("This plugin does not support propagateSizeHints()"), which means nothing to a user."""

from __future__ import annotations

import sys

QUIET_QT_MESSAGES = ("This plugin does not support propagateSizeHints",)


def _forward(_mode: object, _context: object, message: str) -> None:
    if not message.startswith(QUIET_QT_MESSAGES):
        print(message, file=sys.stderr)


def quiet_offscreen_messages() -> None:
    from PySide6.QtCore import qInstallMessageHandler

    qInstallMessageHandler(_forward)
