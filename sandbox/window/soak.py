"""The scripted soak: thousands of random user actions on the real window, then checks that nothing
crashed, warned, leaked threads or memory, or showed a stale view. Used by tests/app/test_soak.py
(a short run in `make test`) and bench/soak.py (the full run)."""

from __future__ import annotations

import gc
import random
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from PySide6.QtCore import QEventLoop, QtMsgType, qInstallMessageHandler
from PySide6.QtWidgets import QApplication

from core.arch.presets import load_presets
from core.counts import param_counts
from core.kinds.registry import kind_of
from core.models.source import shipped_unavailable_reason
from core.timing.layer import estimate_timing_s
from sandbox.tabs.export_render import ExportJob
from sandbox.window.main_window import MainWindow

# The second: a token of a script no installed font covers (MiniLM's vocabulary holds Bengali signs, and the induction
# probe draws random tokens from it): this machine's fonts, not the window, which shows it as a box.
IGNORED_QT = ("This plugin does not support propagateSizeHints", "OpenType support missing for")
ODD_TEXTS = ["", " ", "a", "😀 emoji 🚀 tokens", "tab\tand\nnewline", "\x00\x01\x02 control", "x" * 300,
             "word " * 2000, "The chef who trained in Lucknow cooked biryani", "ünïcödé ﬁ ligature ß"]


@dataclass
class SoakReport:
    actions: int = 0
    worker_kills: int = 0  # workers killed and replaced
    seconds: float = 0.0
    rss_growth_mb: float = 0.0
    stale_views: int = 0
    checkpoints: int = 0
    errors: list[str] = field(default_factory=list)
    qt_warnings: list[str] = field(default_factory=list)
    threads_left: int = 0
    action_counts: dict[str, int] = field(default_factory=dict)
    action_seconds: dict[str, float] = field(default_factory=dict)
    rss_series_mb: list[float] = field(default_factory=list)  # at the same state, every tenth of the run

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["errors"] = len(self.errors)
        d["error_samples"] = self.errors[:5]
        d["qt_warnings"] = len(self.qt_warnings)
        d["qt_warning_samples"] = sorted(set(self.qt_warnings))[:5]  # what they said, once each
        return d


