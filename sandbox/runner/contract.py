"""What every runner tells the window, and the ids it answers with: one declaration for the thread runner
(sandbox/runner/thread_runner.py: tests, the CLI) and the app's process runner (sandbox/runner/process_runner.py).

Both take work the same way: `submit(job)` (a live ComputeRequest, newest wins; or a background job of several
steps, sandbox/jobs/types.py), `cancel(kind, job_id)`, `running(kind)`; a background job reports through
`progress(kind, payload)` and ends with `done(kind, payload)`."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal


class RunnerSignals(QObject):
    heatmaps_ready = Signal(object)  # HeatmapResult
    timing_started = Signal(int)  # request id
    timing_ready = Signal(object)  # TimingOutcome
    failed = Signal(object)  # Failure
    # A background job (sandbox/jobs/types.py: BackgroundJob) reports under its kind ("sweep", "frontier", "long"):
    progress = Signal(str, object)  # kind, SweepProgress | SweepStep | FrontierProgress | LongProgress
    done = Signal(str, object)  # kind, SweepDone | FrontierDone | LongDone: its end, however it ended
    model_progress = Signal(str, float)  # what is happening, fraction done
    model_loaded = Signal(object)  # (key, ModelShape)
    roof_ready = Signal(object)  # this machine's measured roof: core/timing/machine_roof.py's MachineRoof.to_json()
    idle = Signal()
    ready = Signal(object)  # WorkerInfo, once torch is loaded (a thread runner's is ready at once: see `info`)
    worker_died = Signal(str)  # one sentence for the window: what stopped, and that nothing was lost

    _latest = 0  # the newest request id; each runner counts it up in submit()
    paced = True  # the window shows its heatmaps at most once a frame (sandbox/window/frame_pacer.py); not in sync mode

    @property
    def latest_id(self) -> int:
        return self._latest

    def is_current(self, request_id: int) -> bool:
        return request_id == self._latest
