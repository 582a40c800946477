"""A trio nursery whose lone error comes out as itself.

trio wraps whatever escapes a nursery in an ExceptionGroup; our nurseries
only run helpers beside one main task, so the caller should see the typed
error (ConnectionLostError, ...) it can catch, not a group.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio


@asynccontextmanager
async def open_nursery() -> AsyncIterator[trio.Nursery]:
    try:
        async with trio.open_nursery() as nursery:
            yield nursery
    except BaseExceptionGroup as group:
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
