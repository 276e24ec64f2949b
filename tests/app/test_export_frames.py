"""Exported heatmap images stand on their own: a title that says what they show, the colour bar with its scale,
axis titles and every token label the window shows, nothing clipped, at 1x, 2x and as SVG; and the user can leave
the decorations off. Every check reads pixels or what pyqtgraph actually draws, not that a file exists."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import QRectF
from PySide6.QtGui import QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

from core.arch.config import AttentionConfig
from sandbox.tabs.export_render import ExportJob
from tests.drawn_text import drawn_labels
from widgets.export.frame import PAPER, ColourBar, Frame, content_box, framed_image
from widgets.maps.colormaps import lut
from widgets.maps.head_view import HeadView

TEXT = "The chef who trained in Lucknow cooked biryani"
CFG = AttentionConfig(d_model=256, n_heads=8, n_kv_heads=2, seq_len=64, n_layers=4, causal=True)


def pixels(image: QImage) -> np.ndarray:
    img = image.convertToFormat(QImage.Format.Format_RGB888)
    arr = np.frombuffer(img.constBits(), dtype=np.uint8, count=img.sizeInBytes()).reshape(img.height(), img.bytesPerLine())
    return arr[:, : img.width() * 3].reshape(img.height(), img.width(), 3).astype(int)


def load(path) -> np.ndarray:
    if path.suffix == ".svg":
        renderer = QSvgRenderer(str(path))
        assert renderer.isValid()
        size = renderer.defaultSize()
        image = QImage(size, QImage.Format.Format_RGB888)
        image.fill(0)
        painter = QPainter(image)
        renderer.render(painter, QRectF(0, 0, size.width(), size.height()))
        painter.end()
        return pixels(image)
    return pixels(QImage(str(path)))


def text_rows(arr: np.ndarray) -> np.ndarray:
    """Rows that hold light text on the dark paper."""
    return np.flatnonzero((arr.min(axis=2) > 150).sum(axis=1) > 0)


def colour_bar_column(arr: np.ndarray, table: np.ndarray) -> int | None:
    """A column whose pixels run smoothly through the colour map from its top (the max) to its bottom (0)."""
    top, bottom = table[-1].astype(int), table[0].astype(int)
    for x in range(arr.shape[1] - 1, -1, -1):
        col = arr[:, x]
        near_top = np.flatnonzero(np.abs(col - top).sum(axis=1) < 40)
        near_bottom = np.flatnonzero(np.abs(col - bottom).sum(axis=1) < 40)
        if len(near_top) >= 3 and len(near_bottom) >= 3 and near_top.max() < near_bottom.min():
            between = col[near_top.max():near_bottom.min()]
            # a bar is a smooth run through the map (dozens of its colours); a map's column has a few blocks
            on_map = [tuple(c) for c in between if (np.abs(table.astype(int) - c).sum(axis=1) < 12).any()]
            if len(set(on_map)) >= 30:
                return x
    return None


@pytest.mark.parametrize(("fmt", "scale"), [("png", 1.0), ("png", 2.0), ("svg", 1.0)])
@pytest.mark.parametrize("head", [None, 5])
def test_an_exported_image_has_its_title_colour_bar_and_nothing_clipped(make_window, tmp_path, fmt, scale, head):
    w = make_window(config=CFG, text=TEXT)
    path = tmp_path / f"out.{fmt}"
    w.export_to(ExportJob(path, fmt, scale, head))
    arr = load(path)
    bare = tmp_path / f"bare.{fmt}"
    w.export_to(ExportJob(bare, fmt, scale, head, decorations=False))
    plain = load(bare)
    if head is not None:  # without decorations a head's image has no colour bar of its own either
        assert colour_bar_column(plain, lut(w.mosaic.colormap.currentText())) is None
    # The title block: text rows above the view, which the bare export does not have.
    assert arr.shape[0] > plain.shape[0] + 30 * scale
    rows = text_rows(arr[: int(70 * scale)])
    assert len(rows) > 20 * scale, "no title above the view"
    # The colour bar runs the map top to bottom (the mosaic's own, or the head view's pyqtgraph bar).
    assert colour_bar_column(arr, lut(w.mosaic.colormap.currentText())) is not None
    # Nothing touches the image's edge: no label or bar is cut by it.
    paper = np.array([PAPER.red(), PAPER.green(), PAPER.blue()])
    edge = int(3 * scale)
    border = np.concatenate([arr[:edge].reshape(-1, 3), arr[-edge:].reshape(-1, 3),
                             arr[:, :edge].reshape(-1, 3), arr[:, -edge:].reshape(-1, 3)])
    assert (np.abs(border - paper).sum(axis=1) < 30).all(), "something is cut by the image's edge"
    manifest = (tmp_path / "out.json").read_text()
    assert ("all heads" if head is None else f"head {head} (KV group {head // 4})") in manifest
    assert "layer 0" in manifest and TEXT in manifest


def test_the_exported_view_is_cut_to_what_it_holds(qtbot):
    """A view wider than its picture (the mosaic's, when its tiles are height-bound) exports without the empty
    margin, axis line or not."""
    view = pg.GraphicsLayoutWidget()
    view.setBackground(PAPER)
    qtbot.addWidget(view)
    view.resize(900, 300)
    plot = view.addPlot()
    plot.setAspectLocked(True)
    plot.getAxis("bottom").setStyle(showValues=False, tickLength=0)  # as the mosaics: a bare axis line
    plot.addItem(pg.ImageItem(np.random.default_rng(0).random((20, 20))))
    view.show()
    qtbot.waitUntil(lambda: plot.getViewBox().height() > 100)
    plot.getViewBox().autoRange(padding=0)
    view.grab()
    box = content_box(view)
    right = plot.getViewBox().mapViewToScene(pg.Point(20, 0)).x()  # the picture's right edge, in the view
    assert box.height() > 200 and right <= box.right() < right + 10  # not the 300 px of dark beyond it
    frame = Frame("a title", ("a line",), ColourBar("viridis", 1.0, "weight"))
    assert framed_image(view, frame, 1.0).width() < box.width() + 260


def test_a_head_view_shows_every_token_label_apart_from_its_axis_title_and_the_bar_s_end_labels(qtbot):
    tokens = TEXT.split()
    probs = np.tril(np.ones((8, 8), dtype=np.float32))
    probs /= probs.sum(axis=1, keepdims=True)
    view = HeadView(probs, tokens, 3, 4, "viridis")
    qtbot.addWidget(view)
    view.show()
    qtbot.waitUntil(lambda: view.plot.getViewBox().height() > 100)
    view.plot.grab()  # painted once, as an export paints it
    left = view.plot.getAxis("left")
    labels = drawn_labels(left, in_scene=True)
    assert [t for _, t in labels] == tokens  # "Lucknow", the longest, was dropped
    title = left.mapRectToScene(left.label.mapRectToParent(left.label.boundingRect()))
    assert not any(rect.intersects(title) for rect, _ in labels), "the axis title overprints a token"
    bar_axis = view.colorbar.axis
    ends = drawn_labels(bar_axis, in_scene=True)
    scene = view.plot.sceneRect()
    assert any(t in ("1", "1.0") for _, t in ends), ends
    assert all(scene.contains(rect) for rect, _ in ends), "a colour bar label is cut by the view's edge"


def test_the_cli_mosaic_names_each_tile_row_s_tokens_its_text_and_its_scale():
    """inspect --out's image: the title, the text under it, the query tokens beside every row of tiles (as many as
    fit), axis titles and a colour bar with its ticks."""
    from sandbox.tabs.mosaic_png import PX, labelled_mosaic
    from widgets.maps.mosaic import plan_layout

    tokens = TEXT.split()
    probs = np.random.default_rng(0).dirichlet(np.ones(8), size=(6, 8)).astype(np.float32)  # (H, T, T)
    bare = pixels(labelled_mosaic(probs, 2, "a title", 3, 1.0))
    image = pixels(labelled_mosaic(probs, 2, "a title", 3, 1.0, tokens=tokens, lines=(f"Text: {TEXT}",)))
    assert image.shape[1] > bare.shape[1] + 40  # the token labels take their room on the left
    lay = plan_layout(6, 8, 2, cols=3)
    tile_rows = sorted({lay.origin(h)[1] for h in range(6)})
    left = image[:, : image.shape[1] - bare.shape[1] + 8]  # the label margin
    text = text_rows(left)
    offset = image.shape[0] - bare.shape[0]  # the text line pushes everything down
    for row_y in tile_rows:  # some label in the band of every row of tiles
        band = range(offset + 34 + row_y * PX, offset + 34 + (row_y + lay.tile) * PX)
        assert any(r in band for r in text), f"no token labels beside the tiles at {row_y}"
    assert colour_bar_column(image, lut("viridis")) is not None


CTRL_E_SCRIPT = """
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
app = QApplication([])
from sandbox.window.main_window import MainWindow
from sandbox.runner.thread_runner import ComputeRunner
w = MainWindow(runner=ComputeRunner(sync=True), settings=None, live_timing=False)
opened = []
w.open_export_dialog = lambda *a: opened.append(1)
w.show()
w.activateWindow()
for _ in range(20):
    app.processEvents()
