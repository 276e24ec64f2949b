"""What tests, benchmarks and the soak ask of the process runner (sandbox/runner/process_runner.py) from outside the
window's event loop: wait for its workers, list them, kill one as the kernel's OOM killer would."""

from __future__ import annotations

from typing import Any


class RunnerProbes:
    _changed: Any
    _main: Any
    _timing: Any
    _spare: Any

    def is_idle(self) -> bool:
        raise NotImplementedError

    def wait_idle(self, timeout: float | None = None) -> bool:
        """For benchmarks and the soak, outside the window's event loop: wait until nothing is left."""
        with self._changed:
            return self._changed.wait_for(self.is_idle, timeout)

    def wait_ready(self, timeout: float = 60.0) -> bool:
        """For tests and benchmarks: until every worker has loaded torch (main, timing and its spare)."""
        with self._changed:
            return self._changed.wait_for(lambda: self._main.ready.is_set() and self._spare is not None
                                          and self._spare.ready.is_set(), timeout)

    def worker_pids(self) -> list[int]:
        """The worker processes still running (the main, timing and spare workers while the app is open)."""
        children = [c for c in (self._main, self._timing, self._spare) if c is not None]
        return [c.process.pid for c in children if c.process.poll() is None]

    def kill_worker(self, role: str = "main") -> int:
        """Tests and the soak: kill a worker as the kernel's OOM killer would; returns its pid."""
        child = self._main if role == "main" else self._timing
        child.process.kill()
        return child.process.pid
