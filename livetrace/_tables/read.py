"""Trace files as tables: :func:`iter_tables` a unit at a time (bounded
memory), :func:`tables` whole, for one source or many."""

from __future__ import annotations

import io
import itertools
import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa

from livetrace._errors import InputPathError, TraceFormatError
from livetrace._files import GENERATION_END, WholeGenerations, decode_pieces, is_trace_gap, pieces
from livetrace._tables.build import Unit, UnitBuilder
from livetrace._tables.captures import Capture, capture_id
from livetrace._tables.schema import SCHEMAS, TABLE_NAMES
from livetrace._tables.units import CaptureUnits, PendingUnit
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.version import HEADER_SIZE, sniff

TraceSource = str | os.PathLike[str] | bytes | BinaryIO
Sources = TraceSource | Sequence[str | os.PathLike[str]]
# A source's name, what is wrong with it, and whether a capture of what it had whole was kept.
OnError = Callable[[str, TraceFormatError, bool], None]
_HEAD = 1 << 16  # how much of a source its capture id hashes


def _sources(source: Sources) -> list[TraceSource]:
    if isinstance(source, str | bytes | os.PathLike):
        return [source]
    if hasattr(source, "read"):
        return [source]  # type: ignore[list-item]  # hasattr does not narrow the union: a file object
    return list(source)


def _open(source: TraceSource) -> tuple[str, BinaryIO]:
    if isinstance(source, bytes):
        return "<bytes>", io.BytesIO(source)
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        try:
            return str(path), path.open("rb")
        except OSError as e:
            raise InputPathError(f"cannot read {path}: {e.strerror or e}") from e
    return getattr(source, "name", "<stream>"), source


@dataclass
class _Session:
    """The session the captures read belong to: its id (its first
    capture's) and how many traces it has had."""

    id: int | None = None
    traces: int = 0


def iter_tables(
    source: Sources,
    *,
    one_session: bool = False,
    compiled: bool | None = None,
    build_ahead: bool = False,
    on_error: OnError | None = None,
) -> Iterator[Unit]:
    """Every table's rows, a unit at a time: one dict of table name ->
    ``pyarrow.RecordBatch`` per generation (a legacy trace: per segment),
    each with every table's columns (a table with no rows of that unit has
    an empty batch). A capture's ``captures`` row comes with its last unit;
    a stack's and a frame's row with the first unit that refers to it.
    Memory holds one unit at a time; with ``build_ahead``, up to four:
    each is built in two steps, each in a thread of its own, while the
    next is decoded. ``source``: a
    path, bytes, a binary file, or a sequence of paths; ``one_session``:
    its files are one session's, in order (the files of a recording), where
    each is its own else; ``compiled`` as for :func:`decode`. A malformed
    trace raises :class:`TraceFormatError` after the units before the
    problem. With ``on_error``, a trace that is malformed or cut short
    keeps the generations it had whole before the problem (a capture of
    them, as ``go tool trace`` reads such a trace; none where it had none),
    ``on_error(name, error, kept)`` is told (``kept``: a capture was), and
    the next source goes on."""
    builder = UnitBuilder(compiled=compiled)
    shared = _Session() if one_session else None
    # The kernels and pyarrow's let go of the GIL: a thread of its own
    # builds each unit's ordered part, in order, and another its rest,
    # while this one decodes the next.
    with (
        ThreadPoolExecutor(max_workers=1, thread_name_prefix="livetrace-tables") as ordered,
        ThreadPoolExecutor(max_workers=1, thread_name_prefix="livetrace-tables-rest") as rest,
    ):
        for one in _sources(source):
            name, stream = _open(one)
            with stream:
                pending = _units(
                    builder, name, stream, shared if shared is not None else _Session(), compiled, on_error
                )
                yield from (_built(pending, ordered, rest) if build_ahead else (unit().whole() for unit in pending))


def _built(pending: Iterator[PendingUnit], ordered: ThreadPoolExecutor, rest: ThreadPoolExecutor) -> Iterator[Unit]:
    """The units, each built in two steps while the next is made ready:
    its ordered part in ``ordered`` (UnitBuilder.build, a unit
    after the other), then its rest in ``rest`` while the next unit's
    ordered part is built. At most three are under way besides the one
    being made ready. Where making one ready fails (a malformed trace), the
    units before it come first."""

    def build(unit: PendingUnit) -> Future[Unit]:
        return rest.submit(unit().whole)

    building: deque[Future[Future[Unit]]] = deque()
    try:
        while True:
            try:
                unit = next(pending)
            except StopIteration:
                break
            except Exception:
                while building:
                    yield building.popleft().result().result()
                raise
            building.append(ordered.submit(build, unit))
            if len(building) > 2:
                yield building.popleft().result().result()
        while building:
            yield building.popleft().result().result()
    finally:
        # (a consumer that stopped, or a build that failed: none goes on after)
        wait(building)
        wait([f.result() for f in building if not f.cancelled() and f.exception() is None])


def _units(
    builder: UnitBuilder,
    name: str,
    stream: BinaryIO,
    session: _Session,
    compiled: bool | None,
    on_error: OnError | None = None,
) -> Iterator[PendingUnit]:
    head = stream.read(_HEAD)
    version = sniff(head[:HEADER_SIZE]) if len(head) >= HEADER_SIZE else None
    if version is None:
        error = TraceFormatError(f"{name}: not a Go execution trace (it is {len(head)} bytes)", offset=0)
        if on_error is None:
            raise error
        on_error(name, error, False)
        return
    index = 0

    def units() -> CaptureUnits:
        capture = capture_id(name, index, head)
        if session.id is None:
            session.id = capture
        cap = Capture(capture, "file", name, str(version.format), trace_index=session.traces, session=session.id)
        session.traces += 1
        return CaptureUnits(builder, cap, compiled=compiled)

    current = units()
    fed = False  # the capture under way has events
    read = WholeGenerations(decode_pieces(itertools.chain([head], pieces(stream)), compiled=compiled))
    try:
        for item in read.with_ends():
            if isinstance(item, EventBatch):
                fed = True
                unit = current.feed_pending(item)
                if unit is not None:
                    yield unit
            elif item is GENERATION_END:
                unit = current.end_generation()
                if unit is not None:
                    yield unit
            elif is_trace_gap(item):  # the next trace of the stream is its own capture
                yield current.close_pending()
                index += 1
                current, fed = units(), False
    except TraceFormatError as e:
        if on_error is None:
            raise
        if fed:
            yield current.close_pending()
        on_error(name, e, fed)
        return
    yield current.close_pending()


def tables(
    source: Sources, *, one_session: bool = False, compiled: bool | None = None, on_error: OnError | None = None
) -> dict[str, pa.Table]:
    """Every table of the source's traces, whole: table name ->
    ``pyarrow.Table`` (docs/sql.md lists the tables and their columns).
    ``one_session`` and ``on_error`` as for :func:`iter_tables`."""
    parts: dict[str, list[pa.RecordBatch]] = {name: [] for name in TABLE_NAMES}
    # Every unit is kept: two more being built at a time cost little, and
    # they are built while the next is decoded.
    for unit in iter_tables(source, one_session=one_session, compiled=compiled, build_ahead=True, on_error=on_error):
        for name, batch in unit.items():
            if batch.num_rows:
                parts[name].append(batch)
    return {name: pa.Table.from_batches(parts[name], schema=SCHEMAS[name]) for name in TABLE_NAMES}
