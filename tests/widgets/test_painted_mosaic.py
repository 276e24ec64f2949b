"""The mosaic as Qt paints it, pixel by pixel against numpy's reference (render_rgb): the index image
drawn through the app's own QImage and pixmap path shows each token's colour and each group's frame."""

import numpy as np
from PySide6.QtCore import QPointF

from widgets.maps.colormaps import GROUP_COLOURS, lut
from widgets.maps.heatmap_view import HeatmapMosaic
from widgets.maps.mosaic import render_rgb


def _painted_colour(view: HeatmapMosaic, image, x: float, y: float) -> tuple[int, int, int]:
    """The colour Qt painted at mosaic image coordinates (x, y)."""
    scene = view.image.mapToScene(QPointF(x, y))
    at = view.glw.mapFromScene(scene)
    c = image.pixelColor(at.x(), at.y())
    return c.red(), c.green(), c.blue()


def test_every_painted_token_cell_has_the_reference_colour(qtbot):
    view = HeatmapMosaic()
    qtbot.addWidget(view)
    view.resize(900, 700)
    view.show()
    rng = np.random.default_rng(3)
    probs = rng.random((6, 4, 4), dtype=np.float32)
    probs /= probs.sum(-1, keepdims=True)
    view.set_data(probs, ["a", "b", "c", "d"], 3)
    qtbot.waitUntil(lambda: view.glw.width() > 400)
    for per_head in (False, True):
        view.scale.setCurrentIndex(int(per_head))
        image = view.glw.grab().toImage()
        lay = view.layout_
        reference = render_rgb(probs, lay, lut(view.colormap.currentText()), per_head=per_head)
        u = lay.upsample
        for head in range(6):
            x, y = lay.origin(head)
            for q in range(1, 4):  # row 0 lies under the tile's title
                for k in range(4):
                    cx, cy = x + (k + 0.5) * u, y + (q + 0.5) * u
                    assert _painted_colour(view, image, cx, cy) == tuple(reference[int(cy), int(cx)]), (head, q, k)
            frame = _painted_colour(view, image, x + lay.tile / 2, y + lay.tile + lay.frame / 2)  # the bottom frame
            assert frame == tuple(GROUP_COLOURS[head // 3])


def test_a_grid_seen_before_is_drawn_exactly_as_when_first_drawn(qtbot):
    """The axes' kept pictures (widgets/common/cached_axis.py) replay a view seen before, never another view's."""
    view = HeatmapMosaic()
    qtbot.addWidget(view)
    view.resize(900, 700)
    view.show()
    qtbot.waitUntil(lambda: view.glw.width() > 400)
    tokens = ["the", "cat", "sat", "on"]
    rng = np.random.default_rng(5)
    probs = {h: rng.random((h, 4, 4), dtype=np.float32) for h in (4, 6)}
    view.set_data(probs[4], tokens, 2)
    first = view.glw.grab().toImage()
    view.set_data(probs[6], tokens, 2)
    other = view.glw.grab().toImage()
    bottom = view.plot.getAxis("bottom")
    kept = len(bottom._pictures)
    view.set_data(probs[4], tokens, 2)
    again = view.glw.grab().toImage()
    assert again == first
    assert other != first  # the two views differ, so a picture of the wrong one would show
    assert len(bottom._pictures) == kept  # replayed, not drawn anew (the left axis widens to its labels once)
