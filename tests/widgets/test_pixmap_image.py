"""The maps' image item: a pixmap made once per image, at any size a mosaic can reach."""

import numpy as np
import pyqtgraph as pg
import pytest

from widgets.maps.pixmap_image import MAX_SIDE, PixmapImageItem

pg.setConfigOptions(imageAxisOrder="row-major")  # the app's (widgets/maps/heatmap_view.py)


def grey_table() -> np.ndarray:
    return np.repeat(np.arange(256, dtype=np.uint8)[:, None], 3, axis=1)  # index i -> (i, i, i)


@pytest.mark.parametrize("shape", [(20, 40000), (40000, 20), (33000, 40000)])
def test_an_image_past_qt_s_32767_pixel_side_still_paints_and_so_does_the_next_one(qtbot, shape):
    """pyqtgraph turns auto-downsampling on for a side over 32,767 px and its own render then raised at every
    paint ("levels argument is required for float input types"): the maps went blank for good."""
    view = pg.GraphicsLayoutWidget()
    qtbot.addWidget(view)
    view.resize(300, 300)
    box = view.addViewBox()
    item = PixmapImageItem()
    box.addItem(item)
    h, w = shape
    img = np.zeros(shape, dtype=np.uint8)  # black
    img[-max(1, h // 10):, -max(1, w // 10):] = 255  # a white corner, far from the origin
    item.setImage(img, autoLevels=False, levels=None, lut=grey_table())
    box.autoRange(padding=0)
    view.show()
    frame = view.grab().toImage()
    colours = {frame.pixelColor(x, y).name() for x in range(0, frame.width(), 3) for y in range(0, frame.height(), 3)}
    assert {"#ffffff", "#000000"} <= colours  # the white corner and the black rest are drawn
    assert max(item.qimage.width(), item.qimage.height()) <= MAX_SIDE

    small = np.full((10, 10), 128, dtype=np.uint8)  # and the next, ordinary image is drawn as it is
    item.setImage(small, autoLevels=False, levels=None, lut=grey_table())
    box.autoRange(padding=0)
    frame = view.grab().toImage()
    c = frame.pixelColor(frame.width() // 2, frame.height() // 2)
    assert c.red() == 128 and not item.autoDownsample


def striped(h: int, w: int) -> np.ndarray:
    """Each row its own grey: index (7 x row) mod 256, so a row drawn in another's place shows."""
    return np.repeat(((np.arange(h) * 7) % 256).astype(np.uint8)[:, None], w, axis=1)


def test_a_zoomed_part_of_an_image_past_32767_px_shows_its_own_rows_not_every_kth(qtbot):
    """Drawn whole, a 40,000-row image is every 2nd row; zoomed to ten rows, each row on screen must be its own
    (a zoomed tile of the Layers overview showed other rows, and hover named another weight than the pixel)."""
    view = pg.GraphicsLayoutWidget()
    qtbot.addWidget(view)
    view.resize(300, 300)
    box = view.addViewBox()
    box.invertY(True)  # as the maps' boxes are
    item = PixmapImageItem()
    box.addItem(item)
    img = striped(40000, 20)
    item.setImage(img, autoLevels=False, levels=None, lut=grey_table())
    view.show()
    for top in (1001, 30001):  # an odd row: the whole image's every-2nd-row drawing has none of them
        box.setRange(xRange=(0, 20), yRange=(top, top + 10), padding=0)
        frame = view.grab().toImage()
        for row in range(top, top + 10):
            y = box.mapViewToDevice(pg.Point(10, row + 0.5))
            shown = frame.pixelColor(round(y.x()), round(y.y())).red()
            assert shown == img[row, 0], f"row {row}: drew {shown}, its own grey is {img[row, 0]}"
    box.autoRange(padding=0)  # the whole image again: drawn reduced, and still drawn
    frame = view.grab().toImage()
    assert len({frame.pixelColor(150, y).red() for y in range(20, 280, 7)}) > 5


@pytest.mark.parametrize("keys", [700, 1500, 40001])
def test_a_strip_wider_than_its_view_keeps_every_lone_bright_key_with_the_max_reducer(qtbot, keys):
    """Keys 13 apart, each alone: at 0.55 screen px a key (700 keys) the blocks were narrower than a pixel and
    Qt's own scaling skipped 35 of 58 peaks; past 32,767 keys every-2nd-key drawing skipped odd ones."""
    view = pg.GraphicsLayoutWidget()
    qtbot.addWidget(view)
    view.resize(400, 100)
    box = view.addViewBox()
    view.show()
    img = np.zeros((4, keys), dtype=np.uint8)
    peaks = np.arange(5, keys, max(13, keys // 40))
    img[:, peaks] = 255
    item = PixmapImageItem(reduce="max")
    box.addItem(item)
    item.setImage(img, autoLevels=False, levels=None, lut=grey_table())
    box.autoRange(padding=0)
    frame = view.grab().toImage()
    y = frame.height() // 2
    for key in peaks:
        x = box.mapViewToDevice(pg.Point(key + 0.5, 2)).x()
        near = [frame.pixelColor(px, y).red() for px in range(max(0, round(x) - 1), min(frame.width(), round(x) + 2))]
        assert max(near) == 255, f"key {key} of {keys}: no bright pixel near x={x:.1f}"


def test_a_strip_past_32767_keys_keeps_its_one_bright_key_with_the_max_reducer(qtbot):
    view = pg.GraphicsLayoutWidget()
    qtbot.addWidget(view)
    view.resize(400, 100)
    box = view.addViewBox()
    view.show()
    img = np.zeros((4, 40001), dtype=np.uint8)
    img[:, 12345] = 255  # one odd key holds all the weight: every-2nd-key drawing never reads it
    drawn = {}
    for how in ("nearest", "max"):
        item = PixmapImageItem(reduce=how)
        box.addItem(item)
        item.setImage(img, autoLevels=False, levels=None, lut=grey_table())
        box.autoRange(padding=0)
        frame = view.grab().toImage()
        drawn[how] = any(frame.pixelColor(x, frame.height() // 2).red() == 255 for x in range(frame.width()))
        box.removeItem(item)
    assert drawn == {"nearest": False, "max": True}
