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
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.events import Event
from livetrace._trace.modern.carry import Carrier, Fresh, fresh_generation
from livetrace._trace.modern.carry_compiled import compiled_fresh_generation
from livetrace._trace.modern.generation import Generation


class ParallelEngine:
    """A ModernDecoder's ordering engine (decoder.py's OrderingEngine) that
    orders up to ``jobs`` generations at once. A generation's batches come
    when the ones before it are out and it is ordered: at most jobs + 1
    generations wait here (the decoder assembles one more), and the decoder
    waits for the oldest when that many do; ``flush`` gives them all. The
    pool's threads end when the engine is let go of."""

    def __init__(self, mask: bytes, *, compiled: bool, jobs: int) -> None:
        self._mask, self._compiled, self._jobs = mask, compiled, max(1, jobs)
        self._pool = ThreadPoolExecutor(self._jobs, thread_name_prefix="livetrace-order")
        self._pending: deque[Future[Fresh]] = deque()
        self.carrier = Carrier(mask, compiled=compiled)

    def _fresh(self, gen: Generation) -> Fresh:
        return compiled_fresh_generation(gen, self._mask) if self._compiled else fresh_generation(gen, self._mask)

    def generation(self, gen: Generation) -> Iterator[EventBatch]:
        self._pending.append(self._pool.submit(self._fresh, gen))
        while self._pending and (len(self._pending) > self._jobs or self._pending[0].done()):
            yield from self._next()

    def flush(self) -> Iterator[EventBatch]:
        while self._pending:
            yield from self._next()

    def _next(self) -> Iterator[EventBatch]:
        fresh = self._pending.popleft().result()
        yield from self.carrier.take(fresh)

    def final_sync(self) -> Event:
        return self.carrier.final_sync()
