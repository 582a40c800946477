"""One status line on a terminal, rewritten in place while a session runs."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TextIO

import trio

from livetrace._plural import plural
from livetrace._session.limits import Counters


def format_bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError


def status_line(c: Counters, elapsed: float) -> str:
    rate = c.bytes / elapsed if elapsed > 0 else 0.0
    dropped = f"{plural(c.dropped_chunks, 'chunk')} ({format_bytes(c.dropped_bytes)})" if c.dropped_chunks else "none"
    return (
        f"{format_bytes(c.bytes):>9}  {plural(c.chunks, 'chunk'):>14}  {elapsed:6.1f} s  "
        f"{format_bytes(rate)}/s  dropped: {dropped}"
    )


async def show_progress(counters: Counters, out: TextIO, interval: float = 0.25) -> None:
    """Redraw the session's status line until cancelled, then clear it."""
    await show_status(partial(status_line, counters), out, interval)


async def show_status(text: Callable[[float], str], out: TextIO, interval: float) -> None:
    """Redraw ``text(seconds since the start)`` in place every ``interval``
    seconds until cancelled, then clear it."""
    start = trio.current_time()
    try:
        while True:
            out.write("\r" + text(trio.current_time() - start) + "\x1b[K")
            out.flush()
            await trio.sleep(interval)
    finally:
        out.write("\r\x1b[K")
        out.flush()
