"""The app's compute runs in worker processes: the window never imports torch, a newer request kills a
timing in progress, and a worker that dies is replaced without losing what the window holds."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import pytestqt.exceptions

from core.models.source import shipped_unavailable_reason
from sandbox.jobs.types import ComputeRequest
from sandbox.runner.process_runner import ProcessRunner
from sandbox.runner.watchdog import START_HANG_S
from sandbox.runner.worker_child import death_cause
from tests.app.conftest import SMALL

ROOT = Path(__file__).resolve().parents[2]

WINDOW_SCRIPT = """
import json, os, sys, time
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication
from sandbox.window.app import open_windows
from sandbox.runner.worker_child import start_worker
import sandbox.window.main_window as mw
main = start_worker("main")  # as sandbox/window/app.py opens the app
app = QApplication([])
settings = QSettings(sys.argv[2], QSettings.Format.IniFormat)
settings.setValue("version", 1)
settings.setValue("config", sys.argv[1])
built = []
init = mw.MainWindow.__init__
def record(self, *a, **k):
    built.append(start.painted_at is not None and start.isVisible())  # painted, and still up meanwhile
    init(self, *a, **k)
mw.MainWindow.__init__ = record
from sandbox.window.start_window import StartWindow
real_start = StartWindow.__init__
def keep(self, *a, **k):
    global start
    start = self
    real_start(self, *a, **k)
StartWindow.__init__ = keep
w, first = open_windows(app, settings, main)
closed = not first.isVisible()  # read now: it deletes itself on close
end = time.monotonic() + 120
while not w.view_is_current() and time.monotonic() < end:
    app.processEvents()
hm = w.last_heatmaps
print(json.dumps({"torch": "torch" in sys.modules, "transformers": "transformers" in sys.modules,
                  "shape": list(hm.probs.shape) if hm is not None else None,
                  "rows": float(hm.probs.sum(-1).mean()) if hm is not None else None,
                  "start_painted_before_build": built, "start_closed": closed,
                  "window_shown": w.isVisible(), "frozen": __import__("gc").get_freeze_count()}))
w.close()  # stops the workers
sys.stdout.flush()
os._exit(0)  # not the interpreter's teardown, where pyqtgraph items can outlive Qt
"""


def test_the_app_opens_a_start_window_first_and_its_window_process_never_imports_torch(tmp_path):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", WINDOW_SCRIPT, json.dumps(SMALL.to_dict()), str(tmp_path / "s.ini")],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["torch"] is False and seen["transformers"] is False
    assert seen["shape"] is not None and seen["shape"][0] == SMALL.n_heads  # every head, computed in the worker
    assert seen["rows"] == pytest.approx(1.0, abs=1e-5)
    assert seen["start_painted_before_build"] == [True]  # the user saw a window before the slow imports
    assert seen["start_closed"] and seen["window_shown"]  # and the main window took its place
    assert seen["frozen"] > 50_000  # the built window's objects are out of the collector's full collections


def test_death_causes_read_as_a_person_would():
    assert death_cause(-9) == "was killed (SIGKILL: out of memory?)"
    assert death_cause(-11) == "crashed (SIGSEGV)"
    assert death_cause(3) == "exited with code 3"
    assert death_cause(None) == "stopped answering"


BIG = SMALL.with_(d_model=2048, n_heads=16, n_kv_heads=16, seq_len=4096)


def long_timing(w, cfg=BIG) -> int:
    """Measure now with a budget of seconds: the timing worker is busy until it is stopped. The default
    layer's every call (even its attention core alone) takes seconds on a CPU: far past KILL_AFTER_S."""
    w.timing_budget_s = 3.0
    w.config_panel.set_config(cfg)  # its live timing is skipped as too slow (the big layer) or quick
    rid = w.request(force_timing=True)
    w.timing_budget_s = 0.002  # the next change's own timing is a quick live one
    return rid


