"""Export what the user sees: images (PNG at a scale, SVG through QtSvg) and the raw probabilities
(.npy, .csv), each with a JSON manifest beside it. Every file is staged and renamed (sandbox/atomic)."""

from __future__ import annotations

import csv
import io
import json
import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import PySide6
from PySide6.QtCore import QPoint, QRectF, QSize, Qt
from PySide6.QtGui import QImage, QPainter
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import QWidget

from core.files.atomic import ExportError, staged
from core.files.bounded_read import read_json_bounded
from sandbox.jobs.types import starting_info
from widgets.export.frame import Frame, framed_image, framed_size, paint_framed

FORMATS = ("png", "svg", "npy", "csv")


@dataclass(frozen=True)
class ExportJob:
    path: Path  # the image or data file; the manifest goes beside it as <stem>.json
    fmt: str  # png, svg, npy, csv
    scale: float = 2.0  # PNG only: output pixels per screen pixel
    head: int | None = None  # None: every head (the mosaic)
    decorations: bool = True  # PNG and SVG: a title, the colour bar and axis titles around the view

    @property
    def manifest_path(self) -> Path:
        return self.path.with_suffix(".json")


def versions() -> dict[str, str]:
    return {"torch": starting_info().torch_version,  # from its metadata: the window never imports torch
            "qt": PySide6.QtCore.qVersion(), "pyside6": PySide6.__version__,
            "numpy": np.__version__, "python": platform.python_version()}


def ours(manifest: Path) -> bool:
    """A manifest this app wrote (an export of the same name may replace it), not a user's own .json."""
    try:  # read bounded, as a regular file only: a FIFO of that name would hang an export, /dev/zero fill memory
        return read_json_bounded(manifest, 1_000_000, "the manifest").get("title", "").startswith("Attention Sandbox")
    except (OSError, ValueError, AttributeError):
        return False


def render_png(widget: QWidget, scale: float) -> QImage:
    """The widget as the user sees it, rendered at `scale` times its size."""
    size = widget.size()
    if size.width() <= 0 or size.height() <= 0:
        raise ExportError("the view has no size yet; show the window before exporting.")
    img = QImage(QSize(round(size.width() * scale), round(size.height() * scale)), QImage.Format.Format_ARGB32)
    img.fill(Qt.GlobalColor.white)
    painter = QPainter(img)
    try:
        painter.scale(scale, scale)
        QWidget.render(widget, painter, QPoint())  # the widget as painted, for any subclass
    finally:
        painter.end()
    return img


def write_svg(widget: QWidget, path: Path, title: str, frame: Frame | None = None) -> None:
    """The widget as vectors; with a frame, under its title and beside its colour bar (widgets/export/frame.py)."""
    size = framed_size(widget, frame) if frame is not None else widget.size()
    gen = QSvgGenerator()
    gen.setFileName(str(path))
    gen.setSize(size)
    gen.setViewBox(QRectF(0, 0, size.width(), size.height()))
    gen.setTitle(title)
    painter = QPainter(gen)
    try:
        if frame is not None:
            paint_framed(painter, widget, frame)
        else:
            QWidget.render(widget, painter, QPoint())  # the widget as painted, for any subclass
    finally:
        painter.end()


def probs_csv(probs: np.ndarray, tokens: list[str], heads: list[int]) -> str:
    """Long format: head, query_index, query_token, key_index, key_token, weight."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["head", "query_index", "query_token", "key_index", "key_token", "weight"])
    for h, head_probs in zip(heads, probs, strict=True):
        for q, row in enumerate(head_probs):
            for k, value in enumerate(row):
                w.writerow([h, q, tokens[q], k, tokens[k], f"{value:.8g}"])
    return buf.getvalue()


def export(job: ExportJob, widget: QWidget | None, probs: np.ndarray, tokens: list[str],
           manifest: dict[str, Any], frame: Frame | None = None) -> list[Path]:
    """Write job.path and its manifest, both or neither. probs is (H, T, T). Returns the paths written. An image
    is framed (title, colour bar, axis titles) when a frame is given and the job keeps its decorations."""
    if job.fmt not in FORMATS:
        raise ExportError(f"unknown format {job.fmt!r}; choose one of {', '.join(FORMATS)}.")
    heads = list(range(len(probs))) if job.head is None else [job.head]
    data = probs if job.head is None else probs[job.head: job.head + 1]  # (H or 1, T, T)
    frame = frame if job.decorations else None
    manifest = {**manifest, "file": job.path.name, "format": job.fmt, "heads": heads,
                "shape": list(data.shape), "versions": versions()}
    if frame is not None and job.fmt in ("png", "svg"):
        manifest["image_title"] = [frame.title, *frame.lines]
    if job.fmt == "png":
        if widget is None:
            raise ExportError("there is no view to render yet.")
        if widget.width() <= 0 or widget.height() <= 0:
            raise ExportError("the view has no size yet; show the window before exporting.")
        image = framed_image(widget, frame, job.scale) if frame is not None else render_png(widget, job.scale)
        manifest["pixels"] = [image.width(), image.height()]
    with staged([job.path, job.manifest_path]) as (tmp, tmp_manifest):
        if job.fmt == "png":
            if not image.save(str(tmp), "PNG"):
                raise ExportError(f"could not write {job.path}; check the folder is writable. Nothing was written.")
        elif job.fmt == "svg":
            if widget is None:
                raise ExportError("there is no view to render yet.")
            write_svg(widget, tmp, frame.title if frame is not None else manifest.get("title", "attention"), frame)
            if tmp.stat().st_size == 0:
                raise ExportError(f"could not write {job.path}; check the folder is writable. Nothing was written.")
        elif job.fmt == "npy":
            with open(tmp, "wb") as f:
                np.save(f, np.ascontiguousarray(data, dtype=np.float32))
        else:
            tmp.write_text(probs_csv(data, tokens, heads), encoding="utf-8")
        tmp_manifest.write_text(json.dumps(manifest, indent=2, default=str), encoding="utf-8")
    return [job.path, job.manifest_path]
