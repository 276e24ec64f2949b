"""Head roles in the window: the probe picker, badges on every tile, the Roles tab, CSV export."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QSignalBlocker
from PySide6.QtWidgets import QFileDialog

from core.files.atomic import ExportError, write_text_atomic
from core.kinds.registry import kind_of
from core.models.head_roles import ROLES
from sandbox.jobs.types import Failure, HeatmapResult
from sandbox.state.app_state import AppState
from sandbox.state.view import View
from sandbox.window.notices import Notices
from widgets.common.wheel import FocusCombo
from widgets.maps.heatmap_view import HeatmapMosaic
from widgets.roles.badges import badges_for, legend_html, legend_tooltip
from widgets.roles.panel import RolesPanel


class RolesController(QObject):
    """The probe is the state's (`probe`): the combo writes it, and follows it when a pin or a test sets it."""

    def __init__(self, state: AppState, runner: Any, notices: Notices, mosaic: HeatmapMosaic,
                 open_head: Callable[[int, int], None], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.state, self.runner, self.notices, self.mosaic = state, runner, notices, mosaic
        self.open_head = open_head  # (layer, head): a real model's head, or the design's
        self.panel = RolesPanel()
        self.probe_combo = FocusCombo()
        self.probe_combo.addItem("your text", "text")
        self.probe_combo.addItem("induction probe", "induction")
        self.probe_combo.setToolTip("What the heads read: your text, or the standard induction probe (a seeded random "
                                    "token sequence repeated twice), which makes induction heads show (Ctrl+I)")
        self.probe_combo.currentIndexChanged.connect(self._on_probe_combo_changed)
        self.panel.probe_requested.connect(self.set_probe)
        self.panel.head_requested.connect(lambda layer, head: self.open_head(layer, head))
        self.panel.export_requested.connect(self._ask_export)
        self.result: HeatmapResult | None = None
        runner.failed.connect(self._on_runner_failed)
        state.changed.connect(self._on_state_changed)

    @property
    def probe(self) -> str:
        return self.state.view.probe

    def set_probe(self, probe: str) -> None:
        index = self.probe_combo.findData(probe)
        if index >= 0:
            self.probe_combo.setCurrentIndex(index)

    def _on_probe_combo_changed(self, _index: int) -> None:
        self.state.update(probe=self.probe_combo.currentData())

    def _on_state_changed(self, new: View, old: View) -> None:
        if new.probe == old.probe:
            return
        if self.probe_combo.currentData() != new.probe:
            with QSignalBlocker(self.probe_combo):  # the combo follows the state without writing it back
                self.probe_combo.setCurrentIndex(self.probe_combo.findData(new.probe))
        self.panel.set_pending(new.probe)  # said at once; the scores follow the heatmaps

    def _on_runner_failed(self, failure: Failure) -> None:
        if failure.stage == "heatmaps" and self.runner.is_current(failure.request_id):
            self.panel.set_failed(failure.message)

    def toggle_probe(self) -> None:
        self.probe_combo.setCurrentIndex(1 - self.probe_combo.currentIndex())

    def show(self, result: HeatmapResult) -> None:
        if result.shown_roles is None or result.roles is None:
            return
        self.result = result
        claimed = result.layer_spec is None or not kind_of(result.layer_spec).signed_maps  # signed maps claim none
        self.mosaic.set_badges(badges_for(result.shown_roles, len(result.probs)),
                               legend_html(result.probe) if claimed else "", legend_tooltip(result.probe))
        patterns = result.model.overview if result.model is not None else result.probs
        self.panel.set_scores(result.roles, patterns, result.probe)

    def csv_text(self) -> str:
        assert self.result is not None and self.result.roles is not None
        buf = io.StringIO()
        w = csv.writer(buf)
        L, H = self.result.roles[ROLES[0]].shape
        extra = {k: v for k, v in self.panel.extra.items() if v.shape == (L, H)}  # the Long tab's, when of this model
        w.writerow(["layer", "head", *ROLES, "probe", *(k.replace(" ", "_") for k in extra)])
        for layer in range(L):
            for h in range(H):
                w.writerow([layer, h, *(f"{self.result.roles[r][layer, h]:.6g}" for r in ROLES), self.result.probe,
                            *(f"{v[layer, h]:.6g}" for v in extra.values())])
        return buf.getvalue()

    def _ask_export(self) -> None:
        if self.result is None:
            return
        name, _ = QFileDialog.getSaveFileName(self.notices.parent, "Export head scores", "head-scores.csv", "CSV (*.csv)")
        if name:
            self.export(Path(name))

    def export(self, path: Path) -> None:
        try:
            write_text_atomic(path, self.csv_text())
        except ExportError as exc:
            self.notices.alert("Export failed", str(exc))
            return
        self.notices.status(f"Wrote {path}", 6000)
