"""Generations ordered in parallel: each by a fresh engine in a pool of
threads, then carried into the sequential decoder's stream in order.

The ordering engine is most of decoding, and its state crosses generations,
so one engine orders one generation after the other. Here each generation
goes to a pool thread as soon as it is assembled, where a fresh engine orders
it as if it were the trace's first (the compiled one without the GIL), and
``carry.Carrier`` takes the results in generation order, patching each onto
the state the one before ended in, or ordering it again where it cannot:
the same batches as one engine gives, from up to ``jobs`` cores.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import NamedTuple

from livetrace._trace.model.batch import EVENT_BYTES, EventBatch
from livetrace._trace.model.events import Event
from livetrace._trace.modern.carry import Carrier, Fresh, fresh_generation
from livetrace._trace.modern.carry_compiled import compiled_fresh_generation
from livetrace._trace.modern.generation import Generation

__all__ = ["COLUMN_BYTES_PER_WIRE_BYTE", "Holding", "ParallelEngine", "SharedPool"]


# A generation's events per byte of its batches on the wire, before they are ordered and counted:
# an event is about 5 bytes there (the 16-P demo traces: 5.2 and 5.3).
WIRE_BYTES_PER_EVENT = 5.2
# Bytes of ordered columns per byte on the wire.
COLUMN_BYTES_PER_WIRE_BYTE = round(EVENT_BYTES / WIRE_BYTES_PER_EVENT)


class Holding(NamedTuple):
    """What the engine's user holds past it: ``generations`` whole (a span
    view's units, one being cut), the ``bytes`` of their events, and
    whether it is ``empty`` (then a generation is taken however large)."""

    generations: int
    bytes: int
    empty: bool


def _nothing() -> None:
    pass


def _holds_nothing() -> Holding:
    return Holding(0, 0, True)


def _no_wait(fits: Callable[[Holding], bool]) -> bool:
    return False


@dataclass(frozen=True)
class SharedPool:
    """A pool owned by the engine's user (a live session's), which orders
    generations beside its other work. ``ordered`` is called, in the pool's
    thread, when a generation's ordering is done: a live decoder that waits
    for frames then takes it at once (:meth:`ParallelEngine.ready`), not
    when the next generation comes. ``held``: what the user holds past the
    engine (on its line), counted with the engine's own against its bounds,
    so that memory is bounded by what is in flight, wherever it is:
    ``cap`` bytes of events (None: no cap) and jobs + 1 generations;
    ``wait(fits)`` waits until ``fits(held())`` (False: it never will, the
    user stopped)."""

    pool: ThreadPoolExecutor
    ordered: Callable[[], None] = _nothing
    held: Callable[[], Holding] = _holds_nothing
    wait: Callable[[Callable[[Holding], bool]], bool] = _no_wait
    cap: int | None = None


class ParallelEngine:
    """A ModernDecoder's ordering engine (decoder.py's OrderingEngine) that
    orders up to ``jobs`` generations at once. A generation's batches come
    when the ones before it are out and it is ordered. At most jobs + 1
    generations are in flight, counting those here and those
    ``shared.held`` says its user holds (the decoder assembles one more),
    holding at most ``shared.cap`` bytes unless the first alone holds more
    (a generation here counted by its size on the wire): before it takes
    another, the engine gives the oldest of its own, or waits for its user
    to hold less. ``ready`` gives those ordered already, ``flush`` them all.
    Without ``shared``, the engine has a pool of its own, whose threads end
    when the engine is let go of."""

    def __init__(self, mask: bytes, *, compiled: bool, jobs: int, shared: SharedPool | None = None) -> None:
        self._mask, self._compiled, self._jobs = mask, compiled, max(1, jobs)
        self._shared = shared or SharedPool(ThreadPoolExecutor(self._jobs, thread_name_prefix="livetrace-order"))
        self._pending: deque[tuple[Future[Fresh], int]] = deque()
        self._bytes = 0  # the pending generations', as their columns will hold
        self.carrier = Carrier(mask, compiled=compiled)
        self.peak = 0  # the most generations in flight (here and held) when one was given to the pool
        self.peak_bytes = 0  # the most bytes in flight when more than one generation was

    def _fresh(self, gen: Generation) -> Fresh:
        return compiled_fresh_generation(gen, self._mask) if self._compiled else fresh_generation(gen, self._mask)

    def _fits(self, held: Holding, size: int) -> bool:
        """Whether a generation of ``size`` bytes may be ordered beside the
        pending ones and what the user holds."""
        if len(self._pending) + held.generations > self._jobs:
            return False
        cap = self._shared.cap
        return cap is None or self._bytes + held.bytes + size <= cap or (not self._pending and held.empty)

    def generation(self, gen: Generation) -> Iterator[EventBatch]:
        shared = self._shared
        size = 0
        if shared.cap is not None:
            wire = sum(len(b.payload) for batches in gen.batches.values() for b in batches)
            size = wire * COLUMN_BYTES_PER_WIRE_BYTE
        while not self._fits(shared.held(), size):
            if self._pending:
                yield from self._next()
            elif not shared.wait(lambda held: self._fits(held, size)):
                break  # the user stopped: what it is given now goes nowhere
        future = shared.pool.submit(self._fresh, gen)
        future.add_done_callback(lambda _: shared.ordered())
        self._pending.append((future, size))
        self._bytes += size
        held = shared.held()
        self.peak = max(self.peak, len(self._pending) + held.generations)
        if len(self._pending) + held.generations > 1:
            self.peak_bytes = max(self.peak_bytes, self._bytes + held.bytes)
        yield from self.ready()

    def ready(self) -> Iterator[EventBatch]:
        """The batches of the generations ordered already, in order (the
        oldest not yet ordered holds back those after it)."""
        while self._pending and self._pending[0][0].done():
            yield from self._next()

    def flush(self) -> Iterator[EventBatch]:
        while self._pending:
            yield from self._next()

    def _next(self) -> Iterator[EventBatch]:
        future, size = self._pending.popleft()
        self._bytes -= size
        yield from self.carrier.take(future.result())

    def final_sync(self) -> Event:
        return self.carrier.final_sync()
