"""Decoding speed for legacy traces (Go 1.5 to 1.21): ours against Go 1.21's
own tool, on the same file, in the same run.

    .venv/bin/python bench/decode_legacy.py [--trace FILE] --go PATH-to-go-1.21 [--go-parsed PATH-to-go-1.27] [--runs 3]

Without --trace it records the demo service built with Go 1.21 (4 workers)
until the file holds at least 8 MB. Timed: our decoder (read, order, check:
`LegacyDecoder`), our whole dump (`livetrace decode --dump legacy`) and Go
1.21's `go tool trace -d` (parse and print), both dumps into /dev/null;
with --go-parsed, also our `--dump parsed` (the legacy trace in the modern
event model) against that Go's `go tool trace -d=parsed` (1.11+ traces).
For 1.11 to 1.21 traces also the compiled path that makes the modern
events straight from the bytes (`exact_events`), and its pure-Python twin.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from _common import best_of, demo_trace  # bench/, the script's directory

from livetrace._go.toolchain import find_go, go_env, go_version
from livetrace._trace.legacy.fast import COMPILED_VERSIONS, exact_events
from livetrace._trace.legacy.read import LegacyDecoder
from livetrace._trace.version import GO1_5, sniff

CHUNK = 1 << 20


def decode(data: bytes) -> int:
    d = LegacyDecoder()
    for i in range(0, len(data), CHUNK):
        d.feed(data[i : i + CHUNK])
    return len(d.close().events)


def exact(data: bytes, compiled: bool) -> int:
    return exact_events(data, compiled=compiled).events


def run(cmd: list[str]) -> None:
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=go_env())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trace", type=Path)
    p.add_argument("--go", required=True, help="a Go 1.21 go binary: builds the demo, and its tool is timed")
    p.add_argument("--go-parsed", help="a Go 1.23+ go binary, whose -d=parsed is timed against ours")
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    go = find_go(args.go)
    with demo_trace(args.trace, go) as path:
        data = path.read_bytes()
        mb = len(data) / 1e6
        t_ours, events = best_of(args.runs, decode, data)
        t_dump, _ = best_of(
            args.runs, run, [sys.executable, "-m", "livetrace", "decode", str(path), "--dump", "legacy"]
        )
        binary = ["/bin/true"] if sniff(data[:16]) == GO1_5 else []
        t_go, _ = best_of(args.runs, run, [str(go), "tool", "trace", "-d", *binary, str(path)])
        rows = [
            ("livetrace LegacyDecoder (read, order, check)", t_ours),
            ("livetrace decode --dump legacy > /dev/null", t_dump),
            ("go tool trace -d > /dev/null", t_go),
        ]
        if sniff(data[:16]) in COMPILED_VERSIONS:
            t_fast, _ = best_of(args.runs, exact, data, True)
            t_twin, _ = best_of(1, exact, data, False)
            rows += [
                ("livetrace compiled: bytes to modern events", t_fast),
                ("livetrace pure-Python twin of that", t_twin),
            ]
        if args.go_parsed:
            parsed = find_go(args.go_parsed)
            t_parsed, _ = best_of(
                args.runs, run, [sys.executable, "-m", "livetrace", "decode", str(path), "--dump", "parsed"]
            )
            t_go_parsed, _ = best_of(args.runs, run, [str(parsed), "tool", "trace", "-d=parsed", str(path)])
            rows += [
                ("livetrace decode --dump parsed > /dev/null", t_parsed),
                (f"{go_version(parsed)} tool trace -d=parsed", t_go_parsed),
            ]
    print(
        f"trace: {path.name if args.trace else 'demo (4 workers)'} ({data[:13].decode()}), {mb:.1f} MB, "
        f"{events:,} events; best of {args.runs}; go: {go_version(go)}"
    )
    print(f"{'reader':<44} {'seconds':>8} {'events/s':>12} {'MB/s':>8}")
    for name, t in rows:
        print(f"{name:<44} {t:8.2f} {events / t:12,.0f} {mb / t:8.2f}")
    print(f"dump vs Go's dump: {t_go / t_dump:.2f}x")


if __name__ == "__main__":
    main()