@pytest.mark.parametrize("stuck", [True, False])
def test_a_newer_request_stops_the_timing_in_progress_and_its_result_never_arrives(make_window, qtbot, stuck):
    """Not stuck: calls of milliseconds, so the timing hears of the newer request between two and stops by
    itself. Stuck: the worker is frozen (SIGSTOP) as in a kernel call that never returns: it is killed after
    KILL_AFTER_S and the spare takes its place."""
    w = make_window(sync=False, kind="process")
    assert w.runner.wait_ready(120)
    started, ready, failures = [], [], []
    w.runner.timing_started.connect(started.append)
    w.runner.timing_ready.connect(lambda o: ready.append(o.request_id))
    w.runner.failed.connect(failures.append)
    # Stuck: a layer whose every call takes seconds, so the timing is surely in progress when it is frozen
    # (a small layer's 200 repeats can be over by then). Not stuck: calls of milliseconds, stopped between repeats;
    # the 64-wide layer of microseconds finished its whole timing before the newer request in a full run on 2 cores
    # (it reported, then the newer one: ready [3, 4]).
    rid = long_timing(w) if stuck else long_timing(w, SMALL.with_(d_model=512, seq_len=512))
    qtbot.waitUntil(lambda: rid in started, timeout=60000)
    busy_pid = w.runner._timing.process.pid
    if stuck:
        os.kill(busy_pid, signal.SIGSTOP)
    w.config_panel.set_config(SMALL.with_(seq_len=48))
    qtbot.waitUntil(lambda: w.view_is_current() and w.last_heatmaps.config.seq_len == 48, timeout=30000)
    if stuck:
        qtbot.waitUntil(lambda: w.runner._timing.process.pid != busy_pid or not w.runner._timing.jobs, timeout=30000)
        assert w.runner.kills >= 1 and w.runner._timing.process.pid != busy_pid, (
            w.runner.kills, w.runner._timing.jobs, [f.message for f in failures], started, rid)
    try:
        qtbot.waitUntil(lambda: w.runner.is_idle() and len(ready) == 1, timeout=120000)
    except pytestqt.exceptions.TimeoutError as e:  # say what the runner did (it found the race above)
        raise AssertionError(f"idle {w.runner.is_idle()}, ready {ready}, started {started}, rid {rid}, failures "
                             f"{[f.message for f in failures]}, timing jobs {w.runner._timing and w.runner._timing.jobs}, "
                             f"main jobs {w.runner._main.jobs}, spare {w.runner._spare}") from e
    failures = [f for f in failures if not f.message.startswith("timing skipped")]  # the big layer's live one
    assert ready == [started[-1]] and rid not in ready and failures == []  # the stopped timing never reported
    assert w.last_timing.config.seq_len == 48 and w.runner.deaths == 0  # a kill it asked for is not a crash
    if not stuck and w.runner.kills == 0:
        assert w.runner._timing.process.pid == busy_pid  # stopped between repeats: the same worker serves on


def test_killing_the_worker_mid_timing_says_so_keeps_the_pins_and_serves_the_next_change(make_window, qtbot):
    w = make_window(sync=False, kind="process")
    assert w.runner.wait_ready(120)
    qtbot.waitUntil(lambda: w.runner.is_idle() and w.current_timing() is not None, timeout=60000)
    pin = w.pins.pin_current()
    pinned = [p.config for p in w.pins.pins]
    started = []
    w.runner.timing_started.connect(started.append)
    rid = long_timing(w)
    qtbot.waitUntil(lambda: rid in started, timeout=60000)
    with qtbot.waitSignal(w.runner.worker_died, timeout=30000) as died:
        w.runner.kill_worker("timing")
    message = died.args[0]
    assert message.startswith("The timing worker was killed (SIGKILL") and "while timing the layer" in message
    assert "pins, results and workspace are kept" in message and "was not started again" in message
    assert w.worker_status.last_death == message and message in w.statusBar().currentMessage()
    assert "Measure" in w.timing.labels["state"].text() or "stopped" in w.timing.labels["state"].text()
    assert [p.config for p in w.pins.pins] == pinned and w.pins.pins[0] is pin
    # Not retried: nothing is measuring; the next change is heatmapped and timed by the new worker.
    assert w.measuring is None
    w.config_panel.set_config(SMALL.with_(seq_len=48))
    qtbot.waitUntil(lambda: w.runner.is_idle() and w.current_timing() is not None, timeout=120000)
    assert w.view_is_current() and w.last_heatmaps.probs.shape[1] <= 48
    assert w.runner.deaths == 1


