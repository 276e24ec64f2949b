"""What the window shows of its compute worker: the devices once it has started, and one sentence when
it died and was replaced (sandbox/runner/process_runner.py); nothing the window holds is touched by a death."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import PySide6
from PySide6.QtWidgets import QLabel

from sandbox.jobs.types import WorkerInfo
from sandbox.runner.worker_child import IDLE_DEATH
from sandbox.window.notices import Notices
from widgets.controls.config_panel import ConfigPanel


def device_text(info: WorkerInfo) -> str:
    return f"{info.device_name} · torch {info.torch_version} · Qt {PySide6.QtCore.qVersion()}"


class WorkerStatus:
    def __init__(self, runner: Any, notices: Notices, config_panel: ConfigPanel, saved_device: str, pick_dtype: bool,
                 on_death: Callable[[str], None]) -> None:
        self.runner, self.notices, self.config_panel = runner, notices, config_panel
        self.saved_device = saved_device  # picked once the worker says the device exists (cuda)
        self.pick_dtype = pick_dtype  # a first start: the dtype follows the device once it is known
        self.on_death = on_death  # what the window shows of a worker's death
        self.label = QLabel(device_text(runner.info))
        self.label.setToolTip("Where timing runs (auto) and the versions in use. All compute runs in a worker "
                              "process: a crash there restarts it without closing this window.")
        self.last_death = ""
        notices.bar.addPermanentWidget(self.label)
        notices.bar.messageChanged.connect(self.on_message)
        runner.ready.connect(self.on_ready)
        runner.worker_died.connect(self.on_worker_died)

    def on_message(self, text: str) -> None:
        """A message that this label would cut takes the whole bar while it shows (the label comes back after it);
        the bar's tooltip holds it whole, for one longer than the window."""
        bar = self.notices.bar
        room = bar.width() - self.label.sizeHint().width() - 3 * bar.fontMetrics().averageCharWidth()
        self.label.setVisible(bar.fontMetrics().horizontalAdvance(text) <= room)
        bar.setToolTip(text)

    def device_kind(self, choice: str) -> str:
        """What a device choice runs on, as the timing panel names it: CPU, CUDA or MPS (auto: the best)."""
        if choice == "auto":
            devices = self.runner.info.devices
            choice = "cuda" if "cuda" in devices else "mps" if "mps" in devices else "cpu"
        return choice.upper()

    def on_ready(self, info: WorkerInfo) -> None:
        self.label.setText(device_text(info))
        panel = self.config_panel
        combo = panel.device
        known = {combo.itemText(i) for i in range(combo.count())}
        missing = [d for d in info.devices if d not in known]
        if missing:
            combo.addItems(missing)  # a saved choice (cuda) is picked once it exists
            panel.set_device_choice(self.saved_device)
        if self.pick_dtype and panel.config().dtype != info.default_dtype:
            panel.set_config(panel.config().with_(dtype=info.default_dtype))
        self.pick_dtype = False

    def on_worker_died(self, message: str) -> None:
        """Said in the status bar; an idle worker replaced changes nothing on screen, any other death is the window's
        to show (on_death)."""
        self.last_death = message
        self.notices.status(message, 20000)
        if message.endswith(IDLE_DEATH + "."):
            return
        self.on_death(message)
