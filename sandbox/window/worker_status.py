"""What the window shows of its compute worker: the devices once it has started, and one sentence when
it died and was replaced (sandbox/runner/process_runner.py); nothing the window holds is touched by a death."""

from __future__ import annotations

from typing import TYPE_CHECKING

import PySide6
from PySide6.QtWidgets import QLabel

from sandbox.jobs.types import WorkerInfo
from sandbox.runner.worker_child import IDLE_DEATH

if TYPE_CHECKING:
    from sandbox.window.main_window import MainWindow


def device_text(info: WorkerInfo) -> str:
    return f"{info.device_name} · torch {info.torch_version} · Qt {PySide6.QtCore.qVersion()}"


class WorkerStatus:
    def __init__(self, window: MainWindow, pick_dtype: bool) -> None:
        self.window = window
        self.pick_dtype = pick_dtype  # a first start: the dtype follows the device once it is known
        self.label = QLabel(device_text(window.runner.info))
        self.label.setToolTip("Where timing runs (auto) and the versions in use. All compute runs in a worker "
                              "process: a crash there restarts it without closing this window.")
        self.last_death = ""
        window.statusBar().addPermanentWidget(self.label)
        window.statusBar().messageChanged.connect(self.on_message)
        window.runner.ready.connect(self.on_ready)
        window.runner.worker_died.connect(self.on_worker_died)

    def on_message(self, text: str) -> None:
        """A message that this label would cut takes the whole bar while it shows (the label comes back after it);
        the bar's tooltip holds it whole, for one longer than the window."""
        bar = self.window.statusBar()
        room = bar.width() - self.label.sizeHint().width() - 3 * bar.fontMetrics().averageCharWidth()
        self.label.setVisible(bar.fontMetrics().horizontalAdvance(text) <= room)
        bar.setToolTip(text)

    def device_kind(self, choice: str) -> str:
        """What a device choice runs on, as the timing panel names it: CPU, CUDA or MPS (auto: the best)."""
        if choice == "auto":
            devices = self.window.runner.info.devices
            choice = "cuda" if "cuda" in devices else "mps" if "mps" in devices else "cpu"
        return choice.upper()

    def on_ready(self, info: WorkerInfo) -> None:
        self.label.setText(device_text(info))
        combo = self.window.config_panel.device
        known = {combo.itemText(i) for i in range(combo.count())}
        missing = [d for d in info.devices if d not in known]
        if missing:
            combo.addItems(missing)  # a saved choice (cuda) is picked once it exists
            self.window.config_panel.set_device_choice(self.window.saved_device)
        if self.pick_dtype and self.window.config().dtype != info.default_dtype:
            self.window.config_panel.set_config(self.window.config().with_(dtype=info.default_dtype))
        self.pick_dtype = False

    def on_worker_died(self, message: str) -> None:
        """The pins, sweep rows and workspace are the window's: they are kept as they are."""
        w = self.window
        self.last_death = message
        w.statusBar().showMessage(message, 20000)
        if message.endswith(IDLE_DEATH + "."):
            return  # an idle worker replaced: the status bar says so, nothing on screen changed
        w.info.setText(f"<span style='color:#dc2626'>{message}</span>")
        w.updating.stop()  # "Updating the heatmaps…" must not cover the sentence: the request is not coming
        w.last_error = message  # until the next heatmaps, which clear it
        if w.measuring is not None or w.timing.busy.isVisible():
            w.timing.show_error("timing skipped: the compute worker stopped during this timing; press Measure now "
                                "(Ctrl+M) to run it again.", skipped=True)
        w.measuring = None
