"""A change's costs follow its heatmaps' paint (sandbox/window/costs_refresh.py), and never wait for ever."""

from core.counts import param_counts
from sandbox.window.costs_refresh import COSTS_WAIT_MS


def params_shown(w) -> str:
    return w.metrics.values["params"].text()


def test_the_costs_come_after_the_new_heatmaps_and_match_the_new_configuration(make_window, async_kind, qtbot):
    w = make_window(sync=False, kind=async_kind, live_timing=False)
    qtbot.waitUntil(lambda: w.runner.is_idle() and w.view_is_current(), timeout=60000)
    w.costs.timer.setInterval(600000)  # no fallback in this test: a loaded machine must not reorder it
    order = []
    set_data = w.mosaic.set_data  # called by the window's heatmaps slot: the new maps going on screen
    w.mosaic.set_data = lambda probs, *a, **k: (order.append(("maps", len(probs))), set_data(probs, *a, **k))[1]
    show = w.metrics.show_config
    w.metrics.show_config = lambda cfg, ctx=None: (order.append(("costs", cfg.n_heads)), show(cfg, ctx))
    cfg = w.config().with_(n_heads=w.config().n_heads * 2, n_kv_heads=1)
    w.config_panel.set_config(cfg)
    assert not w.view_is_current()  # the costs are due: the view is not the new one yet
    qtbot.waitUntil(lambda: w.runner.is_idle() and w.view_is_current(), timeout=60000)
    assert order.index(("maps", cfg.n_heads)) < order.index(("costs", cfg.n_heads))
    assert params_shown(w) == f"{param_counts(cfg).total:,}"  # against the counts engine, not the panel


def test_the_costs_come_without_heatmaps_once_the_wait_is_over(make_window, qtbot):
    w = make_window(sync=False, kind="thread", live_timing=False)
    qtbot.waitUntil(lambda: w.runner.is_idle() and w.view_is_current(), timeout=60000)
    w.runner.submit = lambda request: 0  # a request whose heatmaps never come (a hung kernel, a dead worker)
    w.runner.is_idle = lambda: False
    cfg = w.config().with_(n_heads=w.config().n_heads * 2, n_kv_heads=1)
    w.config_panel.set_config(cfg)
    assert params_shown(w) != f"{param_counts(cfg).total:,}"
    qtbot.waitUntil(lambda: params_shown(w) == f"{param_counts(cfg).total:,}", timeout=20 * COSTS_WAIT_MS)


def test_the_costs_wait_for_the_maps_own_paint_not_only_their_slot(make_window, async_kind, qtbot):
    """Costs set between the maps' slot and their paint were painted in the same pass as the maps (a 7-10 ms stall):
    they now change only after the maps' view has painted."""
    w = make_window(sync=False, kind=async_kind, live_timing=False)
    w.show()
    qtbot.waitExposed(w)
    qtbot.waitUntil(lambda: w.runner.is_idle() and w.view_is_current(), timeout=60000)
    w.costs.timer.setInterval(600000)
    order = []
    set_data = w.mosaic.set_data
    w.mosaic.set_data = lambda probs, *a, **k: (order.append("maps set"), set_data(probs, *a, **k))[1]
    w.mosaic.painted.connect(lambda: order.append("maps painted"))
    show = w.metrics.show_config
    w.metrics.show_config = lambda cfg, ctx=None: (order.append("costs"), show(cfg, ctx))
    cfg = w.config().with_(n_heads=w.config().n_heads * 2, n_kv_heads=1)
    w.config_panel.set_config(cfg)
    qtbot.waitUntil(lambda: w.runner.is_idle() and w.view_is_current(), timeout=60000)
    first_set = order.index("maps set")
    assert "maps painted" in order[first_set:order.index("costs")]
    assert params_shown(w) == f"{param_counts(cfg).total:,}"


def test_with_another_tab_in_front_the_costs_do_not_wait_for_a_paint_that_never_comes(make_window, qtbot):
    w = make_window(sync=False, kind="thread", live_timing=False)
    w.show()
    qtbot.waitExposed(w)
    qtbot.waitUntil(lambda: w.runner.is_idle() and w.view_is_current(), timeout=60000)
    w.tabs.setCurrentIndex(1)  # Compare: the maps are hidden and will not paint
    w.costs.timer.setInterval(600000)  # no fallback: only the hidden-maps path can bring the costs
    cfg = w.config().with_(n_heads=w.config().n_heads * 2, n_kv_heads=1)
    w.config_panel.set_config(cfg)
    qtbot.waitUntil(lambda: params_shown(w) == f"{param_counts(cfg).total:,}", timeout=60000)


def _drag(painted_later: bool):
    """A CostsRefresh whose first refresh is followed at once by the next change of a drag (in the same turn, so the
    gap's test does not hang on how fast this machine gets back to it). -> (costs, refresh times, change())."""
    import time

    from sandbox.window.costs_refresh import CostsRefresh

    runs = []

    def change() -> None:
        costs.changed(False)
        costs.maps_shown(painted_later=painted_later)
        if painted_later:
            costs.maps_painted()

    def refresh() -> None:
        runs.append(time.perf_counter())
        if len(runs) == 1:
            change()  # the next step of the drag

    costs = CostsRefresh(refresh)
    costs.timer.setInterval(600000)  # only the maps bring the costs in these tests
    return costs, runs, change


def test_a_drag_s_costs_come_at_most_every_gap_and_a_lone_change_s_at_once(qtbot):
    """A refresh and its paint beside a drag step's own work made the drag's longest stalls: at most one per
    COSTS_GAP_MS while the changes come faster; a change after a pause is not held back."""
    import time

    from sandbox.window.costs_refresh import COSTS_GAP_MS

    costs, runs, change = _drag(painted_later=True)
    change()
    assert costs.after_paint.interval() == 0  # the first: in the next turn
    qtbot.waitUntil(lambda: len(runs) == 2, timeout=2000)
    assert runs[1] - runs[0] >= 0.9 * COSTS_GAP_MS / 1e3  # a coarse timer may fire up to 5% early
    qtbot.waitUntil(lambda: time.perf_counter() - runs[1] > COSTS_GAP_MS / 1e3, timeout=2000)
    change()  # after a pause
    assert costs.after_paint.interval() == 0


def test_with_the_maps_hidden_a_drag_s_costs_still_keep_their_gap(qtbot):
    """Another tab in front: the costs came in the next turn after each result (every 16 ms of a 4 ms drag)."""
    from sandbox.window.costs_refresh import COSTS_GAP_MS

    costs, runs, change = _drag(painted_later=False)
    change()
    qtbot.waitUntil(lambda: len(runs) == 2, timeout=2000)
    assert runs[1] - runs[0] >= 0.9 * COSTS_GAP_MS / 1e3
