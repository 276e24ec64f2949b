"""A timing run's named steps: each one checks for a cancel and reports its progress ("naive prefill (3/7)")."""

from __future__ import annotations

from collections.abc import Callable

from core.timing.timer import Cancelled


class Steps:
    def __init__(self, names: tuple[str, ...], should_stop: Callable[[], bool] | None,
                 progress: Callable[[str], None] | None) -> None:
        self.names, self.should_stop, self.progress = names, should_stop, progress
        self.done = 0

    def __call__(self, step: int) -> None:
        """Step `step` begins: Cancelled if the user asked to stop, else its name and count reported."""
        if self.should_stop is not None and self.should_stop():
            raise Cancelled
        self.done += 1
        if self.progress is not None:
            self.progress(f"{self.names[step]} ({self.done}/{len(self.names)})")
