"""`tail` writes its lines in a thread of its own: when the session ends in
an error (a window of the trace that cannot be decoded), every line decoded
before the error is written before the error comes out of tail, however slow
the output, as when tail wrote each batch before taking the next."""

from __future__ import annotations

import io
import time

import pytest
import trio

from livetrace._cli.tail import View, print_events
from livetrace._errors import LivetraceError
from livetrace._protocol.address import parse_address
from livetrace._session.session import Session
from livetrace._trace.version import HEADER_SIZE

from .test_pool_identity import MODERN, Windows, window_info


class SlowOut(io.StringIO):
    """An output that takes its time with each write (a slow reader's pipe)."""

    def write(self, s: str) -> int:
        time.sleep(0.05)
        return super().write(s)


async def lines_before_the_error(out: io.StringIO, render: bool) -> str:
    broken = MODERN[:HEADER_SIZE] + b"\xff" * 64  # the second window: no trace to decode
    raised = False
    try:
        async with trio.open_nursery() as n:
            session = Session(Windows([MODERN, broken]), parse_address("unix:/nowhere"), window_info("go1.26.6"), n)
            v = View("text", None, False, False)
            v.render = render
            await print_events(session, v, out, None)
    except* LivetraceError:
        raised = True
    assert raised
    return out.getvalue()


@pytest.mark.once
async def test_the_lines_before_an_error_are_all_written_first() -> None:
    expected = await lines_before_the_error(io.StringIO(), False)
    assert expected.count("\n") > 100
    assert await lines_before_the_error(SlowOut(), True) == expected
