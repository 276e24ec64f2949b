"""The maps' image item: a pixmap made once per image, at any size a mosaic can reach."""

import numpy as np
import pyqtgraph as pg
import pytest

from widgets.pixmap_image import MAX_SIDE, PixmapImageItem

pg.setConfigOptions(imageAxisOrder="row-major")  # the app's (widgets/heatmap_view.py)


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
