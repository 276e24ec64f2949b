"""Grids read as grids: ticks at cell centres, axis names, the current layer marked, labels apart."""

import numpy as np
from PySide6.QtWidgets import QApplication

from core.models.head_roles import ROLES
from widgets.common.ticks import CHAR_PX, LABEL_CHARS
from widgets.maps.head_view import HeadView
from widgets.maps.heatmap_view import HeatmapMosaic
from widgets.roles.panel import RolesPanel


def test_roles_grid_ticks_sit_at_cell_centres(qtbot):
    panel = RolesPanel()
    qtbot.addWidget(panel)
    panel.resize(1000, 700)
    panel.show()
    L, H = 4, 9
    scores = {r: np.random.default_rng(0).random((L, H)) for r in ROLES}
    panel.set_scores(scores, np.zeros((L * H, 3, 3), dtype=np.float32), "text")
    QApplication.processEvents()
    panel._update_grid_ticks()
    left = panel.grid.getAxis("left")._tickLevels[0]
    bottom = panel.grid.getAxis("bottom")._tickLevels[0]
    assert left == [(h + 0.5, str(h)) for h in range(H)]  # 9 heads: 0..8 centred, not 0..9 on the edges
    assert bottom == [(layer + 0.5, str(layer)) for layer in range(L)]


def test_the_overview_names_its_axes_and_frames_the_current_layer(qtbot):
    m = HeatmapMosaic()
    qtbot.addWidget(m)
    m.resize(900, 500)
    m.show()
    L, H, T = 6, 4, 5
    m.set_data(np.random.default_rng(0).random((H * L, T, T)).astype(np.float32), list("abcde"), 1, cols=L)
    m.set_grid_axes("layer", [str(i) for i in range(L)], "head", [str(h) for h in range(H)])
    m.mark_column(2)
    QApplication.processEvents()
    m._update_ticks()
    lay = m.layout_
    assert m.plot.getAxis("bottom").labelText == "layer" and m.plot.getAxis("left").labelText == "head"
    xs = m.plot.getAxis("bottom")._tickLevels[0]
    assert xs == [(lay.origin(c)[0] + lay.tile / 2, str(c)) for c in range(L)]
    rect = m.column_mark.rect()
    x2, _ = lay.origin(2)
    assert m.column_mark.isVisible() and rect.left() < x2 and rect.right() > x2 + lay.tile  # layer 2's tiles inside
    assert rect.right() < lay.origin(3)[0] and rect.left() > lay.origin(1)[0] + lay.tile  # and no other layer's


def test_head_view_labels_never_overlap_and_the_title_names_the_layer(qtbot):
    tokens = [f"token{i:03d}long" for i in range(120)]
    probs = np.random.default_rng(0).random((120, 120)).astype(np.float32)
    view = HeadView(probs, tokens, 6, 3, "viridis", layer=18, model_name="SmolLM2-135M")
    qtbot.addWidget(view)
    view.show()
    QApplication.processEvents()
    view._update_ticks()
    assert view.windowTitle().startswith("SmolLM2-135M · layer 18 · head 6 · KV group 2")
    vb = view.plot.getViewBox()
    px_per_token = vb.width() / 120
    xs = [x for x, _ in view.plot.getAxis("bottom")._tickLevels[0]]
    gaps_px = np.diff(xs) * px_per_token
    assert len(xs) > 1 and gaps_px.min() >= CHAR_PX * LABEL_CHARS  # each label has room for its text
    ys = [y for y, _ in view.plot.getAxis("left")._tickLevels[0]]
    assert np.diff(ys).min() * vb.height() / 120 >= 14
