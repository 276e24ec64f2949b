"""New maps reach the screen in one paint of the window, after the work queued beside them (widgets/maps/maps_view.py).
Before, QGraphicsScene sent the window's pending repaint from inside its own update: everything dirty so far painted
at once, then the work queued after it (the next result's slot, layouts) dirtied the window again and it painted a
second time in the same event-loop turn (the drag's longest stalls, bench/live_latency.py)."""

import numpy as np
import pytest
from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from widgets.maps.heatmap_view import HeatmapMosaic


class CountingLabel(QLabel):
    def __init__(self) -> None:
        super().__init__("a label beside the maps")
        self.paints = 0

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        super().paintEvent(event)
        self.paints += 1


class Later(QObject):
    """A queued call, as a worker's result reaches the window: it runs in the loop's next turn of posted events."""

    call = Signal(str)


def _probs(h: int, seed: int) -> np.ndarray:
    p = np.random.default_rng(seed).random((h, 6, 6), dtype=np.float32)
    return p / p.sum(-1, keepdims=True)


@pytest.mark.parametrize("heads", [[4, 4, 4], [4, 8, 4]], ids=["same grid", "new grid"])
def test_new_maps_and_the_work_queued_beside_them_paint_the_window_once(qtbot, heads):
    window = QWidget()
    qtbot.addWidget(window)
    label = CountingLabel()
    mosaic = HeatmapMosaic()
    lay = QVBoxLayout(window)
    lay.addWidget(label)
    lay.addWidget(mosaic)
    window.resize(700, 600)
    tokens = [f"t{i}" for i in range(6)]
    mosaic.set_data(_probs(4, 0), tokens, 2)
    window.show()
    later = Later()
    queued_ran: list[str] = []

    def queued(text: str) -> None:
        label.setText(text)
        queued_ran.append(text)

    later.call.connect(queued, Qt.ConnectionType.QueuedConnection)
    maps_paints = [0]
    mosaic.painted.connect(lambda: maps_paints.__setitem__(0, maps_paints[0] + 1))
    qtbot.waitUntil(lambda: maps_paints[0] > 0 and label.paints > 0)
    turns = [0]  # a zero timer ticks once each time the loop has sent its posted events
    ticker = QTimer()
    ticker.setInterval(0)
    ticker.timeout.connect(lambda: turns.__setitem__(0, turns[0] + 1))
    ticker.start()
    for k, h in enumerate(heads, start=1):
        maps_paints[0] = label.paints = 0
        label.setText(f"step {k}")
        mosaic.set_data(_probs(h, k), tokens, 2)
        later.call.emit(f"step {k}, queued")
        qtbot.waitUntil(lambda k=k: len(queued_ran) == k and maps_paints[0] > 0 and label.paints > 0)
        seen = turns[0]
        qtbot.waitUntil(lambda seen=seen: turns[0] >= seen + 3)  # any second paint would have come by now
        assert (maps_paints[0], label.paints) == (1, 1), k
    ticker.stop()
