"""Sweeps in the window: plan from the controls, run on the runner's worker, plot, caption, export."""

from __future__ import annotations

import csv
import io
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QFileDialog

from core.arch.config import AttentionConfig
from core.files.atomic import ExportError, staged, write_text_atomic
from core.study.lessons import find_lesson
from core.study.sweep import (
    SweepResult,
    flatten,
    knob_value,
    parse_knob_values,
    plan_sweep,
    point_config,
)
from sandbox.jobs.types import SweepDone, SweepJob, SweepProgress, SweepStep
from sandbox.state.app_state import AppState
from sandbox.tabs.export_render import render_png
from sandbox.window.export_folder import ExportFolder
from sandbox.window.notices import Notices
from widgets.sweep.panel import SweepPanel

if TYPE_CHECKING:
    from core.study.workspace import Pin

SWEEP_BUDGET_S = 0.1  # per measurement: a sweep point takes four measurements


def generic_caption(result: SweepResult) -> str:
    rows = result.ok_rows()
    if not rows:
        return no_valid_point(result)
    skipped = len([r for r in result.rows if r.status == "skipped"])
    text = f"{len(rows)} points of {result.knob} from {rows[0].value} to {rows[-1].value}"
    return text + (f"; {skipped} values skipped (see the notes)" if skipped else "") + "."


def no_valid_point(result: SweepResult) -> str:
    """Why a sweep drew nothing: each value it skipped or that failed, with its reason, or that it stopped first."""
    if not result.rows:
        return "The sweep stopped before its first point."
    by_reason: dict[str, list[object]] = {}
    for r in result.rows:
        if r.status != "ok":  # one line a reason, its values listed: many failing values must not flood the caption
            generic = r.reason.replace(f"{result.knob}={r.value}", f"{result.knob}=N").replace(f" {r.value} ", " N ")
            by_reason.setdefault(generic.rstrip("."), []).append(r.value)
    parts = []
    for reason, values in list(by_reason.items())[:3]:
        shown = ", ".join(map(str, values[:8])) + (f" and {len(values) - 8} more" if len(values) > 8 else "")
        parts.append(f"{result.knob} = {shown}: {reason}")
    more = f"; {len(by_reason) - 3} other reasons in the notes" if len(by_reason) > 3 else ""
    return f"No point of this sweep made a valid configuration ({'; '.join(parts)}{more})."


