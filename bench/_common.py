"""What the decoding benches share: a big enough trace of the demo service,
and best-of-N timing."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import trio

import livetrace
from livetrace._go.demo import run_demo
from livetrace._go.toolchain import build_demo

MIN_BYTES = 8_000_000
T = TypeVar("T")


async def record_demo(go: Path, path: Path, min_bytes: int = MIN_BYTES) -> None:
    """Record the demo service built with go (4 workers) until the trace
    holds min_bytes."""
    async with run_demo(build_demo(go), args=["-workers", "4"]) as demo:
        async with livetrace.connect(demo.trace_address) as session:
            async with trio.open_nursery() as nursery:

                async def stop_when_big() -> None:
                    while session.counters.bytes < min_bytes:
                        await trio.sleep(0.1)
                    await session.stop()

                nursery.start_soon(stop_when_big)
                rec = await livetrace.record(session, path)
    assert rec.complete


@contextmanager
def demo_trace(given: Path | None, go: Path) -> Iterator[Path]:
    """The trace to time: the one given, or a fresh recording of the demo
    service (removed afterwards)."""
    if given is not None:
        yield given
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "demo.trace"
        trio.run(record_demo, go, path)
        yield path


def best_of(runs: int, fn: Callable[..., T], *args: object) -> tuple[float, T]:
    """The fastest of runs calls (seconds) and the last call's result."""
    best, result = float("inf"), None
    for _ in range(runs):
        t = time.perf_counter()
        result = fn(*args)
        best = min(best, time.perf_counter() - t)
    return best, result  # type: ignore[return-value]  # runs >= 1: result is fn's
