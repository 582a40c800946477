"""Units of work through a line of stages, some in order, the rest in a pool.

A :class:`Line` takes units (a session's generations, see ``pipeline.py``)
in order from one producer (:meth:`Line.put`) and passes each through the
same :class:`Stage` list. An *ordered* stage runs one unit at a time, in
the order the units were put, on the line's sequencer thread
(:meth:`Line.run`): the cheap steps whose state crosses units; or, if
``apart``, on a thread of its own (the last, the delivery, which waits for
the subscribers and may hand work of its own to the pool), so that the
sequencer goes on starting other units' stages. Any other stage runs in
the pool (a ``ThreadPoolExecutor`` of ``jobs`` threads), units side by
side: the heavy steps, each of which sees its own unit only (the compiled
core releases the GIL, so threads run them at once). A unit goes on to
its next stage when its current one is done; the last stage is ordered,
so units leave in the order they came.

At most ``bound`` units are in the line, holding at most ``cap`` bytes
(as ``size`` counts a unit's) unless one unit alone holds more:
:meth:`Line.put` waits for room, so a stage that holds up (the delivery to
a lossless subscriber) holds up the producer, and nothing grows. An empty
line always takes a unit, however large (what limits one is the
producer's business).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Generic, TypeVar

from livetrace._host import usable_cores, usable_memory
from livetrace._session.defaults import MAX_DEFAULT_PIPELINE_BYTES, PIPELINE_BYTES_PER_JOB, PIPELINE_MEMORY_SHARE

__all__ = ["Line", "Stage", "default_jobs"]

U = TypeVar("U")


def default_jobs() -> int:
    """The pool's size when none is given: the cores this process may use,
    less one (for the decoder and the event loop), at least 1."""
    return max(1, usable_cores() - 1)


def default_pipeline_bytes(jobs: int) -> int:
    """The pipeline's bound on the bytes its units hold when none is given:
    :data:`PIPELINE_BYTES_PER_JOB` a job, at most
    :data:`MAX_DEFAULT_PIPELINE_BYTES` and a :data:`PIPELINE_MEMORY_SHARE`-th
    of the memory this process may use, and never less than one job's."""
    cap = min(jobs * PIPELINE_BYTES_PER_JOB, MAX_DEFAULT_PIPELINE_BYTES)
    memory = usable_memory()
    if memory is not None:
        cap = min(cap, memory // PIPELINE_MEMORY_SHARE)
    return max(PIPELINE_BYTES_PER_JOB, cap)


@dataclass(frozen=True)
class Stage(Generic[U]):
    """One step of every unit: ``run(unit)``, in order or in the pool;
    ``wanted(unit)`` False skips it for that unit (no trip to the pool);
    ``note`` says more of it, for the picture of the pipeline. An ordered
    stage runs in the line's own thread, unless ``apart``: then in a thread
    of its own, one unit at a time in order still, for a stage that waits
    (the delivery waits for the subscribers to take what it hands them),
    while the line goes on starting the other units' stages."""

    name: str
    ordered: bool
    run: Callable[[U], None]
    wanted: Callable[[U], bool] = lambda unit: True
    note: str = ""
    apart: bool = False


class _Slot(Generic[U]):
    __slots__ = ("busy", "size", "stage", "unit")

    def __init__(self, unit: U, size: int) -> None:
        self.unit = unit
        self.size = size  # bytes, as the line's size counted them when it came
        self.stage = 0  # the stages before it are done
        self.busy = False  # its stage is running


class Line(Generic[U]):
    """See the module's docstring. :meth:`put` units from one thread, run
    :meth:`run` in another until it returns (after :meth:`close`, every
    unit through every stage) or raises (a stage's error: the line stops
    and :meth:`put` returns False from then on). ``peak`` is the most units
    that were in the line at once; ``peak_shared`` the most bytes that more
    than one unit held at once (never above ``cap``)."""

    def __init__(
        self,
        stages: Sequence[Stage[U]],
        pool: ThreadPoolExecutor,
        bound: int,
        cap: int | None = None,
        size: Callable[[U], int] = lambda unit: 0,
    ) -> None:
        if not stages or not stages[-1].ordered:
            raise ValueError("a line's last stage is ordered: units leave in order")
        if bound < 1:
            raise ValueError("a line has room for at least one unit")
        if cap is not None and cap < 1:
            raise ValueError("a line's cap on bytes is at least 1")
        self._stages = tuple(stages)
        self._pool = pool
        self._bound = bound
        self._cap = cap
        self._size = size
        self._bytes = 0  # the units' in the line
        self._slots: deque[_Slot[U]] = deque()
        self._cv = threading.Condition()
        self._closed = False
        self._stopped = False
        self._error: BaseException | None = None
        # The apart stages' thread: one, as they run in order anyway.
        apart = any(s.apart for s in stages)
        self._apart = ThreadPoolExecutor(1, thread_name_prefix="livetrace-line") if apart else None
        self.peak = 0
        self.peak_shared = 0

    def put(self, unit: U) -> bool:
        """Add a unit once there is room; False if the line has stopped."""
        size = self._size(unit)
        with self._cv:
            while self._slots and not self._stopped and not self._room(size):
                self._cv.wait()
            if self._stopped:
                return False
            self._slots.append(_Slot(unit, size))
            self._bytes += size
            self.peak = max(self.peak, len(self._slots))
            if len(self._slots) > 1:
                self.peak_shared = max(self.peak_shared, self._bytes)
            self._cv.notify_all()
            return True

    def _room(self, size: int) -> bool:
        """Under the lock: whether a unit of ``size`` bytes fits beside those in the line."""
        return len(self._slots) < self._bound and (self._cap is None or self._bytes + size <= self._cap)

    def holding(self, which: Callable[[U], bool]) -> tuple[int, int, int]:
        """How many of the units in the line ``which`` picks, how many there
        are, and the bytes they hold."""
        with self._cv:
            return sum(1 for slot in self._slots if which(slot.unit)), len(self._slots), self._bytes

    def wait_until(self, done: Callable[[], bool]) -> bool:
        """Wait until ``done()`` (asked again whenever a unit moves on); False
        if the line stopped first."""
        with self._cv:
            while not self._stopped and not done():
                self._cv.wait()
            return not self._stopped

    def close(self) -> None:
        """No more units: :meth:`run` returns once the line is empty."""
        with self._cv:
            self._closed = True
            self._cv.notify_all()

    def stop(self) -> None:
        """Stop taking units and running stages (the line's user gave up)."""
        with self._cv:
            self._stopped = True
            self._cv.notify_all()

    def run(self) -> None:
        """The sequencer: until the line is closed and empty, start each
        unit's next stage as soon as it may run (ordered ones here)."""
        pool = self._pool
        try:
            while True:
                with self._cv:
                    while True:
                        if self._error is not None:
                            raise self._error
                        if self._stopped:
                            return
                        ready = self._ready()
                        if ready or (self._closed and not self._slots):
                            break
                        self._cv.wait()
                if not ready:
                    return
                for slot, stage in ready:
                    if stage.ordered and not stage.apart:
                        stage.run(slot.unit)
                        self._done(slot)
                    else:
                        runner = self._apart if stage.apart and self._apart is not None else pool
                        runner.submit(stage.run, slot.unit).add_done_callback(
                            lambda f, slot=slot: self._finished(f, slot)  # type: ignore[misc]  # bound per slot
                        )
        finally:
            self.stop()
            if self._apart is not None:
                self._apart.shutdown(wait=False, cancel_futures=True)

    def _ready(self) -> list[tuple[_Slot[U], Stage[U]]]:
        """Under the lock: the stages that may start now, marked busy. An
        ordered stage waits until every unit before has passed it."""
        out = []
        behind = len(self._stages)  # the least stage a unit before this one is at
        for slot in self._slots:
            if not slot.busy:
                while slot.stage < len(self._stages) - 1 and not self._stages[slot.stage].wanted(slot.unit):
                    slot.stage += 1
                stage = self._stages[slot.stage]
                if not stage.ordered or behind > slot.stage:
                    slot.busy = True
                    out.append((slot, stage))
            behind = min(behind, slot.stage)
        return out

    def _finished(self, f: Future[None], slot: _Slot[U]) -> None:
        error = f.exception() if not f.cancelled() else None
        if error is not None:
            with self._cv:
                self._error = self._error or error
                self._cv.notify_all()
            return
        self._done(slot)

    def _done(self, slot: _Slot[U]) -> None:
        with self._cv:
            slot.busy = False
            slot.stage += 1
            while self._slots and self._slots[0].stage == len(self._stages):
                self._bytes -= self._slots.popleft().size
            self._cv.notify_all()