class SweepController(QObject):
    def __init__(self, state: AppState, runner: Any, notices: Notices, folder: ExportFolder,
                 pins: Callable[[], list[Pin]],
                 plan_series: Callable[[list[AttentionConfig | None], str], tuple[str, list[float | None], float] | None],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.state, self.runner, self.notices, self.folder = state, runner, notices, folder
        self.pins = pins  # the Compare tab's pins: those on a sweep's line are marked on its plots
        self.plan_series = plan_series  # the Plan tab's memory a GPU of each point, once that tab has been used
        self.panel = SweepPanel()
        self.knob = ""
        self.base: AttentionConfig | None = None
        self.caption_fn = generic_caption
        self.result: SweepResult | None = None
        self.running_id: int | None = None  # the sweep this panel shows running, until its result arrives
        self.panel.run_requested.connect(self.run)
        self.panel.lesson_requested.connect(self.run_lesson)
        self.panel.cancel_requested.connect(self.cancel)
        self.panel.export_png_requested.connect(lambda: self._ask_path("png"))
        self.panel.export_csv_requested.connect(lambda: self._ask_path("csv"))
        self._ids = itertools.count(1)  # each sweep's id: the newest runs, an older one's reports are dropped
        runner.progress.connect(self._on_runner_progress)
        runner.done.connect(lambda kind, payload: self._on_runner_sweep_done(payload) if kind == "sweep" else None)

    def run(self, knob: str, values_text: str, timed: bool) -> int | None:
        try:
            values = parse_knob_values(knob, values_text)
            points = plan_sweep(self.state.view.config, knob, values)
        except ValueError as exc:
            self.panel.show_error(str(exc))
            return None
        return self._start(knob, self.state.view.config, points, timed, generic_caption, f"{knob} sweep")

    def run_lesson(self, key: str, timed: bool) -> int | None:
        lesson = find_lesson(key)
        self.panel.show_knob(lesson.knob, ",".join(map(str, lesson.values)))
        base = lesson.base_config(self.state.view.config)
        points = plan_sweep(base, lesson.knob, lesson.values)
        return self._start(lesson.knob, base, points, timed, lesson.caption, lesson.title)

    def _start(self, knob, base, points, timed, caption_fn, label) -> int:
        self.knob, self.base, self.caption_fn = knob, base, caption_fn
        self.panel.caption.setStyleSheet("font-weight: bold;")
        self.panel.caption.setText(f"{label}: {len(points)} points" + (", timed" if timed else ", counts only") + "…")
        self.panel.set_running(len(points), label)
        self.result = None
        self.running_id = sweep_id = next(self._ids)  # set first: a sync runner ends the sweep inside submit
        self.runner.submit(SweepJob(sweep_id, points, self.state.view.device if timed else "", SWEEP_BUDGET_S,
                                    SweepResult(knob, timed=timed)))
        return sweep_id

    def cancel(self) -> None:
        """The user's Cancel: stops the sweep this panel runs, and nothing when none runs (a cancel sent with no
        sweep running, or for an older one, must not stop the next)."""
        if self.running_id is not None:
            self.runner.cancel("sweep", self.running_id)

    def _on_runner_progress(self, kind: str, p: SweepProgress | SweepStep) -> None:
        if kind != "sweep" or p.sweep_id != self.running_id:
            return
        if isinstance(p, SweepStep):  # the timing step now running in a point
            self.panel.set_step(p.text)
            return
        note = f"{self.knob}={p.row.value}: {p.row.status} — {p.row.reason}" if p.row.status != "ok" else ""
        self.panel.set_progress(p.done, p.total, p.eta_s, note)

    def _on_runner_sweep_done(self, payload: SweepDone) -> None:
        sweep_id, result = payload.sweep_id, payload.result
        if sweep_id != self.running_id:
            return
        self.running_id = None
        self.result = result
        rows = result.ok_rows()
        # a sweep stopped before its first point (cancelled, or its worker killed) has no rows to plan a line for
        configs = [pt.config for pt in plan_sweep(self.base, self.knob, [r.value for r in rows])] if (
            self.base and rows) else []
        caption = self.caption_fn(result) if rows else no_valid_point(result)  # a lesson's caption needs points
        self.panel.show_result(result, self.knob, caption, self.pinned_marks(),
                               self.plan_series(configs, self.knob) if len(configs) == len(rows) else None)

    def pinned_marks(self) -> list[tuple[int | str, str]]:
        """Pins that lie on this sweep's line: the base configuration with only the knob changed."""
        if self.base is None:
            return []
        marks = []
        for pin in self.pins():
            value = pin.config.kv_format if self.knob == "kv_dtype" else knob_value(pin.config, self.knob)
            try:
                if point_config(self.base, self.knob, value) == pin.config:
                    marks.append((value, pin.name))
            except (ValueError, TypeError):  # a pin of another kind has no value of this kind's knob
                continue
        return marks

    # -- export ----------------------------------------------------------------------------------
    def _ask_path(self, fmt: str) -> None:
        if self.result is None:
            self.panel.show_error("Run a sweep first.")
            return
        start = self.folder.start() / f"sweep-{self.knob}.{fmt}"  # where the last export went
        name, _ = QFileDialog.getSaveFileName(self.notices.parent, "Export sweep", str(start),
                                              "PNG (*.png)" if fmt == "png" else "CSV (*.csv)")
        if name:
            self.export(Path(name), fmt)

    def csv_text(self) -> str:
        assert self.result is not None
        records = [{"value": r.value, "status": r.status, "reason": r.reason, "seconds": round(r.seconds, 4),
                    "partial": self.result.partial, **flatten(r.report or {})} for r in self.result.rows]
        fields = list(dict.fromkeys(k for rec in records for k in rec))
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=fields)
        w.writeheader()
        w.writerows(records)
        return buf.getvalue()

    def export(self, path: Path, fmt: str) -> None:
        try:
            if fmt == "csv":
                write_text_atomic(path, self.csv_text())
            else:
                image = render_png(self.panel.plots, 2.0)
                with staged([path]) as (tmp,):
                    if not image.save(str(tmp), "PNG"):
                        raise ExportError(f"could not write {path}.")
        except ExportError as exc:
            self.notices.alert("Export failed", str(exc))
            return
        self.folder.remember(path.parent)
        self.notices.status(f"Wrote {path}", 6000)
