"""`attention-sandbox snapshot`: render the real main window offscreen and write
window.png, heatmaps.png and manifest.json."""

from __future__ import annotations

import json
import os
from pathlib import Path

from core.arch.config import AttentionConfig
from core.files.atomic import ExportError, staged
from sandbox.window.qt_messages import quiet_offscreen_messages


def take_snapshot(cfg: AttentionConfig, text: str | None, out: Path, device: str = "auto",
                  timing: bool = True, size: tuple[int, int] = (1280, 800)) -> list[Path]:
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from sandbox.jobs.compute import ComputeRequest
    from sandbox.runner.thread_runner import ComputeRunner
    from sandbox.window.main_window import MainWindow
    from widgets.export.frame import framed_image

    if out.exists() and not out.is_dir():
        raise ExportError(f"--out {out} is a file; give a folder.")
    quiet_offscreen_messages()
    app = QApplication.instance() or QApplication([])
    runner = ComputeRunner(sync=True)
    window = MainWindow(runner=runner, settings=None, config=cfg, text=text, live_timing=False)
    window.config_panel.set_device_choice(device)
    window.resize(*size)
    window.show()
    app.processEvents()
    # Ask again now the window has its size, so the mosaic lays out for it, with timing if wanted.
    runner.submit(ComputeRequest.of(window.state.view, seed=window.seed, want_timing=timing))
    app.processEvents()
    for _ in range(2):  # the figures below the maps wrap once laid out: fit them to what they became
        window.heat_tab.fit_lower(force=True)
        app.processEvents()
    if window.last_error:
        window.close()
        raise ValueError(window.last_error)  # refused: no folder is made, nothing is written
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        window.close()
        raise ExportError(f"cannot create the folder {out}: {exc.strerror or exc}; choose another --out.") from exc
    paths = [out / "window.png", out / "heatmaps.png", out / "manifest.json"]
    shot = window.grab().toImage()
    hm = window.last_heatmaps
    if hm is None:
        window.close()
        raise ExportError("the heatmaps were not computed; nothing was written.")
    heat = framed_image(window.mosaic.glw, window.exports.frame(hm, None), 2.0)  # titled, with its colour bar
    manifest = window.manifest()
    manifest["files"] = [p.name for p in paths]
    try:  # the three files as one group: each name is checked before any is written ("Nothing was written" is true)
        with staged(paths) as (window_tmp, heat_tmp, manifest_tmp):
            _save(shot, window_tmp)
            _save(heat, heat_tmp)
            manifest_tmp.write_text(json.dumps(manifest, indent=2, default=str), encoding="utf-8")
    finally:
        window.close()
    return paths


def _save(image: object, tmp: Path) -> None:
    if not image.save(str(tmp), "PNG"):  # type: ignore[attr-defined]
        raise ExportError(f"could not write {tmp.parent}; check the folder is writable.")
