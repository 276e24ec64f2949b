"""The mosaic's layout and pixels, checked with numpy (pyqtgraph's own exporter tests do the same)."""

import numpy as np
import pytest

from widgets.maps.colormaps import GROUP_COLOURS, lut
from widgets.maps.mosaic import (
    BACKGROUND,
    LEVELS,
    colour_table,
    head_tops,
    plan_layout,
    render_index,
    render_mosaic,
    render_rgb,
    scale_to_index,
)


def _probs(H, T, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.random((H, T, T), dtype=np.float32)
    return p / p.sum(-1, keepdims=True)


@pytest.mark.parametrize("H, g", [(12, 1), (32, 4), (9, 3), (64, 8), (8, 8), (64, 64)])
def test_layout_holds_every_head_and_groups_fill_rows(H, g):
    lay = plan_layout(H, 16, g)
    assert lay.cols * lay.rows >= H > (lay.rows - 1) * lay.cols
    if 1 < g <= lay.cols:
        assert lay.cols % g == 0  # each row holds whole KV groups


def test_locate_inverts_origin():
    lay = plan_layout(10, 7, 2)
    for head in range(10):
        x, y = lay.origin(head)
        for q, k in [(0, 0), (6, 3), (2, 6)]:
            u = lay.upsample
            assert lay.locate(x + k * u + u / 2, y + q * u + u / 2) == (head, q, k)
    assert lay.locate(-1, 0) is None
    x, y = lay.origin(0)
    assert lay.locate(x - 1, y) is None  # on the frame


def test_render_puts_each_head_in_its_tile_with_its_group_frame():
    probs = _probs(8, 16)
    lay = plan_layout(8, 16, 4)
    table = lut("viridis")
    index = render_mosaic(probs, lay)
    assert index.shape == (lay.height, lay.width) and index.dtype == np.uint8 and index.flags.c_contiguous
    img = render_rgb(probs, lay, table)
    idx, vmax = scale_to_index(probs, per_head=False)
    table = colour_table(table)
    for head in range(8):
        x, y = lay.origin(head)
        u = lay.upsample
        tile = img[y: y + lay.tile: u, x: x + lay.tile: u]
        assert np.array_equal(tile, table[idx[head]])
        assert tuple(img[y - 1, x]) == tuple(GROUP_COLOURS[head // 4])
    assert tuple(img[-1, -1]) in (tuple(BACKGROUND), tuple(GROUP_COLOURS[1]))


def test_scale_shared_vs_per_head():
    probs = np.zeros((2, 2, 2), np.float32)
    probs[0] = 0.5
    probs[1] = [[1, 0], [0, 1]]
    idx, vmax = scale_to_index(probs, per_head=False)
    assert idx[1, 0, 0] == LEVELS - 1 and idx[0, 0, 0] == (LEVELS - 1) // 2 and np.all(vmax == 1)
    idx, vmax = scale_to_index(probs, per_head=True)
    assert idx[0, 0, 0] == LEVELS - 1 and list(vmax) == [0.5, 1.0]


def test_a_per_head_scale_leaves_out_a_query_with_one_key_to_read():
    """Under a causal mask the first query weighs its only key 1.0: every head's own top was 1.0, and the per-head
    scale looked exactly like the shared one."""
    head = np.array([[1.0, 0, 0], [0.3, 0.7, 0], [0.2, 0.2, 0.6]], np.float32)
    probs = np.stack([head, head * [[1], [0.5], [0.5]]])  # (2, 3, 3): the second head's spread rows halved
    tops = head_tops(probs)
    assert list(tops) == pytest.approx([0.7, 0.35])
    idx, vmax = scale_to_index(probs, per_head=True)
    assert list(vmax) == pytest.approx([0.7, 0.35]) and idx[0, 0, 0] == idx[0, 1, 1] == idx[1, 1, 1] == LEVELS - 1
    assert idx[0, 2, 2] == int(0.6 / 0.7 * (LEVELS - 1))
    lay = plan_layout(2, 3)
    assert np.array_equal(render_mosaic(probs, lay, per_head=True), render_index(idx, lay))  # both paths agree
    assert list(head_tops(np.eye(3, dtype=np.float32)[None])) == [1.0]  # only single-key rows: its 1.0 stays


def test_colour_table_keeps_the_colormap_ends_and_adds_frames():
    table = colour_table(lut("viridis"))
    assert table.shape == (256, 3)
    assert tuple(table[0]) == tuple(lut("viridis")[0]) and tuple(table[LEVELS - 1]) == tuple(lut("viridis")[255])
    assert tuple(table[LEVELS]) == tuple(BACKGROUND)


def test_the_axes_keep_their_room_whatever_grid_the_heads_make(qtbot):
    """pyqtgraph sized an axis to the labels it drew, during the paint: a grid whose tiles stopped fitting the token
    labels relaid the plot and painted the maps twice. The room now follows the tokens only."""
    import numpy as np
    from PySide6.QtWidgets import QApplication

    from widgets.maps.heatmap_view import HeatmapMosaic

    m = HeatmapMosaic()
    qtbot.addWidget(m)
    m.resize(800, 500)
    m.show()
    qtbot.waitExposed(m)
    tokens = ["The", "chef", "who", "trained", "in", "Lucknow", "cooked", "biryani"]

    def rooms() -> tuple[float, ...]:
        QApplication.processEvents()  # the plot's layout runs
        return tuple(m.plot.getAxis(s).width() if s == "left" else m.plot.getAxis(s).height() for s in ("left", "bottom"))

    seen, shown = set(), set()
    for heads in (1, 4, 12, 48):  # labels fit the big tiles, not the small ones
        probs = np.full((heads, 8, 8), 1 / 8, dtype=np.float32)
        m.set_data(probs, tokens, 1)
        m.glw.viewport().repaint()
        seen.add(rooms())
        ticks = m.plot.getAxis("left")._tickLevels
        shown.add(len(ticks[0]) if ticks and m.plot.getAxis("left").style["showValues"] else 0)
    assert len(shown) > 1  # every token on the big tiles, every n-th (or none) on the small ones
    assert len(seen) == 1
    m.set_data(np.full((4, 2, 2), 0.5, dtype=np.float32), ["a", "a much longer token"], 1)
    m.glw.viewport().repaint()
    assert rooms()[0] > next(iter(seen))[0]  # longer tokens: a wider left axis
    # Tokens on two sides; no axis numbers the mosaic's pixels (the top and right ones did, from 2026-12-02).
    assert [s for s in ("left", "bottom", "top", "right") if m.plot.getAxis(s).isVisible()] == ["left", "bottom"]


def test_a_long_token_is_cut_with_an_ellipsis_on_the_axes(qtbot):
    from widgets.maps.heatmap_view import HeatmapMosaic

    m = HeatmapMosaic()
    qtbot.addWidget(m)
    m.resize(900, 700)
    m.show()
    qtbot.waitExposed(m)
    long = "antidisestablishmentarianism" * 2  # 56 letters
    m.set_data(np.full((1, 2, 2), 0.5, dtype=np.float32), ["a", long], 1)
    m.glw.viewport().repaint()
    left = [label for _, label in m._ticks["left"][0]]
    bottom = [label for _, label in m._ticks["bottom"][0]]
    assert left == ["a", long[:9] + "…"] and bottom == ["a", long[:7] + "…"]
    m.set_data(np.full((1, 2, 2), 0.5, dtype=np.float32), ["a", long[:10]], 1)  # one that fits stays whole
    assert [label for _, label in m._ticks["left"][0]] == ["a", long[:10]]


def test_every_tile_title_takes_the_same_form(qtbot):
    """h0-h9 kept "· kvN" where h10 and up lost it (each title fitted on its own)."""
    from PySide6.QtGui import QFont, QFontMetrics

    from widgets.maps.tile_titles import uniform_titles

    fm = QFontMetrics(QFont())
    titles = [f"h{h} · kv{h // 4}" for h in range(12)]
    room = fm.horizontalAdvance("h8 · kv2") + 6  # h0-h9's whole title fits, h10's does not
    assert fm.horizontalAdvance("h10 · kv2") + 6 > room
    assert uniform_titles(fm, titles, room) == [f"h{h}" for h in range(12)]
    assert uniform_titles(fm, titles, fm.horizontalAdvance("h11 · kv2") + 6) == titles
    numbers = [f"h{h}" for h in range(128)]
    assert uniform_titles(fm, numbers, fm.horizontalAdvance("127") + 6) == [str(h) for h in range(128)]
    assert uniform_titles(fm, numbers, fm.horizontalAdvance("127") + 5) == [""] * 128


def test_the_frame_legend_counts_one_head_and_one_kv_head_in_the_singular(qtbot):
    from widgets.maps.heatmap_view import HeatmapMosaic

    m = HeatmapMosaic()
    qtbot.addWidget(m)
    m.set_data(np.full((1, 2, 2), 0.5, dtype=np.float32), ["a", "b"], 1)
    assert m.legend.text().startswith("1 head, each with its own K and V")
    m.set_data(np.full((4, 2, 2), 0.5, dtype=np.float32), ["a", "b"], 4)  # MQA: one K/V head for all four
    assert "4 heads to each of 1 K/V head:" in m.legend.text()
    m.set_data(np.full((4, 2, 2), 0.5, dtype=np.float32), ["a", "b"], 2)
    assert "2 heads to each of 2 K/V heads:" in m.legend.text()


def test_a_tiny_difference_is_captioned_with_its_size_and_nan_differs_by_nothing():
    from widgets.maps.mosaic import diverging_caption, diverging_index

    diff = np.zeros((1, 3, 3), dtype=np.float32)
    diff[0, 1, 1] = 1e-9  # rounding noise: its cell is drawn at the end colour, so the scale must say how small
    idx, m = diverging_index(diff)
    assert idx[0, 1, 1] == idx.max() and m == pytest.approx(1e-9)
    assert diverging_caption(m, "A", "B") == "-1.00e-09 (B larger) → 0 → +1.00e-09 (A larger)"
    assert diverging_caption(0.25, "A", "B") == "-0.250 (B larger) → 0 → +0.250 (A larger)"
    diff[0, 2, 0] = np.nan
    idx, m = diverging_index(diff)
    assert np.isfinite(m) and idx[0, 2, 0] == idx[0, 0, 0]  # the middle level: no difference


def test_a_huge_mosaics_frames_are_drawn_not_kept_and_a_small_ones_are_kept():
    """A soak found 25 MiB kept after the view left a 3,104-head mosaic: its frames image, in a cache bounded by
    count. Only images up to FRAMES_KEPT_BYTES are kept now; every image is the same either way."""
    from widgets.maps import mosaic

    mosaic._kept_frames.cache_clear()
    small, huge = plan_layout(12, 8, 3), plan_layout(3104, 80, 776)
    assert small.rows * small.cell * small.cols * small.cell <= mosaic.FRAMES_KEPT_BYTES
    assert huge.rows * huge.cell * huge.cols * huge.cell > mosaic.FRAMES_KEPT_BYTES
    for lay in (small, huge):
        assert np.array_equal(mosaic._frames(lay), mosaic._draw_frames(lay))
    assert mosaic._frames(small) is mosaic._frames(small)  # kept: the next result of this layout draws nothing
    assert mosaic._kept_frames.cache_info().currsize == 1  # the huge one was not kept


def test_small_tiles_keep_every_n_th_token_label_rather_than_none(qtbot):
    """A 3 x 3 grid of 70 px tiles over 11 tokens once showed no token label at all, beside their empty room."""
    import numpy as np

    from widgets.maps.heatmap_view import MIN_TICK_PX, HeatmapMosaic

    m = HeatmapMosaic()
    qtbot.addWidget(m)
    m.resize(520, 300)
    m.show()
    qtbot.waitExposed(m)
    tokens = [f"t{i}" for i in range(11)]
    m.set_data(np.full((9, 11, 11), 1 / 11, dtype=np.float32), tokens, 3)
    m.glw.viewport().repaint()
    left = m.plot.getAxis("left")
    labels = [text for _, text in left._tickLevels[0]]
    px = m.plot.getViewBox().viewPixelSize()[1]
    token_px = m.layout_.upsample / px
    assert token_px < MIN_TICK_PX  # not every token fits here
    assert left.style["showValues"] and "t0" in labels and 0 < len(labels) < 9 * 11


def test_a_sparse_layer_s_skipped_keys_are_grey_in_every_tile_and_nothing_else_is():
    from widgets.maps.mosaic import SKIPPED, SKIPPED_INDEX, render_probs

    H, T = 5, 9
    probs = _probs(H, T)
    rng = np.random.default_rng(1)
    skipped = np.tril(rng.random((T, T)) < 0.4, -1)  # some causal keys below the diagonal
    lay = plan_layout(H, T, 1)
    plain, _ = render_probs(probs, lay)
    marked, _ = render_probs(probs, lay, skipped=skipped)
    assert SKIPPED_INDEX not in plain
    assert (marked == SKIPPED_INDEX).sum() == skipped.sum() * H * lay.upsample ** 2
    changed = marked != plain
    assert np.array_equal(changed, marked == SKIPPED_INDEX)  # only the skipped cells differ
    for h in range(H):
        x, y = lay.origin(h)
        for q, k in zip(*np.nonzero(skipped), strict=True):
            assert marked[y + q * lay.upsample, x + k * lay.upsample] == SKIPPED_INDEX
    table = colour_table(lut("viridis"))
    assert tuple(table[SKIPPED_INDEX]) == tuple(SKIPPED) and len(table) == 256
    assert not any((table[:LEVELS] == SKIPPED).all(axis=1))  # no colormap level reads as a skipped key
