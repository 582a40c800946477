"""How long does the release watermark of a live legacy trace hold events,
apart from how fast the machine is?

    .venv/bin/python bench/legacy_release.py [--trace PATH | --go PATH-to-go-1.19-or-1.21] [--window-ms 500]

Replays a legacy trace (the one given, or a fresh recording of the demo
service at full load) as `tail --segment 0` would get it: buffer by buffer,
in the file's order (the order the runtime handed them over), each read the
moment its last event happened (a full buffer reaches the reader as it
fills), times from the trace's own ticks. An event's hold is the read time
of the chunk that released it less its time: what it waits for its own
buffer to fill and for the watermark, with no CPU time counted. Prints the
hold's quantiles, the late events (a P's events the watermark had passed)
and each P's buffer fill times, for the same trace in one run. The
compiled core and its twin release the same events, so this times the
compiled one only. bench/live_latency.py measures the whole path.
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from pathlib import Path

from _common import demo_trace

from livetrace._go.toolchain import find_go
from livetrace._items import Provisional
from livetrace._trace.legacy.live import LegacyLive
from livetrace._trace.legacy.wire import LegacyReader
from livetrace._trace.spec.legacy import EV_BATCH, EV_CPU_SAMPLE, EV_FREQUENCY, layout

ORIGIN = 1_700_000_000 * 10**9


def buffers(data: bytes) -> tuple[list[tuple[int, int, int, int]], int]:
    """Each buffer's (offset, P, first tick, last event's tick), and the tick frequency."""
    reader = LegacyReader()
    raws = reader.feed(data)
    assert reader.version is not None
    global_seq = reader.version.has_global_seq
    counts = layout(reader.version)[0]
    out: list[list[int]] = []
    freq = 0
    for off, typ, vals, _ in raws:
        if typ == EV_BATCH:
            p = vals[0] - (1 << 64) if vals[0] >= 1 << 63 else vals[0]
            ts = vals[2] if global_seq else vals[1]
            out.append([off, p, ts, ts])
        elif typ == EV_FREQUENCY:
            freq = vals[0]
        elif out and typ != EV_CPU_SAMPLE and counts[typ] and vals and typ > EV_FREQUENCY:
            out[-1][3] += vals[1] if global_seq else vals[0]
    assert freq, "no frequency: a trace cut short"
    return [(o, p, a, b) for o, p, a, b in out], freq


def replay(data: bytes, window_ms: float) -> None:
    bufs, freq = buffers(data)
    first = min(b[2] for b in bufs)
    ends = [b[0] for b in bufs[1:]] + [len(data)]
    pieces = [(data[: bufs[0][0]], ORIGIN)]
    last = ORIGIN
    for (off, _, _, tick), end in zip(bufs, ends, strict=True):
        last = max(last, ORIGIN + int((tick - first) * 1e9 / freq))  # read times rise
        pieces.append((data[off:end], last))
    live = LegacyLive(window_ns=int(window_ms * 1e6), compiled=True)
    holds: list[float] = []
    late = 0
    for chunk, read in pieces:
        for item in live.feed(chunk, read):
            if isinstance(item, Provisional):
                late += item.late
                holds.extend((read - ORIGIN - t) / 1e6 for t in item.events.times)
    holds.sort()
    q = statistics.quantiles(holds, n=100)
    print(
        f"{len(holds):,} provisional events from {len(bufs)} buffers; held (ms from the event to its release): "
        f"p50 {q[49]:.1f}, p99 {q[98]:.1f}, max {holds[-1]:.1f}; late {late:,}"
    )
    fills: dict[int, list[float]] = defaultdict(list)
    starts: dict[int, int] = {}
    for _, p, tick, _ in bufs:
        if p in starts:
            fills[p].append((tick - starts[p]) * 1e3 / freq)
        starts[p] = tick
    for p, f in sorted(fills.items()):
        print(f"P {p}: {len(f) + 1} buffers, filled in {statistics.median(f):.1f} ms (median), {max(f):.1f} ms at most")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trace", type=Path, help="a legacy trace (default: record the demo with --go)")
    p.add_argument("--go", help="a Go 1.19-1.21 toolchain, to record the demo")
    p.add_argument("--window-ms", type=float, default=500.0, help="LegacyLive's window_ns, in ms (default 500)")
    args = p.parse_args()
    go = None if args.trace else find_go(args.go)
    with demo_trace(args.trace, go) as path:  # type: ignore[arg-type]  # go is only read without a trace
        replay(path.read_bytes(), args.window_ms)


if __name__ == "__main__":
    main()
