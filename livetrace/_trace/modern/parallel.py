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

from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.events import Event
from livetrace._trace.modern.carry import Carrier, Fresh, fresh_generation
from livetrace._trace.modern.carry_compiled import compiled_fresh_generation
from livetrace._trace.modern.generation import Generation

__all__ = ["ParallelEngine", "SharedPool"]


def _nothing() -> None:
    pass


def _none_held() -> int:
    return 0


def _no_wait(most: int) -> bool:
    return False


@dataclass(frozen=True)
class SharedPool:
    """A pool owned by the engine's user (a live session's), which orders
    generations beside its other work. ``ordered`` is called, in the pool's
    thread, when a generation's ordering is done: a live decoder that waits
    for frames then takes it at once (:meth:`ParallelEngine.ready`), not
    when the next generation comes. ``held``: the generations the user holds
    past the engine (on its line), counted against the engine's bound, so
    that memory is bounded by generations in flight, wherever they are;
    ``wait(most)`` waits until it holds at most ``most`` (False: it never
    will, it stopped)."""

    pool: ThreadPoolExecutor
    ordered: Callable[[], None] = _nothing
    held: Callable[[], int] = _none_held
    wait: Callable[[int], bool] = _no_wait


class ParallelEngine:
    """A ModernDecoder's ordering engine (decoder.py's OrderingEngine) that
    orders up to ``jobs`` generations at once. A generation's batches come
    when the ones before it are out and it is ordered. At most jobs + 1
    generations are in flight, counting those here and those
    ``shared.held`` says its user holds (the decoder assembles one more):
    before it takes another, the engine gives the oldest of its own, or
    waits for its user to hold fewer. ``ready`` gives those ordered
    already, ``flush`` them all. Without ``shared``, the engine has a pool
    of its own, whose threads end when the engine is let go of."""

    def __init__(self, mask: bytes, *, compiled: bool, jobs: int, shared: SharedPool | None = None) -> None:
        self._mask, self._compiled, self._jobs = mask, compiled, max(1, jobs)
        self._shared = shared or SharedPool(ThreadPoolExecutor(self._jobs, thread_name_prefix="livetrace-order"))
        self._pending: deque[Future[Fresh]] = deque()
        self.carrier = Carrier(mask, compiled=compiled)
        self.peak = 0  # the most generations in flight (here and held) when one was given to the pool

    def _fresh(self, gen: Generation) -> Fresh:
        return compiled_fresh_generation(gen, self._mask) if self._compiled else fresh_generation(gen, self._mask)

    def generation(self, gen: Generation) -> Iterator[EventBatch]:
        shared = self._shared
        while len(self._pending) + shared.held() > self._jobs:
            if self._pending:
                yield from self._next()
            elif not shared.wait(self._jobs):
                break  # the user stopped: what it is given now goes nowhere
        future = shared.pool.submit(self._fresh, gen)
        future.add_done_callback(lambda _: shared.ordered())
        self._pending.append(future)
        self.peak = max(self.peak, len(self._pending) + shared.held())
        yield from self.ready()

    def ready(self) -> Iterator[EventBatch]:
        """The batches of the generations ordered already, in order (the
        oldest not yet ordered holds back those after it)."""
        while self._pending and self._pending[0].done():
            yield from self._next()

    def flush(self) -> Iterator[EventBatch]:
        while self._pending:
            yield from self._next()

    def _next(self) -> Iterator[EventBatch]:
        fresh = self._pending.popleft().result()
        yield from self.carrier.take(fresh)

    def final_sync(self) -> Event:
        return self.carrier.final_sync()