w.text.setFocus()
for _ in range(5):
    app.processEvents()
QTest.keyClick(w.text, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
print("focus", w.text.hasFocus(), "opened", len(opened), "on", app.platformName())
"""


@pytest.mark.xvfb
@pytest.mark.skipif(shutil.which("xvfb-run") is None, reason="Xvfb is not installed (apt-get install xvfb)")
def test_ctrl_e_exports_from_the_text_field_in_a_real_x11_window():
    """QLineEdit takes Ctrl+E as 'end of line' under X11 (not offscreen): File > Export did nothing while the Text
    box had the cursor."""
    env = {**os.environ, "QT_QPA_PLATFORM": "xcb"}
    proc = subprocess.run(["xvfb-run", "-a", "-s", "-screen 0 1280x800x24", sys.executable, "-c", CTRL_E_SCRIPT],
                          capture_output=True, text=True, timeout=300, env=env, cwd=Path(__file__).parents[2])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "focus True opened 1 on xcb" in proc.stdout, proc.stdout + proc.stderr[-2000:]


def test_maps_of_another_text_are_not_exported_under_the_new_text_s_title(make_window, tmp_path):
    from core.files.atomic import ExportError

    w = make_window(config=CFG, text="hello world")
    w.text.setText("")  # no tokens: the maps of "hello world" stay on screen, with the error above them
    with pytest.raises(ExportError, match="not of the text and configuration in the controls yet"):
        w.export_to(ExportJob(tmp_path / "m.png", "png", 1.0))
    assert not (tmp_path / "m.png").exists()