def release_free_heap() -> None:
    """Hand freed heap pages back to the OS (glibc keeps them otherwise, and RSS would count memory
    that is free, not leaked). No-op where malloc_trim does not exist."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def rss_mb() -> float:
    with open("/proc/self/statm", encoding="ascii") as f:
        pages = int(f.read().split()[1])
    import os

    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def settle(app: QApplication, w: MainWindow, timeout_s: float = 120.0) -> None:
    """Process events until the worker is idle, its results are delivered and the window's deferred work is done: a
    result held to a frame's end (sandbox/window/frame_pacer.py), the costs that follow the maps (up to 50 ms in a burst,
    sandbox/window/costs_refresh.py). processEvents returns at once with only timers pending: an idle runner alone let one
    checkpoint in 101 read the costs before they came (a stale view that was not)."""
    end = time.perf_counter() + timeout_s
    while time.perf_counter() < end:
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)
        if w.runner.is_idle() and not w.pacer.holding() and not w.costs.due:
            app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)
            if w.runner.is_idle() and not w.pacer.holding() and not w.costs.due:
                return
    raise TimeoutError("the worker did not become idle")


def wait_heatmaps(app: QApplication, w: MainWindow, timeout_s: float = 120.0) -> None:
    """Process events until the heatmaps of the newest request are on screen (or refused)."""
    end = time.perf_counter() + timeout_s
    while time.perf_counter() < end:
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 10)
        hm = w.last_heatmaps
        if w.last_error or (hm is not None and w.runner.is_current(hm.request_id)):
            return
        if w.runner.is_idle():
            app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 10)
            return
    raise TimeoutError("the heatmaps did not arrive")


def wait_shown(app: QApplication, w: MainWindow, timeout_s: float = 5.0) -> None:
    """Process events until the view on screen is whole (maps, then the costs that follow their paint), as a user's
    next action finds it; a refused input or a newer request ends the wait."""
    end = time.perf_counter() + timeout_s
    while time.perf_counter() < end and not w.last_error and not w.view_is_current():
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 10)
        hm = w.last_heatmaps
        if hm is None or not w.runner.is_current(hm.request_id):
            return


def view_matches(w: MainWindow) -> bool:
    """The heatmaps and the numbers on screen belong to the configuration the controls show."""
    cfg = w.config()
    spec = w.models.view_spec(cfg)  # the layer on screen: a hybrid stack's mixer, or the configuration's own
    kind = kind_of(spec) if spec is not None else None
    want = kind.params(cfg.d_model, spec).total if kind is not None and spec is not None else param_counts(cfg).total
    if w.metrics.values["params"].text() != f"{want:,}":
        return False
    if w.last_error:  # a refused input shows its message instead of heatmaps
        return True
    hm = w.last_heatmaps
    if hm is None or not w.view_is_current():
        return False
    maps = kind.display_maps(spec) if kind is not None and spec is not None else cfg.n_heads
    return w.mosaic.probs is hm.probs and hm.probs.shape[0] == maps


class Soak:
    def __init__(self, app: QApplication, w: MainWindow, folder: Path, seed: int = 0, models: bool = True) -> None:
        self.app, self.w, self.folder, self.rng = app, w, folder, random.Random(seed)
        self.report = SoakReport()
        self.start = w.config()
        self.models = models and not shipped_unavailable_reason("minilm-l6")
        self.actions: list[tuple[float, str, Callable[[], None]]] = [
            (30, "slider", self.move_slider), (8, "typed", self.type_value), (6, "combo", self.flip_combo),
            (4, "preset", self.pick_preset), (8, "text", self.edit_text), (1, "probe", self.toggle_probe),
            (2, "pin", self.pin), (1, "unpin", self.unpin), (1, "sweep", self.sweep), (1, "export", self.export),
            (1, "head", self.open_head), (2, "tab", self.switch_tab),
            (0.4 if self.models else 0, "model", self.switch_model), (3 if self.models else 0, "layer", self.layer),
            (0.3 if hasattr(w.runner, "kill_worker") else 0, "kill", self.kill_worker),
        ]

    # -- actions -------------------------------------------------------------------------------------
    def move_slider(self) -> None:
        p = self.w.config_panel
        sliders = [s for s in (p.d_model, p.n_heads, p.n_kv_heads, p.seq_len, p.batch_size, p.n_layers) if s.isEnabled()]
        s = self.rng.choice(sliders)
        s.slider.setValue(self.rng.randint(0, s.slider.maximum()))

    def type_value(self) -> None:
        p = self.w.config_panel
        s = self.rng.choice([x for x in (p.d_model, p.seq_len, p.batch_size, p.n_heads) if x.isEnabled()])
        s.spin.setValue(self.rng.choice([0, 1, 7, 100, 4097, 65536, 10**6, self.rng.randint(1, 5000)]))

    def flip_combo(self) -> None:
        p = self.w.config_panel
        choice = self.rng.randint(0, 3)
        if choice == 0:
            p.dtype.setCurrentIndex(self.rng.randint(0, p.dtype.count() - 1))
        elif choice == 1:
            p.phase.setCurrentIndex(self.rng.randint(0, 1))
        elif p.causal.isEnabled():
            (p.causal if choice == 2 else p.bias).toggle()

    def pick_preset(self) -> None:
        p = self.w.config_panel
        if p.preset.isEnabled():
            p.preset.activated.emit(self.rng.randint(1, len(load_presets())))

    def edit_text(self) -> None:
        words = ["the", "chef", "cooked", "biryani", "in", "Lucknow", "and", "rice"]
        text = self.rng.choice(ODD_TEXTS) if self.rng.random() < 0.3 else " ".join(
            self.rng.choice(words) for _ in range(self.rng.randint(1, 30)))
        self.w.text.setText(text)

    def toggle_probe(self) -> None:
        self.w.roles.toggle_probe()

    def pin(self) -> None:
        wait_heatmaps(self.app, self.w)
        if len(self.w.pins.pins) < 6:
            self.w.pins.pin_current()

    def unpin(self) -> None:
        if self.w.pins.pins:
            self.w.pins.remove(self.rng.randrange(len(self.w.pins.pins)))

    def sweep(self) -> None:
        values = self.rng.choice(["8,16,32", "1..8", "16,24,x", "", "1..500"])
        # A user times a sweep of a big layer and waits, or cancels; the soak times only quick ones.
        quick = estimate_timing_s(self.w.config().with_(seq_len=32), torch.device("cpu"), 0.01, False) < 0.5
        self.w.sweeps.run("seq_len", values, timed=quick and self.rng.random() < 0.5)
        if self.rng.random() < 0.5:
            self.w.sweeps.cancel()

    def export(self) -> None:
        wait_heatmaps(self.app, self.w)
        wait_shown(self.app, self.w)  # the costs follow the maps' paint: export refuses a view not yet whole
        if self.w.last_heatmaps is None or self.w.last_error or not self.w.view_is_current():
            return
        fmt = self.rng.choice(["npy", "csv", "png"])
        self.w.export_to(ExportJob(self.folder / f"soak.{fmt}", fmt, 1.0))

    def open_head(self) -> None:
        wait_heatmaps(self.app, self.w)
        if self.w.last_heatmaps is not None and not self.w.last_error:
            view = self.w.open_head(self.rng.randrange(len(self.w.last_heatmaps.probs)))
            if view is not None:
                view.close()

    def switch_tab(self) -> None:
        self.w.tabs.setCurrentIndex(self.rng.randrange(self.w.tabs.count()))

    def switch_model(self) -> None:
        settle(self.app, self.w)
        target = self.rng.choice(["minilm-l6", "random", "smollm2-135m"])
        if target == "random":
            self.w.models.use_random()
        else:
            self.w.models.load(target)
        settle(self.app, self.w)

    def layer(self) -> None:
        picker = self.w.models.picker
        if picker.layer.isEnabled():
            picker.layer.setValue(self.rng.randint(0, picker.layer.maximum()))

    def kill_worker(self) -> None:
        """The kernel's OOM killer, or a segfault: a worker dies mid-work; the window must say so, keep
        its pins and serve the next change (the user's next move, here a request of what is shown)."""
        deaths, stopped = self.w.runner.deaths, self.w.runner.kills
        pins = [p.config for p in self.w.pins.pins]
        self.w.runner.kill_worker(self.rng.choice(["main", "timing"]))
        end = time.perf_counter() + 60
        while self.w.runner.deaths == deaths or not self.w.worker_status.last_death:
            # The runner stopped a timing worker itself (still busy KILL_AFTER_S after a cancel): if that was the one
            # killed here, its end is the runner's, rightly not said as a crash, and no sentence will come.
            if self.w.runner.kills != stopped:
                break
            if time.perf_counter() > end:
                self.report.errors.append(f"no word of a killed worker at action {self.report.actions}")
                return
            self.app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 10)
        self.w.worker_status.last_death = ""
        if [p.config for p in self.w.pins.pins] != pins:
            self.report.errors.append(f"pins lost with a worker at action {self.report.actions}")
        self.report.worker_kills += 1
        self.w.request()

    def back_to_start(self) -> None:
        """The same state for every memory reading: random weights, the opening configuration, no pins
        (a pin keeps its heatmaps, up to 16 MiB for 64 heads of 256 tokens: state, not a leak)."""
        while self.w.pins.pins:
            self.w.pins.remove(0)
        self.w.models.use_random()
        self.w.config_panel.set_config(self.start)
        self.w.text.setText(ODD_TEXTS[-2])
        settle(self.app, self.w)
        for view in list(self.w.head_views):
            view.close()
        self.w.runner.clear_caches()  # a bounded cache, emptied for both readings: growth is leaks only
        self.app.processEvents()
        gc.collect()
        release_free_heap()

    def warm_up(self) -> None:
        """Touch everything that allocates once (models, sweeps, exports, head views) before the
        memory baseline, so that growth measures leaks, not first use."""
        if self.models:
            for key in ("minilm-l6", "smollm2-135m"):
                self.w.models.load(key)
                settle(self.app, self.w)
            self.w.models.use_random()
        self.w.sweeps.run("seq_len", "8,16", timed=True)
        for act in (self.pin, self.export, self.open_head, self.toggle_probe, self.toggle_probe, self.unpin):
            act()
        settle(self.app, self.w)

    # -- the run ---------------------------------------------------------------------------------------
    def checkpoint(self) -> None:
        settle(self.app, self.w)
        self.report.checkpoints += 1
        if not view_matches(self.w):
            self.report.stale_views += 1
            self.report.errors.append(f"stale view at action {self.report.actions}: {self.w.config()}")

    def run(self, n_actions: int, checkpoint_every: int = 50, progress: Callable[[int], None] | None = None) -> SoakReport:
        """Random actions with a checkpoint every `checkpoint_every`. Memory is read at the same state
        (random weights, the opening configuration, caches emptied, free heap returned) every tenth
        of the run; warm-up is the first half (native caches such as oneDNN's kernels and the
        allocator's arenas fill up and plateau there), and rss_growth_mb is the growth after it."""
        weights = [a[0] for a in self.actions]
        start = time.perf_counter()
        sample_every = max(checkpoint_every, (n_actions // 10) // checkpoint_every * checkpoint_every)
        old_hook = sys.excepthook

        def on_exception(kind, value, tb) -> None:  # exceptions raised inside Qt slots land here
            self.report.errors.append("".join(traceback.format_exception(kind, value, tb))[-600:])

        def on_qt_message(mode, context, message) -> None:
            if mode != QtMsgType.QtDebugMsg and not message.startswith(IGNORED_QT):
                self.report.qt_warnings.append(message)

        sys.excepthook = on_exception
        previous_handler = qInstallMessageHandler(on_qt_message)
        self.w.runner.failed.connect(self._on_failure)
        try:
            self.warm_up()
            self.back_to_start()
            self.report.rss_series_mb.append(round(rss_mb(), 1))
            for i in range(n_actions):
                _, name, act = self.rng.choices(self.actions, weights=weights)[0]
                self.report.action_counts[name] = self.report.action_counts.get(name, 0) + 1
                t0 = time.perf_counter()
                try:
                    act()
                except Exception:
                    self.report.errors.append(f"{name}: {traceback.format_exc()[-600:]}")
                spent = self.report.action_seconds.get(name, 0.0) + time.perf_counter() - t0
                self.report.action_seconds[name] = round(spent, 2)
                self.report.actions += 1
                self.app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 1)
                if (i + 1) % checkpoint_every == 0:
                    self.checkpoint()
                    if (i + 1) % sample_every == 0 and i + 1 < n_actions:
                        config = self.w.config()
                        self.back_to_start()
                        self.report.rss_series_mb.append(round(rss_mb(), 1))
                        self.w.config_panel.set_config(config)
                    if progress:
                        progress(i + 1)
            self.checkpoint()
            self.back_to_start()
            self.report.rss_series_mb.append(round(rss_mb(), 1))
            series = self.report.rss_series_mb
            self.report.rss_growth_mb = round(series[-1] - series[len(series) // 2], 1)
        finally:
            sys.excepthook = old_hook
            qInstallMessageHandler(previous_handler)
        self.report.seconds = round(time.perf_counter() - start, 1)
        return self.report

    def _on_failure(self, failure: Any) -> None:
        if "details in" in failure.message or "Error:" in failure.message:  # not a refused input: a bug
            self.report.errors.append(f"worker: {failure.message}")


def threads_left() -> int:
    return len([t for t in threading.enumerate() if t.name.startswith("sandbox-runner")])
