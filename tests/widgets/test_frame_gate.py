"""The frame gate (widgets/common/frame_gate.py) and the sliders it paces (widgets/controls/slider_spin.py): at most one call a
frame, the newest value winning, a lone change at once, nothing lost and nothing stale."""

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

from widgets.common.frame_gate import FRAME_MS, FrameGate
from widgets.controls.slider_spin import SliderSpin, paced_sliders

NOW = [0.0]  # the gates' clock in these tests, in seconds: a busy machine's pauses do not count


def gate(answer: object = None) -> tuple[FrameGate, list]:
    NOW[0] += 1.0  # long after any earlier test's calls
    calls: list = []

    def call(value: object) -> object:
        calls.append(value)
        return answer

    return FrameGate(call, FRAME_MS, clock=lambda: NOW[0]), calls


def test_a_lone_offer_is_called_at_once(qtbot):
    g, calls = gate()
    g.offer(1)
    assert calls == [1] and not g.holding()


def test_offers_within_a_frame_wait_for_its_end_and_only_the_newest_is_called(qtbot):
    g, calls = gate()
    for v in (1, 2, 3):
        g.offer(v)
    assert calls == [1] and g.holding() and g.held() == 3
    assert 0 < g.timer.interval() <= FRAME_MS + 1
    qtbot.waitUntil(lambda: not g.holding(), timeout=2000)
    assert calls == [1, 3]
    NOW[0] += FRAME_MS / 1e3  # the frame of 3 is over: the next offer goes at once
    g.offer(4)
    assert calls == [1, 3, 4]


def test_a_call_that_showed_nothing_starts_no_frame(qtbot):
    g, calls = gate(answer=False)
    shown: list[bool] = []
    g.called.connect(lambda: shown.append(True))
    g.offer(1)
    g.offer(2)  # the first showed nothing: no frame to wait for
    assert calls == [1, 2] and not g.holding()
    assert shown == []  # nothing for a window to paint


def test_called_says_when_a_call_showed_something(qtbot):
    g, calls = gate()
    shown: list[int] = []
    g.called.connect(lambda: shown.append(len(calls)))
    g.offer(1)
    g.offer(2)
    assert shown == [1]  # after the first call; the held one has not been called
    qtbot.waitUntil(lambda: not g.holding(), timeout=2000)
    assert shown == [1, 2]


def test_a_dropped_value_is_never_called_and_an_unpaced_gate_calls_every_offer(qtbot):
    g, calls = gate()
    g.offer(1)
    g.offer(2)
    g.drop()
    assert not g.holding() and not g.timer.isActive()
    g.frame_ms = 0.0
    g.offer(3)
    g.offer(4)
    assert calls == [1, 3, 4]


def paced_slider(qtbot) -> tuple[SliderSpin, list[int]]:
    NOW[0] += 1.0
    s = SliderSpin([1, 2, 4, 8, 16], 4)
    qtbot.addWidget(s)
    s.gate._clock = lambda: NOW[0]
    s.pace(FRAME_MS)
    emitted: list[int] = []
    s.value_changed.connect(emitted.append)
    return s, emitted


def test_a_paced_drag_emits_its_first_step_and_then_its_newest_at_the_frames_end(qtbot):
    s, emitted = paced_slider(qtbot)
    for index in (3, 4, 0):  # 8, 16, 1 within one frame
        s.slider.setValue(index)
    assert emitted == [8]
    assert s.value() == 8  # what the owner has handled, not the step that waits
    assert s.holding() and s.spin.value() == 1 and s.slider.value() == 0  # the step is shown at once
    qtbot.waitUntil(lambda: not s.holding(), timeout=2000)
    assert emitted == [8, 1] and s.value() == 1


def test_a_drag_back_to_the_emitted_value_within_the_frame_emits_nothing_more(qtbot):
    s, emitted = paced_slider(qtbot)
    s.slider.setValue(3)  # 8, at once
    s.slider.setValue(4)  # 16, held
    s.slider.setValue(3)  # back to 8
    qtbot.waitUntil(lambda: not s.holding(), timeout=2000)
    assert emitted == [8] and s.value() == 8


def test_the_owners_write_replaces_a_step_that_waits(qtbot):
    s, emitted = paced_slider(qtbot)
    s.slider.setValue(3)
    s.slider.setValue(4)  # held
    assert s.set_value(2) == 2  # a preset, or a value another control forced
    assert not s.holding() and s.spin.value() == 2 and s.slider.value() == 1
    NOW[0] += 1.0
    s.slider.setValue(4)
    assert emitted == [8, 16]  # the held 16 was never emitted on its own


def test_arrow_keys_step_from_the_value_shown(qtbot):
    s, emitted = paced_slider(qtbot)
    s.slider.setValue(3)  # 8, at once
    s.slider.setValue(1)  # 2, held
    qtbot.keyClick(s.spin, Qt.Key.Key_Up)  # from the 2 shown, not the 8 emitted
    assert s.spin.value() == 4
    qtbot.waitUntil(lambda: not s.holding(), timeout=2000)
    assert emitted == [8, 4]


def test_paced_sliders_paces_every_slider_under_a_widget(qtbot):
    root = QWidget()
    qtbot.addWidget(root)
    a, b = SliderSpin([1, 2], 1, parent=root), SliderSpin([1, 2], 2, parent=root)
    assert paced_sliders(root, FRAME_MS) == [a, b]
    assert a.gate.frame_ms == b.gate.frame_ms == FRAME_MS


def test_a_clock_set_back_holds_a_value_for_one_frame_at_most_and_nan_turns_the_gate_off(qtbot):
    g, calls = gate()
    g.offer(1)
    NOW[0] -= 3600.0  # the clock went back an hour
    g.offer(2)
    assert g.holding() and g.timer.interval() <= FRAME_MS + 1
    qtbot.waitUntil(lambda: not g.holding(), timeout=2000)
    g.frame_ms = float("nan")
    g.offer(3)
    assert calls == [1, 2, 3] and not g.holding()


def test_an_endless_frame_is_a_mistake_and_calls_at_once(qtbot):
    for frame_ms in (float("inf"), 3e9):
        g, calls = gate()
        g.frame_ms = frame_ms
        g.offer(1)
        g.offer(2)
        assert calls == [1, 2] and not g.holding()


def test_a_typed_value_goes_at_once_with_its_snap_even_within_a_drags_frame(qtbot):
    s, emitted = paced_slider(qtbot)
    seen: list[tuple[str, int, int]] = []
    s.snapped.connect(lambda typed, kept: seen.append(("snapped", s.value(), kept)))
    s.gate.called.connect(lambda: seen.append(("called", s.value(), s.value())))
    s.slider.setValue(3)  # 8, at once: a frame starts
    s.spin.setValue(3)  # typed 3, kept 4 (no 3 among the choices)
    assert emitted == [8, 4] and s.value() == 4 and not s.holding()
    assert seen[:2] == [("called", 8, 8), ("called", 4, 4)]  # each a call the window paints in a turn of its own
    del seen[:2]
    assert seen == [("snapped", 4, 4)]  # the owner explains the snap with the kept value already its own
