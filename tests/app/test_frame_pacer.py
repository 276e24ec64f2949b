"""The window shows a runner's heatmaps at most once a frame (sandbox/window/frame_pacer.py), never a stale one, and
never holds a lone change or a synchronous runner's result."""

from dataclasses import dataclass

from sandbox.window.frame_pacer import FRAME_MS, FramePacer


@dataclass
class Result:
    request_id: int


class FakeRunner:
    def __init__(self, paced: bool = True) -> None:
        self.paced = paced
        self.latest_id = 0

    def is_current(self, request_id: int) -> bool:
        return request_id == self.latest_id


NOW = [0.0]  # the pacers' clock in these tests, in seconds: a busy machine's pauses between two offers do not count


def paced(*request_ids: int, paced: bool = True) -> tuple[FakeRunner, FramePacer, list]:
    """A pacer offered each request's result as the request is made, all at one instant of its clock."""
    runner, shown = FakeRunner(paced), []
    NOW[0] += 1.0  # long after any earlier test's results
    pacer = FramePacer(shown.append, runner, clock=lambda: NOW[0])
    for rid in request_ids:
        runner.latest_id = rid
        pacer.offer(Result(rid))
    return runner, pacer, shown


def test_a_lone_result_is_shown_at_once(qtbot):
    _runner, pacer, shown = paced(1)
    assert shown == [Result(1)] and not pacer.holding()


def test_a_result_within_a_frame_waits_for_its_end_and_the_newest_of_them_is_shown(qtbot):
    _runner, pacer, shown = paced(1, 2, 3)
    assert shown == [Result(1)] and pacer.holding()  # both came within the frame of the first
    assert 0 < pacer.timer.interval() <= FRAME_MS + 1
    qtbot.waitUntil(lambda: not pacer.holding(), timeout=2000)
    assert shown == [Result(1), Result(3)]  # 2 was replaced while it waited: never shown


def test_a_held_result_a_newer_request_made_stale_is_dropped_and_the_next_result_shown_as_it_comes(qtbot):
    runner, pacer, shown = paced(1, 2)
    runner.latest_id = 3  # a newer request, its result not come yet
    with qtbot.waitSignal(pacer.timer.timeout, timeout=2000):
        pass
    assert shown == [Result(1)] and not pacer.holding()  # the window never shows a stale view
    NOW[0] += FRAME_MS / 1e3
    pacer.offer(Result(3))  # the frame is over: at once
    assert shown == [Result(1), Result(3)]


def test_a_synchronous_runner_is_never_paced(qtbot):
    _runner, pacer, shown = paced(1, 2, 3, paced=False)
    assert shown == [Result(1), Result(2), Result(3)] and not pacer.holding()


def test_the_thread_runner_is_paced_only_when_asynchronous(qtbot):
    from sandbox.runner.thread_runner import ComputeRunner

    sync, threaded = ComputeRunner(sync=True), ComputeRunner(sync=False)
    try:
        assert (sync.paced, threaded.paced) == (False, True)
    finally:
        threaded.shutdown()
