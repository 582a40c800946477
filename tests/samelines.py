"""Two streams of events compared by their `-d=parsed` lines, without
making a line per event where they are the same.

An event's line (``parsed_text``) is made from the event's own fields and
from its tables (strings, stacks, frames, derived strings, the clock), and
nothing else: two events with the same fields, whose tables hold the same,
have the same line. Hundreds of thousands of lines (a demo trace) took
most of a comparison's seconds; the fields and the tables take a tenth of
that. Where they differ, the lines are made and compared after all, so the
verdict is the lines' (raw ids may differ where the lines do not), and a
failure shows the lines.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from livetrace._cli.render.dump import parsed_text
from livetrace._trace.model.events import Event
from livetrace._trace.model.tables import Tables

_TABLE_FIELDS = [f.name for f in dataclasses.fields(Tables)]


def fields_and_tables(events: Iterable[Event]) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """Each event's fields, with its tables as their index among the
    stream's tables (first seen first; -1 for none), and what each of
    those tables holds."""
    index: dict[int, int] = {}
    tables: list[tuple[object, ...]] = []
    out: list[tuple[object, ...]] = []
    for e in events:
        t = e.gen
        if t is None:
            i = -1
        elif (i := index.get(id(t), -2)) == -2:  # the events keep their tables alive: ids stay unique
            i = index[id(t)] = len(tables)
            tables.append(tuple(getattr(t, f) for f in _TABLE_FIELDS))
        out.append((e.code, e.time, e.m, e.p, e.g, tuple(e.args), e.extra, i))
    return out, tables


def assert_same_lines(got: list[Event], want: list[Event], what: object = None) -> None:
    """got's events print the same `-d=parsed` lines as want's (what: for
    the failure's message)."""
    if fields_and_tables(got) == fields_and_tables(want):
        return
    assert [parsed_text(e) for e in got] == [parsed_text(e) for e in want], what
