import numpy as np
import pytest

from core.inputs.tokens import simple_tokenize
from core.models.head_roles import BADGE_THRESHOLD, badge, head_scores
from core.models.source import shipped_unavailable_reason


def test_random_weights_get_scores_but_no_invented_roles(make_window):
    w = make_window(text="The chef who trained in Lucknow cooked biryani and the chef who trained in Lucknow cooked rice")
    hm = w.last_heatmaps
    expected = head_scores(hm.probs, simple_tokenize(w.text.text()))
    for role, values in expected.items():
        np.testing.assert_allclose(hm.shown_roles[role], values)
    badges = w.mosaic.badges
    assert len(badges) == w.config().n_heads
    for h, b in enumerate(badges):
        best = badge(hm.shown_roles, h)
        assert (b is None) == (best is None)
        if b:
            assert best[1] >= BADGE_THRESHOLD and b[0].endswith(f"{best[1]:.2f}")
    assert f"{BADGE_THRESHOLD:.2f}" in w.mosaic.roles_legend.text()


def test_induction_probe_in_random_mode_and_the_roles_table(make_window, tmp_path):
    w = make_window()
    w.roles.probe_combo.setCurrentIndex(1)
    hm = w.last_heatmaps
    assert hm.probe == "induction" and len(hm.tokens) == 40 and hm.tokens[:20] == hm.tokens[20:]
    panel = w.roles.panel
    panel.role.setCurrentText("previous")
    panel.min_score.setValue(0.0)
    col = [panel.table.horizontalHeaderItem(c).text() for c in range(panel.table.columnCount())]
    assert col[:3] == ["layer", "head", "previous"] and panel.table.rowCount() == w.config().n_heads
    values = [panel.table.item(r, 2).value for r in range(panel.table.rowCount())]
    assert values == sorted(values, reverse=True)  # sorted by the chosen score
    panel.min_score.setValue(float(np.sort(hm.roles["previous"][0])[-2]) - 0.001)
    floor = panel.min_score.value()  # what the spin box kept, at its 3 decimals
    assert panel.table.rowCount() == int((hm.roles["previous"][0] >= floor).sum()) >= 2  # the filter applies
    panel.table.selectRow(0)
    assert panel.similar.count() == min(6, w.config().n_heads - 1)
    w.roles.export(tmp_path / "scores.csv")
    lines = (tmp_path / "scores.csv").read_text().splitlines()
    assert lines[0].startswith("layer,head,previous") and len(lines) == 1 + w.config().n_heads


@pytest.mark.skipif(bool(shipped_unavailable_reason("smollm2-135m")), reason="the [models] extra is missing")
def test_smollm2_shows_its_induction_head_badge_and_grid(make_window):
    w = make_window()
    w.models.load("smollm2-135m")
    w.roles.probe_combo.setCurrentIndex(1)
    w.models.picker.layer.setValue(18)
    grid = w.last_heatmaps.roles["induction"]
    assert grid.shape == (30, 9) and grid[18, 6] > 0.5
    assert w.mosaic.badges[6][0].startswith("ind ")
    w.roles.panel.head_requested.emit(17, 3)  # a click in the grid jumps to that layer and head
    assert w.models.layer == 17 and w.head_views[-1].head == 3
