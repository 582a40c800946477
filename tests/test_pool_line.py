"""The line's apart stage: an ordered stage that waits (the delivery, held
up by a subscriber that reads slowly) runs in a thread of its own, so the
line goes on starting the other units' stages meanwhile, and units still
leave in order."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from livetrace._session.pool import Line, Stage

pytestmark = pytest.mark.once  # no decoding

UNITS = 6


def line_with_a_waiting_delivery(apart: bool) -> tuple[list[int], bool]:
    """Unit 0's delivery waits until the last unit's work has started (the
    others come once it is waiting); what was delivered, in order, and
    whether the wait was ever over."""
    started = [threading.Event() for _ in range(UNITS)]
    delivering = threading.Event()
    delivered: list[int] = []
    released = True

    def work(unit: int) -> None:
        started[unit].set()

    def deliver(unit: int) -> None:
        nonlocal released
        if unit == 0:
            delivering.set()
            released = started[-1].wait(2)
        delivered.append(unit)

    with ThreadPoolExecutor(2) as pool:
        line = Line([Stage("work", False, work), Stage("deliver", True, deliver, apart=apart)], pool, UNITS + 1)
        runner = threading.Thread(target=line.run)
        runner.start()
        assert line.put(0)
        assert delivering.wait(10)
        for unit in range(1, UNITS):
            assert line.put(unit)
        line.close()
        runner.join(10)
        assert not runner.is_alive()
    return delivered, released


def test_a_delivery_that_waits_holds_no_other_unit_up_and_units_leave_in_order() -> None:
    delivered, released = line_with_a_waiting_delivery(apart=True)
    assert released, "the line started no other unit's work while the first unit's delivery waited"
    assert delivered == list(range(UNITS))


@pytest.mark.slow  # waits out its 2 s to see that nothing else started
def test_in_the_line_s_own_thread_the_same_delivery_holds_every_unit_up() -> None:
    # What the apart stage is for: run in the sequencer, the waiting delivery starts nothing else.
    delivered, released = line_with_a_waiting_delivery(apart=False)
    assert not released and delivered == list(range(UNITS))
