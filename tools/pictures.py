"""Make the pictures of docs/pictures/ from a fresh recording of the demo
service, so that none is drawn by hand:

- top.svg: a `livetrace top` snapshot of one second, as rich renders it in
  a terminal;
- sched-latency.svg: the histogram of that second's scheduler latencies
  (runnable to running), in log2 buckets.

    .venv/bin/python tools/pictures.py [--go PATH] [--trace FILE] [--out docs/pictures]

--trace takes an existing trace instead of recording the demo (Go 1.26,
2 workers, GOMAXPROCS 2, 3 s).
"""

from __future__ import annotations

import argparse
import io
import tempfile
from pathlib import Path
from xml.sax.saxutils import escape

import trio
from rich.console import Console

import livetrace
from livetrace._files import decode_batches
from livetrace._go.demo import run_demo
from livetrace._go.toolchain import build_demo, find_go
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.spans.builder import SpanBuilder
from livetrace._trace.spans.model import RES_GOROUTINE, SpanKind
from livetrace._views.top import Snapshot, TopStats
from livetrace._views.top_screen import View, duration, screen

ROOT = Path(__file__).resolve().parent.parent
WIDTH = 150  # terminal columns of the top picture


async def record_demo(go: Path, path: Path, seconds: float) -> str:
    async with run_demo(build_demo(go), args=["-workers", "2"], env={"GOMAXPROCS": "2"}) as demo:
        async with livetrace.connect(demo.trace_address, duration=seconds) as session:
            rec = await livetrace.record(session, path)
            about = f"{session.info.executable.rsplit('/', 1)[-1]} (pid {demo.pid}, {session.info.go_version})"
    assert rec.complete, rec
    return about


def second_snapshot(path: Path) -> tuple[Snapshot, list[int]]:
    """The second generation's snapshot (the first holds the tracer's start)
    and the scheduler latencies (ns) of the spans that ended in it."""
    stats, spans = TopStats(), SpanBuilder()
    snaps: list[Snapshot] = []
    latencies: list[int] = []
    for item in decode_batches(path):
        if not isinstance(item, EventBatch) or not len(item):
            continue
        if stats.unit is not None and item.gen is not stats.unit:
            snaps.append(stats.snapshot())
            if len(snaps) == 2:
                return snaps[1], latencies
            latencies = []
        stats.feed(item)
        got = spans.feed(item)
        for k, rk, s, e in zip(got.kinds, got.resource_kinds, got.starts, got.ends, strict=True):
            if k == SpanKind.RUNNABLE and rk == RES_GOROUTINE:
                latencies.append(e - s)
    raise SystemExit(f"{path} holds fewer than three generations: record longer")


def top_svg(snap: Snapshot, about: str, out: Path) -> None:
    console = Console(record=True, width=WIDTH, file=io.StringIO(), force_terminal=True, color_system="truecolor")
    console.print(screen(snap, about, View(rows=10), keys=True))
    console.save_svg(str(out), title="livetrace top")


def histogram_svg(latencies: list[int], out: Path) -> None:
    """Bars of how many latencies fall in each power-of-two bucket of ns."""
    buckets: dict[int, int] = {}
    for ns in latencies:
        b = max(0, ns.bit_length() - 1)
        buckets[b] = buckets.get(b, 0) + 1
    lo, hi = min(buckets), max(buckets)
    counts = [buckets.get(b, 0) for b in range(lo, hi + 1)]
    bar, gap, height, left, top, bottom = 34, 6, 220, 70, 40, 70
    width = max(left + len(counts) * (bar + gap) + 20, 780)  # the title fits
    peak = max(counts)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{top + height + bottom}" '
        'font-family="monospace" font-size="11">',
        f'<rect width="{width}" height="{top + height + bottom}" fill="white"/>',
        f'<text x="{left}" y="22" font-size="14">scheduler latency (runnable to running): '
        f"{len(latencies):,} waits in one second of the demo</text>",
        f'<line x1="{left}" y1="{top + height}" x2="{width - 10}" y2="{top + height}" stroke="black"/>',
    ]
    for i, n in enumerate(counts):
        x = left + i * (bar + gap)
        h = round(height * n / peak)
        parts.append(f'<rect x="{x}" y="{top + height - h}" width="{bar}" height="{h}" fill="#4477aa"/>')
        if n:
            parts.append(f'<text x="{x + bar / 2}" y="{top + height - h - 4}" text-anchor="middle">{n:,}</text>')
        label = escape(duration(1 << (lo + i)).replace(".0 ", " ").replace(".00 ", " "))
        parts.append(
            f'<text x="{x + bar / 2}" y="{top + height + 14}" text-anchor="end" '
            f'transform="rotate(-45 {x + bar / 2} {top + height + 14})">{label}</text>'
        )
    parts.append(f'<text x="{left}" y="{top + height + bottom - 6}">bucket: at least this long, less than twice</text>')
    parts.append("</svg>")
    out.write_text("\n".join(parts) + "\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--go", help="the go binary to build the demo with (default: as livetrace demo finds it)")
    p.add_argument("--trace", type=Path, help="a trace to draw instead of a fresh recording of the demo")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "pictures", help="where the pictures go")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        path, about = args.trace, str(args.trace)
        if path is None:
            path = Path(tmp) / "demo.trace"
            about = trio.run(record_demo, find_go(args.go), path, 3.0)
        snap, latencies = second_snapshot(path)
    top_svg(snap, about, args.out / "top.svg")
    histogram_svg(latencies, args.out / "sched-latency.svg")
    print(f"wrote {args.out / 'top.svg'} and {args.out / 'sched-latency.svg'}")


if __name__ == "__main__":
    main()
