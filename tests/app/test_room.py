"""The maps and the costs get the room, and the Pin action stays in view, at 1024x700 and 1280x800, with random
weights and with a real model open."""

import pytest

from core.models.source import shipped_unavailable_reason

needs_models = pytest.mark.skipif(bool(shipped_unavailable_reason("smollm2-135m")), reason="the [models] extra is missing")
TEXT = "The chef who trained in Lucknow cooked biryani"


def in_view(widget) -> bool:
    """Shown whole: not hidden, not scrolled out of sight, not cut by a pane."""
    return widget.isVisible() and widget.visibleRegion().boundingRect().size() == widget.size()


@pytest.mark.parametrize("model", [None, pytest.param("smollm2-135m", marks=needs_models)])
@pytest.mark.parametrize("size", [(1024, 700), (1280, 800)])
def test_the_pin_action_the_costs_and_the_maps_have_room(make_window, qtbot, size, model):
    w = make_window(config=None, text=TEXT)
    if model:
        w.models.load(model)
    w.resize(*size)
    qtbot.waitUntil(lambda: w.heat_tab.height() > 0 and w.costs_scroll.viewport().height() > 0)
    w.heat_tab.fit_lower(force=True)
    qtbot.waitUntil(lambda: in_view(w.pin_button), timeout=3000)
    rows = w.costs_scroll.viewport().height() // w.metrics.fontMetrics().lineSpacing()
    assert rows >= 12, f"the costs show {rows} rows"
    assert w.maps.height() >= 0.42 * w.heat_tab.height(), (w.maps.height(), w.heat_tab.height())  # was 200 of 631
