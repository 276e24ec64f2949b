"""The runner's deadlines: calls made in deadline order on one thread, a cancelled one not made, a failing
one not stopping the next."""

import threading

from sandbox.runner.deadlines import Deadlines


def test_calls_come_in_deadline_order_on_one_thread_and_cancelled_ones_never():
    deadlines = Deadlines("test")
    made: list[tuple[str, int]] = []
    done = threading.Event()

    def call(name: str) -> None:
        made.append((name, threading.get_ident()))
        if name == "last":
            done.set()

    def fail() -> None:
        raise RuntimeError("a failing call")

    deadlines.call_later(0.06, call, "third")
    deadlines.call_later(0.02, call, "first")
    dropped = deadlines.call_later(0.03, call, "cancelled")
    deadlines.call_later(0.035, fail)
    deadlines.call_later(0.04, call, "second")
    deadlines.call_later(0.1, call, "last")
    dropped.cancel()
    assert done.wait(10)
    assert [name for name, _ in made] == ["first", "second", "third", "last"]
    assert len({ident for _, ident in made}) == 1 and made[0][1] != threading.get_ident()
    assert deadlines.pending() == 0


def test_a_drag_of_settle_timers_makes_only_the_last_call():
    """A slider drag: each step cancels its settle timer and asks for a later one, which wakes no thread
    (the thread wakes for the cancelled earlier one first, then waits for the next)."""
    deadlines = Deadlines("test")
    made: list[int] = []
    done = threading.Event()

    def call(step: int) -> None:
        made.append(step)
        done.set()

    timer = None
    for step in range(20):
        if timer is not None:
            timer.cancel()
        timer = deadlines.call_later(0.02 + 0.002 * step, call, step)
    assert done.wait(10)
    assert made == [19]
    assert deadlines.pending() == 0
