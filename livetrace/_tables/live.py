"""A live session's tables, a unit at a time, as its generations (legacy
segments, pprof windows) complete: the session's exact event batches
through :class:`CaptureUnits`, each unit handed to an async sink (a Parquet
writer's rolling files, or :func:`session_tables`' list). The caller opens
the session (``connect``), so that it can record it alongside, as ``top
--record`` does."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import PurePath

import pyarrow as pa
import trio

from livetrace._errors import UnsupportedTraceVersionError
from livetrace._items import Gap, SegmentGap, WindowGap
from livetrace._protocol.frames import SessionMode
from livetrace._session.session import Session
from livetrace._tables.build import Unit, UnitBuilder
from livetrace._tables.captures import Capture, capture_id
from livetrace._tables.schema import SCHEMAS, TABLE_NAMES
from livetrace._tables.units import CaptureUnits
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.version import TraceVersion

_SOURCES = {SessionMode.PPROF_WINDOWS: "pprof window"}  # any other mode: the helper's session


def _capture(session: Session, index: int) -> Capture:
    info = session.info
    address = str(session.address)
    who = f"{info.pid}\0{info.start_unix_ns}\0{info.session}".encode()
    try:
        trace_format = str(TraceVersion.of_runtime(info.go_version).format)
    except (ValueError, UnsupportedTraceVersionError):  # a version no Go trace format has
        trace_format = ""
    return Capture(
        capture_id(address, index, who),
        _SOURCES.get(info.mode, "helper"),
        address,
        trace_format,
        trace_index=index,
        session=capture_id(address, 0, who),
        service=PurePath(info.executable).name or None,
        pid=info.pid or None,
        go_version=info.go_version or None,
    )


async def session_units(
    session: Session,
    sink: Callable[[Unit], Awaitable[None]],
    *,
    builder: UnitBuilder | None = None,
    compiled: bool | None = None,
) -> None:
    """Hand each unit of the session's trace to ``sink`` as it completes,
    until the session ends. A legacy segment or a pprof window is a capture
    of its own (nothing was traced between two); generations the helper
    shed forget the spans open across them."""
    builder = builder or UnitBuilder(compiled=compiled)
    index = 0
    current = CaptureUnits(builder, _capture(session, index), compiled=compiled)
    # The spans and a unit's tables are built in a worker thread, one step
    # at a time: trio's thread stays free for the session's frames (and
    # Ctrl-C) while a generation's tables take a second.
    async for item in session.event_batches(provisional=False):
        if isinstance(item, EventBatch):
            unit = await trio.to_thread.run_sync(current.feed, item)
            if unit is not None:
                await sink(unit)
        elif isinstance(item, SegmentGap | WindowGap):
            await sink(await trio.to_thread.run_sync(current.close))
            index += 1
            current = CaptureUnits(builder, _capture(session, index), compiled=compiled)
        elif isinstance(item, Gap):
            current.gap()
    await sink(await trio.to_thread.run_sync(current.close))


async def session_tables(session: Session, *, compiled: bool | None = None) -> dict[str, pa.Table]:
    """The whole session's tables, once it ends (``connect(duration=...)``)."""
    parts: dict[str, list[pa.RecordBatch]] = {name: [] for name in TABLE_NAMES}

    async def keep(unit: Unit) -> None:
        for name, batch in unit.items():
            if batch.num_rows:
                parts[name].append(batch)

    await session_units(session, keep, compiled=compiled)
    return {name: pa.Table.from_batches(parts[name], schema=SCHEMAS[name]) for name in TABLE_NAMES}


def live_tables(address: str, duration: float, *, compiled: bool | None = None) -> dict[str, pa.Table]:
    """The tables of a session of ``duration`` seconds with the service at
    ``address`` (any address ``connect`` takes), from a caller outside trio."""
    from livetrace._session.connect import connect

    async def run() -> dict[str, pa.Table]:
        async with connect(address, duration=duration) as session:
            return await session_tables(session, compiled=compiled)

    return trio.run(run)
