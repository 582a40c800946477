"""How much CPU does `tail --format jsonl --segment 0` of a legacy Go service
spend writing its provisional events' lines?

    .venv/bin/python bench/provisional_jsonl.py [--trace PATH | --go PATH-to-go-1.19-or-1.21] [--runs 5]

Decodes a legacy trace (the one given, or a fresh recording of the demo
service at full load) provisionally, as tail gets it (64 KiB chunks, each
read 20 ms after the last), then times writing every Provisional batch's
JSON lines: the compiled core's and the twin's (provisional_dict and
json.dumps), best of --runs, as CPU time per event (the lines are made and
dropped). Both write the same bytes, checked first.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path

from _common import demo_trace

from livetrace._cli.render.jsonl import provisional_dict, utf8
from livetrace._cli.render.provisional import ProvisionalJsonl
from livetrace._go.toolchain import find_go
from livetrace._items import Provisional
from livetrace._trace.accel import use_compiled
from livetrace._trace.legacy.live import LegacyLive
from livetrace._trace.model.batch import EventBatch

CHUNK = 64 * 1024
Encode = Callable[[EventBatch], list[bytes]]


def provisional_batches(data: bytes) -> list[EventBatch]:
    live = LegacyLive()
    t = 1_700_000_000 * 10**9
    out = []
    for i in range(0, len(data), CHUNK):
        t += 20_000_000
        out += [item.events for item in live.feed(data[i : i + CHUNK], t) if isinstance(item, Provisional)]
    return out


def cpu_per_event(runs: int, batches: list[EventBatch], encode: Callable[[], Encode]) -> tuple[float, float]:
    """Best and worst of runs, ns of CPU per event (each run with a fresh
    encoder; the lines are dropped as tail's are written)."""
    n = sum(len(b) for b in batches)
    times = []
    for _ in range(runs):
        enc = encode()
        t = time.process_time_ns()
        for b in batches:
            enc(b)
        times.append((time.process_time_ns() - t) / n)
    return min(times), max(times)


def compiled() -> Encode:
    return ProvisionalJsonl().encode


def twin() -> Encode:
    def encode(b: EventBatch) -> list[bytes]:
        return [utf8("".join(json.dumps(provisional_dict(e), ensure_ascii=False) + "\n" for e in b))]

    return encode


def main(args: argparse.Namespace) -> None:
    assert use_compiled(), "the compiled core is not built"
    with demo_trace(args.trace, find_go(args.go)) as path:
        data = Path(path).read_bytes()
    batches = provisional_batches(data)
    n = sum(len(b) for b in batches)
    print(f"{len(data):,} bytes, {n:,} provisional events in {len(batches):,} batches")
    c_enc, t_enc = compiled(), twin()
    size = 0
    for b in batches:
        lines = b"".join(c_enc(b))
        assert lines == b"".join(t_enc(b)), "the compiled lines are not the twin's"
        size += len(lines)
    c_best, c_worst = cpu_per_event(args.runs, batches, compiled)
    t_best, t_worst = cpu_per_event(max(1, args.runs // 2), batches, twin)
    print(f"compiled: {c_best:,.0f} ns/event CPU (worst of {args.runs}: {c_worst:,.0f}), {size / n:.0f} B/line")
    print(f"twin:     {t_best:,.0f} ns/event CPU (worst: {t_worst:,.0f})")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trace", type=Path)
    p.add_argument("--go")
    p.add_argument("--runs", type=int, default=5)
    main(p.parse_args())
