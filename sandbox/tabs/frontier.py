"""The Frontier tab's controller: runs the KV frontier of the open real model on the compute worker (one
point a step, the chart growing as they come), cancels it, opens or pins a point in the Heatmaps tab,
and exports the chart (PNG or SVG) and the table (CSV), each with a manifest."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import SignalInstance
from PySide6.QtWidgets import QFileDialog, QTabWidget

from core.files.atomic import ExportError, staged
from core.models.catalog import SHIPPED
from core.models.evict.summary import CSV_KEYS as COMPRESS_CSV_KEYS
from core.models.frontier.summary import BUDGETS, CSV_KEYS
from core.models.kv.methods import FAMILIES, KVMethod
from resources import CALIB_TEXT, EVAL_TEXT
from sandbox.jobs.types import FrontierDone, FrontierJob, FrontierProgress, HeatmapResult
from sandbox.state.app_state import AppState
from sandbox.tabs.export_render import ours as _ours
from sandbox.tabs.export_render import render_png, versions, write_svg
from sandbox.window.export_folder import ExportFolder
from sandbox.window.notices import Notices
from widgets.frontier.panel import FrontierPanel

if TYPE_CHECKING:
    from sandbox.tabs.models import ModelController
    from widgets.controls.config_panel import ConfigPanel

LESSON_MODEL = "smollm2-135m"


class FrontierTab:
    def __init__(self, state: AppState, runner: Any, notices: Notices, models: ModelController, config_panel: ConfigPanel,
                 tabs: QTabWidget, folder: ExportFolder, heatmaps_shown: SignalInstance,
                 costs_now: Callable[[], object], pin_current: Callable[[], object], request: Callable[[], object]) -> None:
        self.state, self.runner, self.notices, self.models, self.config_panel = state, runner, notices, models, config_panel
        self.tabs, self.folder = tabs, folder
        self.costs_now = costs_now  # the costs panel, due now (a pin keeps what is on screen)
        self.pin_current = pin_current  # Compare's pin of what is on screen
        self.request = request  # the heatmaps of the View again (a point already on screen, to pin)
        self.panel = FrontierPanel()
        self.run_id = 0
        self.newest = 1  # the first run id this tab listens to
        self.partial: dict[str, Any] | None = None
        self.run_model = ("", "causal")  # (name, kind) of the model the run in progress is of
        runner.progress.connect(lambda kind, progress: self._on_progress(progress) if kind == "frontier" else None)
        runner.done.connect(lambda kind, done: self._on_done(done) if kind == "frontier" else None)
        p = self.panel
        p.run_requested.connect(self.run)
        p.compress_requested.connect(self.run_compress)
        p.cancel_requested.connect(lambda: runner.cancel("frontier"))
        p.open_model_requested.connect(models.load)
        p.open_point_requested.connect(self.open_point)
        p.pin_point_requested.connect(lambda point: self.open_point(point, pin=True))
        self.pin_pending = False  # a point asked to be pinned waits for its heatmaps
        self.pin_expect: tuple[str | None, int] = (None, 0)  # its (KV method label, KV heads) on screen
        heatmaps_shown.connect(self._on_heatmaps)
        runner.failed.connect(lambda f: setattr(self, "pin_pending", self.pin_pending and f.stage != "heatmaps"))
        p.export_chart_requested.connect(lambda: self._ask_path("chart"))
        p.export_table_requested.connect(lambda: self._ask_path("table"))
        models.changed.connect(self.model_changed)
        self.lesson_pending = False  # the lesson waits for SmolLM2 to open
        runner.failed.connect(lambda f: setattr(self, "lesson_pending", self.lesson_pending and f.stage != "model"))
        runner.failed.connect(self._on_failed)

    def model_changed(self) -> None:
        shape = self.models.shape
        if self.panel.running and (shape is None or shape.name != self.run_model[0]):
            self.runner.cancel("frontier")  # another model: the run in progress is not this one's
            self.newest = self.run_id + 1  # and whatever it still says is dropped
            self.panel.set_running(False)
            self.notices.status(f"The frontier of {self.run_model[0]} was cancelled: another model "
                                                "is open.", 8000)
        self.panel.set_model(shape.name if shape is not None else None, shape.kind if shape is not None else "causal")
        if self.lesson_pending:  # the lesson's model, or another one the user chose meanwhile: asked once only
            self.lesson_pending = False
            if self.models.key == LESSON_MODEL:
                self.run(tuple(FAMILIES))

    def run_lesson(self) -> None:
        """The Sweep tab's lesson "Which KV saving costs least": SmolLM2's frontier, every method, read at 1/3
        of its cache (the sentence under the chart is the caption)."""
        self.tabs.setCurrentIndex(self.tabs.indexOf(self.panel))
        self.panel.budget.setValue(BUDGETS.index(1 / 3))
        for box in self.panel.boxes.values():
            box.setChecked(True)
        if self.panel.running:
            return
        if self.models.key == LESSON_MODEL:
            self.run(tuple(FAMILIES))
            return
        self.lesson_pending = True
        self.panel.status.setText(f"Opening {SHIPPED[LESSON_MODEL]} for the lesson…")
        self.models.load(LESSON_MODEL)

    def run_from_menu(self) -> None:
        """Ctrl+Shift+R anywhere: the Frontier tab, and its run when a model is open."""
        self.tabs.setCurrentWidget(self.panel)
        if self.panel.run.isEnabled():
            self.panel.run.click()
        elif not self.panel.running:
            self.panel.show_error("Open a real model first (the buttons above, or the Weights list).")

    def cancel(self) -> None:
        if self.panel.running and self.panel.cancel.isEnabled():
            self.panel.cancel.click()

    def run(self, families: tuple[str, ...]) -> None:
        key = self.models.key
        if key is None:
            self.panel.show_error("No real model is open; open one first.")
            return
        self.partial = None
        shape = self.models.shape
        self.run_model = (shape.name, shape.kind) if shape is not None else ("", "causal")
        self.panel.set_running(True)
        self.panel.status.setText("Running: the unchanged model…")
        self.run_id = self.newest = self.run_id + 1  # set first: a synchronous runner reports inside submit
        self.runner.submit(FrontierJob(self.run_id, key, tuple(families)))

    def run_compress(self, settings: dict[str, Any]) -> None:
        """The compress protocol on the worker: its families, eviction presses, and ratios or a budget."""
        key = self.models.key
        if key is None:
            self.panel.show_error("No real model is open; open one first.")
            return
        shape = self.models.shape
        if shape is not None and shape.kind != "causal":
            self.panel.show_error(f"{shape.name} is an encoder: it keeps no KV cache to evict from. Open a causal "
                                  "model (SmolLM2-135M), or choose the window protocol.")
            return
        self.partial = None
        self.run_model = (shape.name, shape.kind) if shape is not None else ("", "causal")
        self.panel.set_running(True)
        self.panel.status.setText("Running: the prefill and the unchanged cache…")
        self.run_id = self.newest = self.run_id + 1
        self.runner.submit(FrontierJob(self.run_id, key, tuple(settings["families"]), protocol="compress",
                                       presses=tuple(settings["presses"]), ratios=tuple(settings["ratios"]),
                                       budget_mib=settings["budget_mib"], budget_gpu=settings["budget_gpu"],
                                       sequences=settings["sequences"]))

    def _on_progress(self, progress: FrontierProgress) -> None:
        if progress.run_id < self.newest:  # an earlier run's last words
            return
        if progress.point is None:  # the run's start: its steps and the first guess of its time
            self.panel.show_progress(progress.done, progress.total, progress.eta_s, progress.text)
            return
        if progress.point["method"] == "baseline":
            self.partial = {"model": self.run_model[0], "kind": self.run_model[1],
                            "baseline": progress.point, "points": [], "samples": 0, "context": 0, "seconds": 0.0,
                            "complete": False, "protocol": progress.point.get("protocol", "window"),
                            "continuation": 0, "budget_mib": progress.point.get("budget_mib"),
                            "budget_words": progress.point.get("budget_words", "")}
        elif self.partial is not None:
            self.partial["points"].append(progress.point)
        if self.partial is not None:
            self.panel.show_result(self.partial)
        self.panel.show_progress(progress.done, progress.total, progress.eta_s, progress.text)

    def _on_done(self, done: FrontierDone) -> None:
        if done.run_id < self.newest:
            return
        self.panel.set_running(False)
        if done.result is not None:
            self.panel.show_result(done.result, " Read from the cache." if done.cached else "")
            return
        if done.message == "cancelled":
            if self.partial is not None:  # the points done, the unchanged model's alone included, stay drawn
                self.panel.show_result(self.partial)
            else:
                self.panel.status.setText("Cancelled before the unchanged model was measured: nothing to draw yet.")
            return
        self.panel.show_error(f"The frontier stopped: {done.message}")

    def open_point(self, point: dict[str, Any] | None, pin: bool = False) -> bool:
        """A point in the Heatmaps tab, every layer changed as the point says, beside the trained heads:
        pooled heads through n_kv_heads, the other methods as a KV point the model picker shows (and
        clears). pin: pin it once its heatmaps are on screen."""
        if point is None or point.get("method") in (None, "baseline") or self.models.shape is None:
            return False
        shape = self.models.shape
        if self.panel.result is None or self.panel.result["model"] != shape.name:
            self.panel.show_error("That point is another model's; run this model's frontier first.")
            return False
        method = point["method"]
        try:
            if method == "heads":
                cfg = self.state.view.config.with_(n_heads=shape.n_heads, n_kv_heads=int(point["setting"]))
            else:
                cfg = self.state.view.config.with_(n_heads=shape.n_heads, n_kv_heads=shape.n_kv_heads)
        except ValueError as exc:
            self.panel.show_error(f"Cannot show it: {exc}")
            return False
        kv = (method, point["setting"], int(point.get("sinks") or 0))
        if point.get("family") == "evict":  # the press at its ratio on the user's text, its evicted keys grey
            kv = ("evict", f"{method}@{point['setting']}", 0)
        label = KVMethod(*kv).label if method != "heads" else None
        self.pin_pending = pin  # the heatmaps of the request this makes are the point's: any before it are stale
        self.pin_expect = (label, cfg.kv_heads)
        before = self.state.view
        slow = " (a latent point fits its bases on the calibration text first: a few seconds)" if (
            method.startswith("latent")) else ""
        self.notices.status(f"Showing {label or point['label']} in every layer{slow}.", 8000)  # before its request:
        self.tabs.setCurrentIndex(0)  # a refusal of the request says so after it
        with self.state.held():  # the KV point, every layer, the heads: one request
            if method == "heads":
                self.models.clear_kv_point()
            else:
                self.models.show_kv_point(kv, str(label))
            self.models.picker.all_layers.setChecked(True)
            self.config_panel.set_config(cfg)
        if self.state.view == before and pin:
            self.request()  # the point is on screen already: its heatmaps again, for the pin
        self.costs_now()
        return True

    def _on_failed(self, failure: Any) -> None:
        """An eviction point the user's text cannot show (too short for the press's window) is cleared, so the
        Model box and the costs say no point is shown; the reason stays in the status bar."""
        kv = self.models.kv_method
        if failure.stage != "heatmaps" or kv is None or kv[0] != "evict" or not self.runner.is_current(
                failure.request_id):
            return
        self.models.clear_kv_point()
        self.notices.status(f"The eviction point is not shown: {failure.message}", 20000)

    def _on_heatmaps(self, result: HeatmapResult) -> None:
        """Pin the point asked for, once its heatmaps are the ones on screen."""
        if not self.pin_pending or result.model is None or not self.runner.is_current(result.request_id):
            return
        self.pin_pending = False
        view = (result.model.fidelity.get("kv_method"), result.config.kv_heads)
        if view != self.pin_expect:  # the user changed the view before the point's maps came: not that point
            self.notices.status("Not pinned: the view changed before the point's heatmaps came; pin it again.", 8000)
            return
        self.costs_now()  # the pin keeps the costs of what is on screen: due now, not after the next paint
        self.pin_current()

    # -- export ----------------------------------------------------------------------------------
    def manifest(self, file: str = "") -> dict[str, Any]:
        r = self.panel.result or {}
        selected = self.panel.chart.selected
        return {"title": "Attention Sandbox KV frontier", "file": file, "model": r.get("model"), "kind": r.get("kind"),
                "protocol": r.get("protocol", "window"), "continuation": r.get("continuation"),
                "budget_mib": r.get("budget_mib"),
                "budget": self.panel.budget_label.text(), "budget_sentence": self.panel.sentence.text(),
                "selected_point": selected["label"] if selected else None,
                "model_key": self.models.key, "shipped": self.models.key in SHIPPED,
                "evaluation_text": EVAL_TEXT.name, "calibration_text": CALIB_TEXT.name,
                "samples": r.get("samples"), "context": r.get("context"), "complete": r.get("complete", True),
                "methods": sorted({p["method"] for p in r.get("points", [])}), "versions": versions()}

    def csv_text(self) -> str:
        buf = io.StringIO()
        compress = (self.panel.result or {}).get("protocol") == "compress"
        keys = COMPRESS_CSV_KEYS if compress else CSV_KEYS
        writer = csv.DictWriter(buf, fieldnames=keys, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(self.panel.rows())
        return buf.getvalue()

    def _ask_path(self, what: str) -> None:
        if self.panel.result is None:
            self.panel.show_error("run the frontier first.")
            return
        result = self.panel.result or {}
        model = f"{result.get('model', 'model')}-{result.get('protocol', 'window')}".replace(" ", "-")
        folder = self.folder.start()
        if what == "table":
            name, chosen = QFileDialog.getSaveFileName(self.notices.parent, "Export frontier table",
                                                       str(folder / f"frontier-{model}-table.csv"), "CSV (*.csv)")
        else:
            name, chosen = QFileDialog.getSaveFileName(self.notices.parent, "Export frontier chart", str(folder / f"frontier-{model}"
                                                       "-chart.png"), "PNG (*.png);;SVG (*.svg)")
        if not name:
            return
        path = Path(name)
        self.folder.remember(path.parent)
        if path.suffix.lower() not in (".csv", ".png", ".svg"):  # a name typed without one: the filter's
            path = path.with_name(path.name + ("." + chosen.split("*.")[-1].rstrip(")") if "*." in chosen else ".csv"))
        try:
            self.export(path)
        except (ValueError, OSError) as exc:  # OSError: a name the file system refuses (too long, a file as folder)
            self.notices.alert("Export failed", str(exc) if isinstance(exc, ValueError) else
                              f"cannot write {path.name[:80]}: {exc.strerror or exc}; choose another name or folder.")

    def export(self, path: Path) -> list[Path]:
        """path's suffix says what: .csv the table, .png or .svg the chart; a .json manifest beside it."""
        suffix = path.suffix.lower()
        if suffix not in (".csv", ".png", ".svg"):
            raise ValueError(f"export the frontier as .csv, .png or .svg, not {path.suffix or 'no suffix'}.")
        manifest = path.with_name(path.name + ".json")  # one a file: a PNG and an SVG of one name keep both
        if manifest.exists() and not _ours(manifest):
            raise ValueError(f"{manifest.name} exists beside it and is not an Attention Sandbox manifest; choose "
                             "another name, so that it is not overwritten.")
        try:
            with staged([path, manifest]) as (tmp, tmp_manifest):  # both files, or neither
                if suffix == ".csv":
                    tmp.write_text(self.csv_text(), encoding="utf-8")
                else:
                    self._write_chart(tmp, suffix)
                tmp_manifest.write_text(json.dumps(self.manifest(path.name), indent=1), encoding="utf-8")
        except ExportError as exc:
            self.notices.alert("Export failed", str(exc))
            return []
        self.notices.status(f"Wrote {path} and {manifest.name}", 6000)
        return [path, manifest]

    def _write_chart(self, path: Path, suffix: str) -> None:
        """The chart as painted (QtSvg for SVG: pyqtgraph's SVG exporter fails on this plot's paths)."""
        plot = self.panel.chart.plot
        with staged([path]) as (tmp,):
            if suffix == ".svg":
                with self.panel.chart.vector_markers(), self.panel.chart.exported_legend():
                    write_svg(plot, tmp, f"KV frontier of {(self.panel.result or {}).get('model', '')}")
            else:
                with self.panel.chart.exported_legend():
                    image = render_png(plot, 2.0)
                if not image.save(str(tmp), "PNG"):
                    raise ExportError(f"could not write {path}.")
