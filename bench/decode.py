"""Decoding speed: ours (wire layer, parsed layer; the compiled core and its
pure-Python twin) against Go's own reader, on the same trace file, in the
same run.

    .venv/bin/python bench/decode.py [--trace FILE] [--go PATH] [--xexp-reader PATH] [--no-twin]

The wire layer cuts frames and reads every record of every batch into
columns; the parsed layer orders events and runs the state machines into
EventBatch columns (stacks and strings are symbolized on demand, so not
here). "events" are the parsed layer's events; the wire layer counts its
records (events plus the table records: strings, stacks, CPU samples).

Without --trace it records the demo service (Go 1.26, 4 workers) until the
file holds at least 8 MB. Go's side is always `go tool trace -pprof=sched`
(parsing plus a small profile computation); with --xexp-reader, also a
program built locally against golang.org/x/exp/trace that reads the file
given as its argument with ReadEvent in a loop (build it yourself; livetrace
ships no copy of it).
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

from _common import best_of, demo_trace  # bench/, the script's directory

from livetrace._go.toolchain import find_go, go_env, go_version
from livetrace._trace.modern.decoder import ModernDecoder
from livetrace._trace.modern.wire import Batch, FrameReader, record_columns

CHUNK = 1 << 20


def wire(data: bytes, compiled: bool) -> int:
    reader, n = FrameReader(), 0
    for i in range(0, len(data), CHUNK):
        for f in reader.feed(data[i : i + CHUNK]):
            if isinstance(f, Batch) and f.exp < 0:
                n += len(record_columns(f.payload, reader.minor or 26, compiled=compiled).codes)
    reader.close()
    return n


def parsed(data: bytes, compiled: bool) -> int:
    d, n = ModernDecoder(compiled=compiled), 0
    for i in range(0, len(data), CHUNK):
        n += sum(map(len, d.feed_batches(data[i : i + CHUNK])))
    return n + sum(map(len, d.close_batches()))


def run_cmd(cmd: list[str]) -> None:
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=go_env())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trace", type=Path)
    p.add_argument("--go", help="go binary whose `go tool trace` to time (default: as livetrace demo finds it)")
    p.add_argument("--xexp-reader", help="a binary built against golang.org/x/exp/trace: reads the file given")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--no-twin", action="store_true", help="skip the pure-Python twin (slow)")
    args = p.parse_args()
    go = find_go(args.go)
    with demo_trace(args.trace, go) as path:
        data = path.read_bytes()
        mb = len(data) / 1e6
        t_wire, records = best_of(args.runs, wire, data, True)
        t_parsed, events = best_of(args.runs, parsed, data, True)
        rows = [("compiled wire layer (records)", t_wire, records), ("compiled parsed layer", t_parsed, events)]
        if not args.no_twin:
            t, _ = best_of(1, wire, data, False)
            rows.append(("pure-Python wire layer (records)", t, records))
            t, _ = best_of(1, parsed, data, False)
            rows.append(("pure-Python parsed layer", t, events))
        t_go, _ = best_of(args.runs, run_cmd, [str(go), "tool", "trace", "-pprof=sched", str(path)])
        rows.append(("go tool trace -pprof=sched", t_go, events))
        t_x = None
        if args.xexp_reader:
            t_x, _ = best_of(args.runs, run_cmd, [args.xexp_reader, str(path)])
            rows.append(("golang.org/x/exp/trace ReadEvent loop", t_x, events))
    print(
        f"trace: {path.name if args.trace else 'demo (go1.26, 4 workers)'}, {mb:.1f} MB, {events:,} events, "
        f"{records:,} wire records; best of {args.runs} (the twin: 1 run)"
    )
    print(f"go: {go_version(go)} ({go})")
    print(f"{'reader':<40} {'seconds':>8} {'events/s':>12} {'MB/s':>8}")
    for name, t, n in rows:
        print(f"{name:<40} {t:8.3f} {n / t:12,.0f} {mb / t:8.2f}")
    print(
        f"vs go tool trace: parsed layer {t_go / t_parsed:.2f}x, wire layer {t_go / t_wire:.2f}x "
        "(events/s and records/s over Go's events/s)"
    )
    if t_x is not None:
        wire_ratio = (records / t_wire) / (events / t_x)
        print(
            f"vs x/exp reader: parsed layer {t_x / t_parsed:.2f}x (target >= 3x), "
            f"wire layer {wire_ratio:.2f}x (target >= 5x)"
        )


if __name__ == "__main__":
    main()
