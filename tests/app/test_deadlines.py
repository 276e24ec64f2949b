"""The runner's deadlines: calls made in deadline order on one thread, a cancelled one not made, a failing
one not stopping the next."""

import threading

from sandbox.deadlines import Deadlines


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
