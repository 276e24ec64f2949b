"""Launch the desktop app (the window arrives with the [app] issue)."""

from __future__ import annotations


def run_app() -> int:
    from sandbox.cli import main

    return main(["report", "--time"])
