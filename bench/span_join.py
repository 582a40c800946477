"""Spans a generation at a time: the sequential SpanBuilder against each
generation built on its own (build_generation) and joined in order
(SpanJoin), on one thread and on two at once, with the compiled core, on
the events of a demo trace decoded beforehand (only the span layer is
timed). Wall and CPU seconds, best of N.

    .venv/bin/python bench/span_join.py [--trace FILE] [--min-mb 24] [--runs 5] [--go PATH]

Without --trace it records the demo service (4 workers) until the file
holds --min-mb megabytes (several generations of about one second each).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import trio
from _common import record_demo  # bench/, the script's directory

import livetrace
from livetrace import EventBatch, SpanBuilder
from livetrace._go.toolchain import find_go, go_version
from livetrace._trace.spans.join import GenerationSpans, SpanJoin, build_generation


def generations(path: Path) -> list[list[EventBatch]]:
    out: list[list[EventBatch]] = []
    for b in livetrace.decode_batches(path, compiled=True):
        if isinstance(b, EventBatch):
            if out and out[-1][0].gen is b.gen:
                out[-1].append(b)
            else:
                out.append([b])
    return out


def sequential(gens: list[list[EventBatch]]) -> int:
    b = SpanBuilder(compiled=True)
    return sum(len(b.feed(x)) for g in gens for x in g) + len(b.close())


def build_all(gens: list[list[EventBatch]], threads: int) -> list[GenerationSpans]:
    if threads <= 1:
        return [build_generation(g, i, compiled=True) for i, g in enumerate(gens)]
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(lambda ig: build_generation(ig[1], ig[0], compiled=True), enumerate(gens)))


def join_all(gens: list[list[EventBatch]], built: list[GenerationSpans]) -> int:
    j = SpanJoin(compiled=True)
    n = sum(len(sb) for w, g in zip(built, gens, strict=True) for sb in j.join(w, g)) + len(j.close())
    assert j.fallbacks == 0, "a generation was built again"
    return n


def timed(runs: int, fn: Callable[[], object]) -> tuple[float, float, object]:
    """Best wall and CPU seconds of runs calls, and the last result."""
    wall = cpu = float("inf")
    result: object = None
    for _ in range(runs):
        w, c = time.perf_counter(), time.process_time()
        result = fn()
        wall, cpu = min(wall, time.perf_counter() - w), min(cpu, time.process_time() - c)
    return wall, cpu, result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trace", type=Path, help="a modern trace (default: record the demo)")
    p.add_argument("--min-mb", type=float, default=24)
    p.add_argument("--go", help="go binary to build the demo with (default: as livetrace demo finds it)")
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args()
    path = args.trace
    if path is None:
        go = find_go(args.go)
        path = Path("/tmp/span_join_demo.trace")
        trio.run(record_demo, go, path, int(args.min_mb * 1e6))
        print(f"recorded the demo built with {go_version(go)}: {path}")
    gens = generations(path)
    events = sum(len(b) for g in gens for b in g)
    sizes = ", ".join(f"{sum(map(len, g)) / 1e6:.2f}M" for g in gens)
    print(f"{path.stat().st_size / 1e6:.1f} MB, {events:,} events in {len(gens)} generations ({sizes})")
    rows = []
    w, c, n = timed(args.runs, lambda: sequential(gens))
    rows.append(("sequential SpanBuilder", w, c, n))
    for threads in (1, 2):
        w, c, built = timed(args.runs, lambda t=threads: build_all(gens, t))  # type: ignore[misc]
        assert isinstance(built, list)
        rows.append((f"build_generation, {threads} thread(s)", w, c, None))
        jw, jc, n = timed(args.runs, lambda b=built: join_all(gens, b))  # type: ignore[misc]
        rows.append((f"  then SpanJoin in order ({threads} thread(s))", jw, jc, n))
    # Two generations at once (the first two, of about the same size): one
    # after the other, then in two threads.
    pair = gens[:2]
    w1, c1, _ = timed(args.runs, lambda: build_all(pair, 1))
    w2, c2, _ = timed(args.runs, lambda: build_all(pair, 2))
    print(f"{'':<44} {'wall s':>8} {'CPU s':>8} {'spans':>10} {'spans/wall s':>13}")
    for name, w, c, n in rows:
        spans = f"{n:10,}" if isinstance(n, int) else f"{'':>10}"
        rate = f"{n / w:13,.0f}" if isinstance(n, int) else ""
        print(f"{name:<44} {w:8.3f} {c:8.3f} {spans} {rate}")
    print(f"two generations one after the other: {w1:.3f} s wall, {c1:.3f} s CPU")
    print(f"two generations in two threads:      {w2:.3f} s wall, {c2:.3f} s CPU ({w1 / w2:.2f}x)")


if __name__ == "__main__":
    main()