def test_killing_the_main_worker_while_idle_replaces_it_for_the_next_heatmaps(make_window, qtbot):
    w = make_window(sync=False, kind="process")
    assert w.runner.wait_ready(120)
    qtbot.waitUntil(lambda: w.runner.is_idle() and w.view_is_current(), timeout=60000)
    before = w.last_heatmaps
    with qtbot.waitSignal(w.runner.worker_died, timeout=30000) as died:
        w.runner.kill_worker("main")
    assert "while" not in died.args[0]  # it was doing nothing
    assert w.last_heatmaps is before  # the view stays as it was
    w.text.setText("after the worker died")
    qtbot.waitUntil(lambda: w.view_is_current() and w.last_heatmaps.tokens[0] == "after", timeout=60000)
    probs = w.last_heatmaps.probs
    assert np.allclose(probs.sum(-1), 1.0, atol=1e-5)


@pytest.mark.skipif(bool(shipped_unavailable_reason("minilm-l6")), reason="the MiniLM wheel is not installed")
def test_a_model_open_when_the_worker_dies_is_loaded_again(make_window, qtbot):
    w = make_window(sync=False, kind="process")
    assert w.runner.wait_ready(120)
    with qtbot.waitSignal(w.runner.model_loaded, timeout=120000):
        w.models.load("minilm-l6")
    qtbot.waitUntil(lambda: w.runner.is_idle() and w.last_heatmaps.model is not None, timeout=120000)
    trained = w.last_heatmaps.model.before.copy()
    with qtbot.waitSignal(w.runner.worker_died, timeout=30000) as died:
        w.runner.kill_worker("main")
    assert "all-MiniLM-L6-v2" in died.args[0] or "minilm-l6" in died.args[0]
    qtbot.waitUntil(w.runner.is_idle, timeout=120000)  # the reload ran in the new worker
    failures = []
    w.runner.failed.connect(failures.append)
    w.request()
    qtbot.waitUntil(lambda: w.runner.is_idle() and w.view_is_current(), timeout=60000)
    assert failures == [] and w.models.key == "minilm-l6"
    assert np.allclose(w.last_heatmaps.model.before, trained, atol=1e-6)  # the same model, the same heads


def test_a_worker_that_cannot_start_is_reported_once_not_restarted_forever(qtbot, monkeypatch):
    monkeypatch.setattr(sys, "executable", "/bin/false")
    runner = ProcessRunner()
    messages = []
    runner.worker_died.connect(messages.append)
    qtbot.waitUntil(lambda: any("could not start" in m for m in messages), timeout=30000)
    assert runner.deaths == 3 and runner.worker_pids() == []
    assert messages[-1].startswith("The compute worker could not start (exited with code 1, 3 times)")
    failures = []
    runner.failed.connect(failures.append)
    rid = runner.submit(ComputeRequest(config=SMALL, text="a b c"))
    qtbot.waitUntil(lambda: bool(failures), timeout=10000)  # said, not queued on a worker that is not there
    assert failures[-1].request_id == rid and "could not start" in failures[-1].message and runner.is_idle()
    runner.shutdown()


