"""The window paints at most once a frame (sandbox/window/paint_pacer.py): a paint within the frame waits for its end and
then paints all that was dirtied meanwhile, new maps paint at once, and only a paced runner's window is paced."""

from PySide6.QtCore import QCoreApplication, QEvent, Qt, QTimer
from PySide6.QtWidgets import QVBoxLayout, QWidget

from sandbox.window.frame_pacer import FRAME_MS, FramePacer
from sandbox.window.paint_pacer import PaintPacer
from widgets.maps.heatmaps_tab import lower_cap
from widgets.maps.maps_view import MapsView

NOW = [0.0]  # the pacer's clock in seconds: a busy machine's pauses do not count


class Counted(QWidget):
    def __init__(self) -> None:
        super().__init__()
        self.paints = 0

    def paintEvent(self, event: QEvent) -> None:  # noqa: N802
        self.paints += 1


def window(qtbot) -> tuple[QWidget, Counted, Counted, PaintPacer]:
    top = QWidget()
    a, b = Counted(), Counted()
    lay = QVBoxLayout(top)
    lay.addWidget(a)
    lay.addWidget(b)
    top.resize(200, 200)
    qtbot.addWidget(top)
    top.show()
    qtbot.waitExposed(top)
    qtbot.waitUntil(lambda: a.paints > 0 and b.paints > 0, timeout=5000)
    NOW[0] += 1.0
    pacer = PaintPacer(top, clock=lambda: NOW[0])
    return top, a, b, pacer


def settle() -> None:
    """Every posted event delivered, Qt's paint request among them (no timer is run)."""
    QCoreApplication.sendPostedEvents()


def test_a_paint_within_the_frame_waits_for_its_end_and_paints_all_dirtied_meanwhile(qtbot):
    _top, a, b, pacer = window(qtbot)
    a.update()
    settle()
    assert a.paints == 2 and not pacer.holding()  # the frame had long ended: at once
    a.update()
    settle()
    assert a.paints == 2 and pacer.holding()  # within the frame of the last paint: held
    b.update()
    settle()
    assert b.paints == 1  # Qt asks for no other paint while one is held
    qtbot.waitUntil(lambda: not pacer.holding(), timeout=2000)
    qtbot.waitUntil(lambda: a.paints == 3 and b.paints == 2, timeout=2000)  # one paint, both widgets
    assert 0 < pacer.timer.interval() <= FRAME_MS + 1


def test_new_maps_paint_at_once_whether_a_paint_is_held_or_not(qtbot):
    _top, a, b, pacer = window(qtbot)
    a.update()
    settle()
    a.update()
    settle()
    assert a.paints == 2 and pacer.holding()
    pacer.new_maps()  # a held paint is delivered in the next turn, not at the frame's end
    assert not pacer.timer.isActive()
    settle()
    assert a.paints == 3
    pacer.new_maps()  # nothing held: the next paint Qt asks for goes at once, within the frame or not
    b.update()
    settle()
    assert b.paints == 2 and not pacer.holding()


def test_a_paint_asked_for_in_the_turn_of_a_frames_work_goes_in_a_later_turn_after_the_timers_due(qtbot):
    _top, a, _b, pacer = window(qtbot)
    order: list[str] = []
    due = QTimer()  # a timer already due when the work ends (a heartbeat, an input's turn)
    due.setSingleShot(True)
    due.setTimerType(Qt.TimerType.PreciseTimer)
    due.timeout.connect(lambda: order.append("timer"))
    a.paintEvent = lambda e: order.append("paint")
    due.start(0)
    pacer.after_work()  # a slider's step was set up in this turn
    a.update()
    settle()
    assert order == [] and pacer.holding()  # its paint waits for the turn's end, though its frame is over
    qtbot.waitUntil(lambda: "paint" in order, timeout=2000)
    assert order == ["timer", "paint"] and not pacer.holding()


def test_work_in_every_turn_holds_a_paint_for_a_frame_at_most(qtbot):
    """Found by the hostile tester: after_work() at every turn restarted the turn's timer, and the paint waited
    for as long as the work went on."""
    _top, a, _b, pacer = window(qtbot)

    def work() -> None:  # a frame's work in every turn, 1 ms of the pacer's clock each
        NOW[0] += 0.001
        pacer.after_work()

    busy = QTimer()
    busy.setTimerType(Qt.TimerType.PreciseTimer)
    busy.timeout.connect(work)
    busy.start(0)
    work()
    a.update()
    try:
        qtbot.waitUntil(lambda: a.paints == 2, timeout=2000)  # while the work goes on
        assert busy.isActive()
    finally:
        busy.stop()


