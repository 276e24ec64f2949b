"""The window shows a runner's heatmaps at most once a frame (sandbox/frame_pacer.py), never a stale one, and
never holds a lone change or a synchronous runner's result."""

from dataclasses import dataclass

from sandbox.frame_pacer import FRAME_MS, FramePacer


@dataclass
class Result:
    request_id: int


class FakeRunner:
    def __init__(self, paced: bool = True) -> None:
        self.paced = paced
        self.latest_id = 0

    def is_current(self, request_id: int) -> bool:
        return request_id == self.latest_id


def test_a_lone_result_is_shown_at_once(qtbot):
    runner, shown = FakeRunner(), []
    pacer = FramePacer(shown.append, runner)
    runner.latest_id = 1
    pacer.offer(Result(1))
    assert shown == [Result(1)] and not pacer.holding()


def test_a_result_within_a_frame_waits_for_its_end_and_the_newest_of_them_is_shown(qtbot):
    runner, shown = FakeRunner(), []
    pacer = FramePacer(shown.append, runner)
    runner.latest_id = 1
    pacer.offer(Result(1))
    runner.latest_id = 2
    pacer.offer(Result(2))
    runner.latest_id = 3
    pacer.offer(Result(3))
    assert shown == [Result(1)] and pacer.holding()  # both came within the frame of the first
    assert 0 < pacer.timer.interval() <= FRAME_MS + 1
    qtbot.waitUntil(lambda: not pacer.holding(), timeout=2000)
    assert shown == [Result(1), Result(3)]  # 2 was replaced while it waited: never shown


def test_a_held_result_a_newer_request_made_stale_is_dropped_and_the_next_result_shown_as_it_comes(qtbot):
    runner, shown = FakeRunner(), []
    pacer = FramePacer(shown.append, runner)
    runner.latest_id = 1
    pacer.offer(Result(1))
    runner.latest_id = 2
    pacer.offer(Result(2))
    runner.latest_id = 3  # a newer request, its result not come yet
    with qtbot.waitSignal(pacer.timer.timeout, timeout=2000):
        pass
    assert shown == [Result(1)] and not pacer.holding()  # the window never shows a stale view
    pacer.offer(Result(3))  # the frame is over: at once
    assert shown == [Result(1), Result(3)]


def test_a_synchronous_runner_is_never_paced(qtbot):
    runner, shown = FakeRunner(paced=False), []
    pacer = FramePacer(shown.append, runner)
    for rid in (1, 2, 3):
        runner.latest_id = rid
        pacer.offer(Result(rid))
    assert shown == [Result(1), Result(2), Result(3)] and not pacer.holding()


def test_the_thread_runner_is_paced_only_when_asynchronous(qtbot):
    from sandbox.runner import ComputeRunner

    sync, threaded = ComputeRunner(sync=True), ComputeRunner(sync=False)
    try:
        assert (sync.paced, threaded.paced) == (False, True)
    finally:
        threaded.shutdown()