def test_timing_workers_that_cannot_start_leave_the_main_worker_serving(qtbot, monkeypatch):
    import sandbox.runner.process_runner as process_runner

    real = process_runner.start_worker

    def broken_timing(role):  # a timing worker's interpreter that exits at once, as a broken install would
        if role != "timing":
            return real(role)
        python, sys.executable = sys.executable, "/bin/false"
        try:
            return real(role)
        finally:
            sys.executable = python

    monkeypatch.setattr(process_runner, "start_worker", broken_timing)
    runner = ProcessRunner()
    messages, failures, maps = [], [], []
    runner.worker_died.connect(messages.append)
    runner.failed.connect(failures.append)
    runner.heatmaps_ready.connect(maps.append)
    try:
        qtbot.waitUntil(lambda: any("could not start" in m for m in messages), timeout=120000)
        said = [m for m in messages if "could not start" in m]  # (the earlier deaths' sentences may come after it)
        assert len(said) == 1 and said[0].startswith("The timing worker could not start (exited with code 1, 3 "
                                                     "times): heatmaps, models and sweeps go on"), messages
        rid = runner.submit(ComputeRequest(config=SMALL, text="a b c", want_timing=True))
        qtbot.waitUntil(lambda: bool(maps and failures), timeout=60000)
        assert maps[-1].request_id == rid and maps[-1].probs.shape[0] == SMALL.n_heads  # the main worker serves
        assert failures[-1].stage == "timing" and "timing is unavailable" in failures[-1].message
        assert len(runner.worker_pids()) == 1  # the main worker alone, and no more timing starts
    finally:
        runner.shutdown()


def test_a_dead_timing_worker_or_spare_is_replaced_and_a_warm_spare_is_kept(qtbot):
    runner = ProcessRunner()
    try:
        assert runner.wait_ready(120)
        for role in ("timing", "spare"):
            child = runner._timing if role == "timing" else runner._spare
            with qtbot.waitSignal(runner.worker_died, timeout=30000) as died:
                child.process.kill()
            assert died.args[0].startswith("An idle timing worker was killed") and died.args[0].endswith(
                "nothing was lost.")  # it was doing nothing: nothing to retry
            assert runner.wait_ready(120)  # a timing worker and a ready spare again
            assert child.process.pid not in runner.worker_pids() and len(runner.worker_pids()) == 3
    finally:
        runner.shutdown()


@pytest.mark.skipif(bool(shipped_unavailable_reason("minilm-l6")), reason="the MiniLM wheel is not installed")
def test_a_model_load_cut_by_a_worker_death_ends_with_a_message_not_a_spinner(qtbot):
    runner = ProcessRunner()
    try:
        assert runner.wait_ready(120)
        failures = []
        runner.failed.connect(failures.append)
        with qtbot.waitSignal(runner.model_progress, timeout=60000):
            runner.submit_load("minilm-l6")
        runner.kill_worker("main")
        qtbot.waitUntil(lambda: bool(failures), timeout=30000)
        assert failures[0].stage == "model" and "stopped while loading minilm-l6" in failures[0].message
        qtbot.waitUntil(runner.is_idle, timeout=30000)
    finally:
        runner.shutdown()


@pytest.mark.parametrize("role", ["main", "timing"])
def test_a_frozen_worker_is_noticed_killed_and_replaced(qtbot, role):
    runner = ProcessRunner(settle_s=0.05, hang_s=3.0)
    try:
        assert runner.wait_ready(120)
        frozen = (runner._main if role == "main" else runner._timing).process.pid
        os.kill(frozen, signal.SIGSTOP)  # as a wedged driver call would leave it: alive, silent
        shown = []
        runner.heatmaps_ready.connect(shown.append)
        with qtbot.waitSignal(runner.worker_died, timeout=30000) as died:
            runner.submit(ComputeRequest(SMALL, "waiting on a frozen worker", want_timing=role == "timing",
                                         timing_budget_s=0.002))
        stage = "computing the heatmaps" if role == "main" else "timing the layer"
        which = "compute" if role == "main" else "timing"
        assert died.args[0].startswith(f"The {which} worker stopped answering for 3 s and was stopped while {stage}")
        assert frozen not in runner.worker_pids()
        rid = runner.submit(ComputeRequest(SMALL, "served by the new one", want_timing=False))
        qtbot.waitUntil(lambda: any(r.request_id == rid for r in shown), timeout=60000)
    finally:
        runner.shutdown()