def test_new_maps_set_in_the_turn_of_a_frames_work_paint_in_the_next_turn_at_once(qtbot):
    _top, a, _b, pacer = window(qtbot)
    a.update()
    settle()
    assert a.paints == 2  # a paint has just gone: the next is within its frame
    a.update()
    pacer.new_maps()  # new maps, in the gate's call ...
    pacer.after_work()  # ... which says so when it returns
    settle()
    assert a.paints == 2 and pacer.holding() and not pacer.timer.isActive()  # not held for the frame's end
    qtbot.waitUntil(lambda: a.paints == 3, timeout=2000)  # in the next turn
    assert not pacer.timer.isActive() and not pacer.holding()


class FakeRunner:
    def __init__(self, paced: bool) -> None:
        self.paced = paced

    def is_current(self, request_id: int) -> bool:
        return True


def test_only_a_paced_runners_window_is_paced_and_its_maps_view_says_when_new_maps_come(qtbot):
    for paced in (False, True):
        top = QWidget()
        qtbot.addWidget(top)
        maps = MapsView(parent=top)
        pacer = FramePacer(lambda r: None, FakeRunner(paced), top, maps=maps)
        assert (pacer.paints is not None) == paced
    assert pacer.paints is not None
    top.show()
    qtbot.waitExposed(top)
    pacer.paints._last = pacer.paints._clock()  # a paint has just gone: the next would wait
    maps.update()
    QCoreApplication.sendPostedEvents()
    assert pacer.paints.holding()
    maps.paint_later()  # new maps: the held paint goes now
    assert not pacer.paints.holding()


def test_a_closing_window_drops_what_waits_so_nothing_reaches_a_runner_shut_down(qtbot):
    from widgets.controls.slider_spin import SliderSpin

    top = QWidget()
    qtbot.addWidget(top)
    slider = SliderSpin([1, 2, 4, 8], 2, parent=top)
    pacer = FramePacer(lambda r: None, FakeRunner(True), top, sliders=top)
    emitted: list[int] = []
    slider.value_changed.connect(emitted.append)
    top.show()
    slider.slider.setValue(2)  # 4, at once
    slider.slider.setValue(3)  # 8, held for the frame's end
    assert pacer.holding()
    top.close()
    assert not pacer.holding() and not slider.gate.timer.isActive()  # no late emission can come
    assert emitted == [4]


def test_a_timing_shown_paints_in_a_turn_of_its_own(make_window, qtbot):
    """A timing's result set up 4-9 ms of labels; its layout, the fit below the maps (3-5 ms) and the paint, posted
    into the same turn, made one 13-23 ms gap. The paint now waits for a later turn (the fit: the next test)."""
    w = make_window(sync=False)
    qtbot.waitUntil(lambda: w.view_is_current() and w.runner.is_idle() and w.last_timing is not None, timeout=30000)
    paints = w.pacer.paints
    qtbot.waitUntil(lambda: not paints.holding(), timeout=2000)
    paints._last = float("-inf")  # the frame is long over: only the turn holds the paint
    w.reshow_timing()
    QCoreApplication.sendPostedEvents()  # the turn's posted work (layouts, Qt's paint request), no timer
    assert paints.holding()
    qtbot.waitUntil(lambda: not paints.holding(), timeout=2000)


def test_the_figures_below_the_maps_get_their_height_after_every_timing_and_skipped_one(make_window, qtbot):
    """Found by two helpers (older than the turn's pacing): the fit at a timing's result read the height the figures
    had before it ("measuring…", a line), so the result's rows went under the pane's edge; a skipped timing's shorter
    text was never fitted. The figures' firewall now asks for the fit once their layouts have run."""
    w = make_window(sync=False)
    tab = w.heat_tab
    content = tab.lower.widget()

    def fitted() -> bool:
        total = sum(tab.split.sizes())
        need = content.heightForWidth(tab.lower.viewport().width()) + 10  # as fit_lower measures
        return tab.split.sizes()[1] == min(need, lower_cap(total))

    heights = set()
    for seq in (128, 256, 64):
        w.config_panel.seq_len.spin.setValue(seq)
        qtbot.waitUntil(lambda seq=seq: w.last_timing is not None and w.last_timing.config.seq_len == seq, timeout=30000)
        qtbot.waitUntil(lambda: w.view_is_current() and w.runner.is_idle(), timeout=30000)
        qtbot.waitUntil(fitted, timeout=5000)  # every row in view (unless at the cap)
        heights.add(tab.split.sizes()[1])
    before = tab.split.sizes()[1]
    w.timing.show_error("timing skipped: a test's reason.", skipped=True)  # a shorter text than a measurement's
    qtbot.waitUntil(lambda: tab.split.sizes()[1] < before and fitted(), timeout=5000)
