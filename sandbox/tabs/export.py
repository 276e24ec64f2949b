"""Export in the window: the manifest of what is shown, the export dialog and what it writes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt

from core.files.atomic import ExportError
from core.kinds.registry import kind_of
from core.report import build_report
from sandbox.jobs.types import HeatmapResult
from sandbox.state.app_state import AppState
from sandbox.state.shown import Shown
from sandbox.tabs.export_render import ExportJob, export
from sandbox.window.export_folder import ExportFolder
from sandbox.window.notices import Notices
from widgets.export.dialog import ExportDialog
from widgets.export.frame import ColourBar, Frame
from widgets.maps.head_view import HeadView
from widgets.maps.heatmap_view import HeatmapMosaic

if TYPE_CHECKING:
    from sandbox.tabs.models import ModelController


class ExportController(QObject):
    """The heatmaps on screen, their manifest and what the export dialog writes of them."""

    def __init__(self, state: AppState, notices: Notices, shown: Shown, mosaic: HeatmapMosaic, models: ModelController,
                 folder: ExportFolder, seed: int, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.state, self.notices, self.shown, self.mosaic, self.models = state, notices, shown, mosaic, models
        self.folder, self.seed = folder, seed

    def head_where(self, hm: HeatmapResult) -> dict[str, Any]:
        """A real model's head is named with its model and layer."""
        if hm.model is None or self.models.shape is None:
            return {}
        changed = " (changed)" if hm.model.after is not None else ""
        return {"layer": hm.model.layer, "model_name": self.models.shape.name + changed}

    def frame(self, hm: HeatmapResult, head: int | None) -> Frame:
        """What an exported image says of itself: the model or configuration, layer, head or all heads, the text,
        and for the mosaic (whose colour bar and axis titles sit outside it in the window) the scale."""
        cfg = hm.config
        where = self.head_where(hm)
        spec = hm.layer_spec or cfg.layer_spec()
        what = where.get("model_name") or f"Random weights, {kind_of(spec).label(spec)}"
        layer = where.get("layer", hm.view_layer)
        heads = "all heads" if head is None else f"head {head}" + (
            f" (KV group {head // cfg.group_size})" if cfg.group_size > 1 else "")
        shape = (f"d_model {cfg.d_model:,} · {cfg.n_heads} heads · {cfg.kv_heads} KV heads · head_dim {spec.head_dim}"
                 f" · {'causal' if cfg.causal else 'bidirectional'} · {len(hm.tokens)} tokens")
        text = self.state.view.text if hm.probe == "text" else "the induction probe: random tokens, repeated"
        lines = (shape, f"Text: {text[:160]}{'…' if len(text) > 160 else ''}" if hm.probe == "text" else f"Text: {text}")
        if head is not None:  # the head's own view draws its colour bar and axis titles
            return Frame(f"{what} · layer {layer} · {heads}", lines)
        per_head = self.mosaic.per_head
        vmax = float(hm.probs.max()) if hm.probs.size and not per_head else 1.0
        vmax = float(self.mosaic.vmax[0]) if not per_head and len(self.mosaic.vmax) else vmax
        label = "attention weight, each head to its own max" if per_head else "attention weight, one scale"
        return Frame(f"{what} · layer {layer} · {heads}", lines,
                     ColourBar(self.mosaic.colormap.currentText(), vmax, label, per_head),
                     x_title="key token (each tile: queries down, keys across)", y_title="query token")

    def manifest(self) -> dict[str, Any]:
        hm = self.shown.heatmaps()
        t = self.shown.last_timing()
        view = self.state.view
        timing = t.result.to_report() if t and hm and t.measures(hm.config, view.device) else None
        cfg = hm.config if hm else view.config
        arch, model = self.models.pin_context(hm) if hm else (None, None)
        probe = hm.probe if hm else view.probe
        return {
            "title": "Attention Sandbox heatmaps",
            "report": build_report(cfg, timing, arch, model, model["layer"] if model else 0),
            "architecture": arch.to_dict() if arch is not None else cfg.architecture().to_dict(),
            "model": model,
            "device": view.device,
            "seed": self.seed,
            "probe": probe,
            # What the tokens were read from: the typed text, or the induction probe (its own tokens).
            "text": view.text if probe == "text" else None,
            "typed_text": view.text,
            "tokens": hm.tokens if hm else [],
            "colormap": self.mosaic.colormap.currentText(),
            "scale": "per head" if self.mosaic.per_head else "shared",
        }

    def export_to(self, job: ExportJob) -> list[Path]:
        """Export the current view; raises ExportError with a sentence on failure."""
        hm = self.shown.heatmaps()
        if hm is None:
            raise ExportError("there are no heatmaps to export yet.")
        if not self.shown.is_current():  # else the title and manifest would name a text the maps are not of
            raise ExportError("the heatmaps shown are not of the text and configuration in the controls yet (they "
                              "are being computed, or could not be: see the line above the maps); export once they "
                              "are shown.")
        widget = None
        view: HeadView | None = None
        if job.fmt in ("png", "svg"):
            if job.head is None:
                widget = self.mosaic.glw
            else:
                view = HeadView(hm.probs[job.head], hm.tokens, job.head, hm.config.group_size,
                                self.mosaic.colormap.currentText(), **self.head_where(hm))
                view.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen)
                if not job.decorations:
                    view.bare()  # its own bar and axis titles go too: "off" means the map alone
                view.show()
                widget = view.plot
        try:
            return export(job, widget, hm.probs, hm.tokens, self.manifest(), self.frame(hm, job.head))
        finally:
            if view is not None:
                view.close()
                view.deleteLater()

    def open_dialog(self, head: int | None = None) -> None:
        if self.shown.heatmaps() is None:
            self.notices.status("There are no heatmaps to export yet.", 5000)
            return
        dialog = self.make_dialog(head)
        if dialog.exec() != ExportDialog.DialogCode.Accepted:
            return
        self.export_chosen(dialog)

    def make_dialog(self, head: int | None = None) -> ExportDialog:
        hm = self.shown.heatmaps()
        n_heads = len(hm.probs) if hm is not None else 0
        return ExportDialog(n_heads, self.folder.start(), head, self.notices.parent)

    def export_chosen(self, dialog: ExportDialog) -> list[Path]:
        """Write what the accepted dialog asks for; a failure is an alert, never an exception."""
        try:
            c = dialog.choice()
            written = self.export_to(ExportJob(c.path, c.fmt, c.scale, c.head, c.decorations))
        except (ExportError, ValueError) as exc:
            self.notices.alert("Export failed", str(exc))
            return []
        self.folder.remember(c.path.parent)
        self.notices.status("Exported " + ", ".join(str(p) for p in written), 10000)
        return written