def test_a_main_worker_killed_mid_heatmaps_leaves_its_sentence_on_screen(make_window, qtbot):
    w = make_window(sync=False, kind="process")
    assert w.runner.wait_ready(120)
    qtbot.waitUntil(lambda: w.runner.is_idle() and w.view_is_current(), timeout=60000)
    w.runner._main.process.send_signal(signal.SIGSTOP)  # it holds the next request, as a long kernel would
    w.text.setText("a text the frozen worker never draws")
    qtbot.waitUntil(lambda: bool(w.runner._main.jobs), timeout=10000)
    with qtbot.waitSignal(w.runner.worker_died, timeout=30000) as died:
        w.runner.kill_worker("main")
    assert "while computing the heatmaps" in died.args[0]
    updating = []
    w.updating.timeout.connect(lambda: updating.append(1))
    qtbot.waitUntil(lambda: w.runner.is_idle(), timeout=60000)
    assert not w.updating.isActive() and updating == []  # "Updating the heatmaps…" would be a false promise
    assert died.args[0] in w.info.text() and w.last_error == died.args[0]
    w.text.setText("the next change")  # the user's next move is served by the new worker
    qtbot.waitUntil(lambda: w.view_is_current() and w.last_heatmaps.tokens[0] == "the", timeout=60000)
    assert w.last_error == "" and died.args[0] not in w.info.text()


def test_a_worker_frozen_before_its_hello_is_stopped_and_replaced(qtbot):
    runner = ProcessRunner()
    try:
        runner.start_hang_s = 2.0  # (the app waits three minutes: a cold disk can take one to import torch)
        runner._main.process.send_signal(signal.SIGSTOP)  # a hung import
        with qtbot.waitSignal(runner.worker_died, timeout=30000) as died:
            pass
        assert "had not started after 2 s and was stopped" in died.args[0]
        # The replacement imports torch, on a machine as busy as CI's: 2 s killed it again and again (a test that
        # failed once in a full run beside a soak). The app's own limit from here on.
        runner.start_hang_s = START_HANG_S
        assert runner.wait_ready(120)  # a new main worker, then the timing worker and its spare
        maps = []
        runner.heatmaps_ready.connect(maps.append)
        rid = runner.submit(ComputeRequest(config=SMALL, text="a b c", want_timing=False))
        qtbot.waitUntil(lambda: bool(maps) and maps[-1].request_id == rid, timeout=60000)
    finally:
        runner.shutdown()


def test_the_first_timing_never_runs_beside_the_spare_workers_torch_import(make_window, qtbot):
    """The spare started at the timing worker's hello, so the app's first figure was measured beside a torch
    import (about 2 s of a core) and read "other processes kept 1 core busy". The spare now starts once the
    timing worker is free, and a timing asked for while it starts waits for it."""
    w = make_window(sync=False, kind="process")
    runner = w.runner
    events = []
    spawn = runner._spawn
    runner._spawn = lambda role: (events.append(("spawn", role)), spawn(role))[1]
    on_emit = runner._on_emit  # in the reader threads, in the order the workers said it (the spawns are there too)
    names = {"timing_started": "started", "timing_ready": "ready"}
    runner._on_emit = lambda child, name, args: (events.append((names.get(name, name), None)), on_emit(child, name, args))
    qtbot.waitUntil(lambda: runner.is_idle() and w.current_timing() is not None, timeout=120000)
    qtbot.waitUntil(lambda: runner._spare is not None and runner._spare.ready.is_set(), timeout=120000)
    first_started = next(i for i, e in enumerate(events) if e[0] == "started")
    first_ready = next(i for i, e in enumerate(events) if e[0] == "ready")
    spare_spawned = [i for i, e in enumerate(events) if e == ("spawn", "timing")][-1]
    assert spare_spawned > first_ready, events  # the spare came after the first figure, not during it
    # A timing asked for while a spare starts waits for its hello.
    runner._spare.process.kill()  # its death starts another spare at once (the timing worker is free)
    qtbot.waitUntil(lambda: runner._spare is not None and not runner._spare.ready.is_set(), timeout=30000)
    starting = runner._spare
    w.config_panel.set_config(SMALL.with_(seq_len=40))
    qtbot.waitUntil(lambda: runner.is_idle() and w.current_timing() is not None, timeout=120000)
    later = [e for e in events[first_started + 1:] if e[0] == "started"]
    assert later and starting.ready.is_set()  # it had said hello before the timing began
