"""Export in the window: the manifest of what is shown, the export dialog and what it writes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QStandardPaths, Qt

from core.files.atomic import ExportError
from core.kinds.registry import kind_of
from core.report import build_report
from sandbox.jobs.types import HeatmapResult
from sandbox.tabs.export_render import ExportJob, export
from widgets.export.dialog import ExportDialog, default_export_folder
from widgets.export.frame import ColourBar, Frame
from widgets.maps.head_view import HeadView

if TYPE_CHECKING:
    from sandbox.window.main_window import MainWindow


class ExportController(QObject):
    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window

    def head_where(self, hm: HeatmapResult) -> dict[str, Any]:
        """A real model's head is named with its model and layer."""
        w = self.window
        if hm.model is None or w.models.shape is None:
            return {}
        changed = " (changed)" if hm.model.after is not None else ""
        return {"layer": hm.model.layer, "model_name": w.models.shape.name + changed}

    def frame(self, hm: HeatmapResult, head: int | None) -> Frame:
        """What an exported image says of itself: the model or configuration, layer, head or all heads, the text,
        and for the mosaic (whose colour bar and axis titles sit outside it in the window) the scale."""
        w = self.window
        cfg = hm.config
        where = self.head_where(hm)
        spec = hm.layer_spec or cfg.layer_spec()
        what = where.get("model_name") or f"Random weights, {kind_of(spec).label(spec)}"
        layer = where.get("layer", hm.view_layer)
        heads = "all heads" if head is None else f"head {head}" + (
            f" (KV group {head // cfg.group_size})" if cfg.group_size > 1 else "")
        shape = (f"d_model {cfg.d_model:,} · {cfg.n_heads} heads · {cfg.kv_heads} KV heads · head_dim {spec.head_dim}"
                 f" · {'causal' if cfg.causal else 'bidirectional'} · {len(hm.tokens)} tokens")
        text = w.text.text() if hm.probe == "text" else "the induction probe: random tokens, repeated"
        lines = (shape, f"Text: {text[:160]}{'…' if len(text) > 160 else ''}" if hm.probe == "text" else f"Text: {text}")
        if head is not None:  # the head's own view draws its colour bar and axis titles
            return Frame(f"{what} · layer {layer} · {heads}", lines)
        per_head = w.mosaic.per_head
        vmax = float(hm.probs.max()) if hm.probs.size and not per_head else 1.0
        vmax = float(w.mosaic.vmax[0]) if not per_head and len(w.mosaic.vmax) else vmax
        label = "attention weight, each head to its own max" if per_head else "attention weight, one scale"
        return Frame(f"{what} · layer {layer} · {heads}", lines,
                     ColourBar(w.mosaic.colormap.currentText(), vmax, label, per_head),
                     x_title="key token (each tile: queries down, keys across)", y_title="query token")

    def manifest(self) -> dict[str, Any]:
        w = self.window
        hm = w.last_heatmaps
        t = w.last_timing
        timing = t.result.to_report() if t and hm and t.measures(hm.config, w.config_panel.device_choice()) else None
        cfg = hm.config if hm else w.config()
        arch, model = w.models.pin_context(hm) if hm else (None, None)
        probe = hm.probe if hm else w.roles.probe
        return {
            "title": "Attention Sandbox heatmaps",
            "report": build_report(cfg, timing, arch, model, model["layer"] if model else 0),
            "architecture": arch.to_dict() if arch is not None else cfg.architecture().to_dict(),
            "model": model,
            "device": w.config_panel.device_choice(),
            "seed": w.seed,
            "probe": probe,
            # What the tokens were read from: the typed text, or the induction probe (its own tokens).
            "text": w.text.text() if probe == "text" else None,
            "typed_text": w.text.text(),
            "tokens": hm.tokens if hm else [],
            "colormap": w.mosaic.colormap.currentText(),
            "scale": "per head" if w.mosaic.per_head else "shared",
        }

    def export_to(self, job: ExportJob) -> list[Path]:
        """Export the current view; raises ExportError with a sentence on failure."""
        w = self.window
        hm = w.last_heatmaps
        if hm is None:
            raise ExportError("there are no heatmaps to export yet.")
        if not w.view_is_current():  # else the title and manifest would name a text the maps are not of
            raise ExportError("the heatmaps shown are not of the text and configuration in the controls yet (they "
                              "are being computed, or could not be: see the line above the maps); export once they "
                              "are shown.")
        widget = None
        view: HeadView | None = None
        if job.fmt in ("png", "svg"):
            if job.head is None:
                widget = w.mosaic.glw
            else:
                view = HeadView(hm.probs[job.head], hm.tokens, job.head, hm.config.group_size,
                                w.mosaic.colormap.currentText(), **self.head_where(hm))
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
        w = self.window
        if w.last_heatmaps is None:
            w.statusBar().showMessage("There are no heatmaps to export yet.", 5000)
            return
        dialog = self.make_dialog(head)
        if dialog.exec() != ExportDialog.DialogCode.Accepted:
            return
        self.export_chosen(dialog)

    def start_folder(self) -> Path:
        """Where an export dialog opens: the last export's folder, else Pictures, Documents or home."""
        w = self.window
        where = QStandardPaths.writableLocation
        last = w.settings.value("export/folder") if w.settings is not None else None
        return default_export_folder(str(last) if last else None,
                                     where(QStandardPaths.StandardLocation.PicturesLocation),
                                     where(QStandardPaths.StandardLocation.DocumentsLocation))

    def remember_folder(self, folder: Path) -> None:
        if self.window.settings is not None:
            self.window.settings.setValue("export/folder", str(folder))  # the next export starts there

    def make_dialog(self, head: int | None = None) -> ExportDialog:
        w = self.window
        n_heads = len(w.last_heatmaps.probs) if w.last_heatmaps is not None else 0
        return ExportDialog(n_heads, self.start_folder(), head, w)

    def export_chosen(self, dialog: ExportDialog) -> list[Path]:
        """Write what the accepted dialog asks for; a failure is an alert, never an exception."""
        w = self.window
        try:
            c = dialog.choice()
            written = self.export_to(ExportJob(c.path, c.fmt, c.scale, c.head, c.decorations))
        except (ExportError, ValueError) as exc:
            w.alert("Export failed", str(exc))
            return []
        self.remember_folder(c.path.parent)
        w.statusBar().showMessage("Exported " + ", ".join(str(p) for p in written), 10000)
        return written

