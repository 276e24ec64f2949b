"""The Long tab's exports: the overview as PNG or SVG (as painted) or its pooled probabilities as .npy, and
the decode timeline as PNG or its steps as CSV; each with a .json manifest beside it (one a file), both written or
neither, and a user's own .json of that name never overwritten."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtWidgets import QWidget

from core.files.atomic import ExportError, staged
from sandbox.tabs.export_render import ours, render_png, versions, write_svg
from widgets.export.frame import ColourBar, Frame, framed_image

MAP_SUFFIXES = (".png", ".svg", ".npy")
DECODE_SUFFIXES = (".png", ".csv")


def manifest_path(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def _check(path: Path, suffixes: tuple[str, ...], what: str) -> Path:
    if path.suffix.lower() not in suffixes:
        raise ValueError(f"export the {what} as {', '.join(suffixes[:-1])} or {suffixes[-1]}, not "
                         f"{path.suffix or 'no suffix'}.")
    manifest = manifest_path(path)
    if manifest.exists() and not ours(manifest):
        raise ValueError(f"{manifest.name} exists beside it and is not an Attention Sandbox manifest; choose another "
                         "name, so that it is not overwritten.")
    return manifest


def _picture(widget: QWidget, tmp: Path, suffix: str, title: str, frame: Frame | None = None) -> None:
    if suffix == ".svg":
        write_svg(widget, tmp, title, frame)
        if tmp.stat().st_size == 0:
            raise ExportError(f"could not write {tmp.name}; check the folder is writable. Nothing was written.")
    elif not (framed_image(widget, frame, 2.0) if frame is not None else render_png(widget, 2.0)).save(str(tmp), "PNG"):
        raise ExportError(f"could not write {tmp.name}; check the folder is writable. Nothing was written.")


def export_map(path: Path, widget: QWidget, view: Any, head: int, zoom: Any = None) -> list[Path]:
    """The overview (view: sandbox/jobs/long_types.py's LongView) as .png/.svg (the widget as painted) or .npy (every
    head's pooled map, (H, R, C) float32; the manifest gives the block and the positions it covers)."""
    suffix = path.suffix.lower()
    manifest = _check(path, MAP_SUFFIXES, "long map")
    data = {"title": "Attention Sandbox long map", "file": path.name, **view.manifest,
            "shape": list(view.pooled.shape), "axes": "(head, query block, key block)",
            "shown_head": None if head < 0 else head, "versions": versions(),
            "colour_scale": getattr(widget, "scale", None) and widget.scale.currentText(),
            "zoom": None if zoom is None else {"rows": list(zoom.rows), "cols": list(zoom.cols), "block": zoom.block}}
    with staged([path, manifest]) as (tmp, tmp_manifest):
        if suffix == ".npy":
            with open(tmp, "wb") as f:
                np.save(f, np.ascontiguousarray(view.pooled, dtype=np.float32))
        else:
            _picture(widget.glw, tmp, suffix, f"Long map: {view.what}", map_frame(widget, view, head))
        tmp_manifest.write_text(json.dumps(data, indent=1, default=str), encoding="utf-8")
    return [path, manifest]


def map_frame(widget: Any, view: Any, head: int) -> Frame:
    """The long map's title and its colour scale as the tab shows it (log from 1e<floor> to 1, or linear)."""
    floor = widget.floor_exp()
    if floor < 0:
        decades = int(round(-floor))
        ticks = tuple((1 - k / decades, f"1e-{k}" if k else "1") for k in range(decades + 1))
        bar = ColourBar(widget.colormap.currentText(), 1.0, "attention weight, log scale; grey: never read",
                        ticks=ticks)
    else:
        bar = ColourBar(widget.colormap.currentText(), float(view.pooled.max()) or 1.0,
                        "attention weight, linear; grey: never read")
    shown = "all heads" if head < 0 else f"head {head}"
    return Frame(f"Long map · {shown}", (f"{view.what}; {view.pool}-pooled cells of {view.block} x {view.block} tokens",),
                 bar)


def steps_csv(steps: list[Any]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["step", "cached_tokens", "kv_bytes", "step_ms", "token"])
    for s in steps:
        w.writerow([s.step, s.n_cached, s.kv_bytes, f"{s.step_ms:.4f}", s.token])
    return buf.getvalue()


def curve_csv(points: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    keys = ["context", "cached", "median_ms", "p25_ms", "p75_ms", "kv_bytes"]
    w.writerow(keys)
    for p in points:
        w.writerow([p[k] for k in keys])
    return buf.getvalue()


def export_decode(path: Path, widget: QWidget, steps: list[Any], curve: dict | None, meta: dict) -> list[Path]:
    """The decode timeline as .png (as painted) or .csv (a model's steps, or a random-weight layer's points)."""
    suffix = path.suffix.lower()
    manifest = _check(path, DECODE_SUFFIXES, "decode timeline")
    data = {"title": "Attention Sandbox decode run", "file": path.name, **meta, "versions": versions(),
            "tokens_generated": len(steps) or None, "asked_steps": meta.get("steps"),
            "curve": {k: v for k, v in (curve or {}).items() if k != "points"} or None}
    data.pop("steps", None)
    with staged([path, manifest]) as (tmp, tmp_manifest):
        if suffix == ".csv":
            tmp.write_text(steps_csv(steps) if steps else curve_csv((curve or {}).get("points", [])), encoding="utf-8")
        else:
            _picture(getattr(widget, "glw", widget), tmp, suffix, "Decode run")
        tmp_manifest.write_text(json.dumps(data, indent=1, default=str), encoding="utf-8")
    return [path, manifest]


def long_map_png(view: Any, floor_exp: float = -4.0, tile: int = 512) -> Any:
    """A headless picture of every head's overview (the CLI's longmap.png): a title, the tiles on a log scale with
    their head names, and what the colours mean."""
    from PySide6.QtCore import QRectF, Qt
    from PySide6.QtGui import QColor, QFont, QImage, QPainter

    from sandbox.tabs.mosaic_png import draw_tile_label, ensure_gui
    from widgets.long.render import colour_table, mosaic_index
    from widgets.maps.colormaps import DEFAULT_COLORMAP

    ensure_gui()
    index, lay = mosaic_index(view.pooled, floor_exp, max_side=tile)
    rgb = np.ascontiguousarray(colour_table(DEFAULT_COLORMAP)[index])  # (h, w, 3)
    h, w = rgb.shape[:2]
    top, margin = 52, 10
    mosaic = QImage(rgb.data, w, h, w * 3, QImage.Format.Format_RGB888)
    image = QImage(w + 2 * margin, h + top + margin, QImage.Format.Format_RGB888)
    image.fill(QColor(30, 30, 30))
    p = QPainter(image)
    try:
        font = QFont()
        font.setPixelSize(14)
        p.setFont(font)
        p.setPen(QColor(230, 230, 230))
        p.drawText(QRectF(margin, 2, w, 22), Qt.AlignmentFlag.AlignVCenter, view.what)
        font.setPixelSize(11)
        p.setFont(font)
        p.drawText(QRectF(margin, 24, w, 22), Qt.AlignmentFlag.AlignVCenter,
                   f"each tile a head: keys across, queries down, cells of {view.block:,} tokens ({view.pool}); colour "
                   f"log10(p) from {floor_exp:g} to 0; grey: never read")
        p.drawImage(margin, top, mosaic)
        g = max(1, view.pooled.shape[0] // max(1, view.n_kv_heads))
        for head in range(view.pooled.shape[0]):
            x, y = lay.origin(head)
            draw_tile_label(p, margin + x, top + y, head, g)
    finally:
        p.end()
    return image
