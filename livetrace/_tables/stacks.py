"""Stacks and frames, deduplicated under stable ids.

A stack's id in a trace is its generation's own (a modern generation
renumbers every stack); a query over many generations and captures needs
one id per stack. Here a frame's id is a hash of (PC, function, file,
line) and a stack's a hash of its frames' ids, so the same stack has the
same id wherever it appears, in this build or another, and the work is per
distinct stack, not per event. Ids are int64 (SQL's BIGINT), never 0.
"""

from __future__ import annotations

import hashlib
import struct
import weakref

import pyarrow as pa

from livetrace._tables.kernels import lookup, missing
from livetrace._tables.schema import SCHEMAS
from livetrace._trace.accel import use_compiled
from livetrace._trace.model.tables import Tables

_Q = struct.Struct("<Q")
_NO_FRAME = (0, 0, 0)


def _id(data: bytes) -> int:
    v = int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little", signed=True)
    return v or 1


def _text(b: bytes) -> str:
    return b.decode("utf-8", "replace")


class StackIds:
    """Maps each (tables, stack id) to its stable id, and collects the rows
    of ``stacks`` and ``frames`` not yet emitted (each once per object)."""

    def __init__(self, *, compiled: bool | None = None) -> None:
        self._compiled = use_compiled(compiled)
        # Per Tables: its stack id -> stable id, for the ids asked for so far.
        self._local: weakref.WeakKeyDictionary[Tables, dict[int, int]] = weakref.WeakKeyDictionary()
        self._frames: dict[tuple[int, bytes, bytes, int], int] = {}
        # Per Tables: a PC's frame id, for the PCs whose frame it holds (its
        # stacks share most frames: each is looked up and hashed once).
        self._frame_ids: weakref.WeakKeyDictionary[Tables, dict[int, int]] = weakref.WeakKeyDictionary()
        self._stacks: dict[tuple[int, ...], int] = {}
        self._new_stacks: list[tuple[int, tuple[int, ...], tuple[int, ...], str, str]] = []
        self._new_frames: list[tuple[int, int, str, str, int]] = []
        # The stable ids of the stacks whose root frame has no function:
        # the goroutines view does not name a goroutine by them.
        self.rootless: set[int] = set()

    def stable(self, tables: Tables, ids: pa.Array, put: tuple[pa.Array, pa.Array] | None = None) -> pa.Array:
        """The stable ids (int64) of a column of stack ids of ``tables``;
        null for 0 (no stack) and for an id the tables do not hold.
        ``put``: a few rows' answers given instead (kernels.lookup)."""
        self.note(tables, ids)
        return self.noted(tables, ids, put)

    def noted(self, tables: Tables, ids: pa.Array, put: tuple[pa.Array, pa.Array] | None = None) -> pa.Array:
        """:meth:`stable` of ids :meth:`note` was given already."""
        known = self._local[tables]
        keys = pa.array(list(known), pa.uint64())
        values = pa.array(list(known.values()), pa.int64())
        return lookup(ids, keys, values, compiled=self._compiled, put=put)

    def note(self, tables: Tables, ids: pa.Array) -> None:
        """The stacks of a column of stack ids of ``tables`` given their
        stable ids (and rows, each stack once), as :meth:`stable` does
        first: the ids not known yet (every one, the first time), then one
        lookup, where a lookup to find them would make a column only to
        make it again."""
        known = self._local.get(tables)
        if known is None:
            known = self._local[tables] = {}
        for i in missing(ids, pa.array(list(known), pa.uint64()), compiled=self._compiled):
            pcs = tables.stacks.get(i)
            if pcs is not None:
                known[i] = self._stack(tables, pcs)

    def _stack(self, tables: Tables, pcs: tuple[int, ...]) -> int:
        own = self._frame_ids.get(tables)
        if own is None:
            own = self._frame_ids[tables] = {}
        t = tuple(own.get(p) or self._frame(tables, p, own) for p in pcs)  # a frame id is never 0
        sid = self._stacks.get(t)
        if sid is None:
            sid = self._stacks[t] = _id(b"".join(_Q.pack(f & (2**64 - 1)) for f in t))
            root = self._function(tables, pcs[-1:])
            self._new_stacks.append((sid, t, pcs, self._function(tables, pcs[:1]), root))
            if not root:
                self.rootless.add(sid)
        return sid

    def _frame(self, tables: Tables, p: int, own: dict[int, int]) -> int:
        """The frame id of a PC of ``tables``, noted in ``own`` where the
        tables hold its frame and strings (a live trace's may come later)."""
        frame = tables.frames.get(p)
        func, file, line = _NO_FRAME if frame is None else frame
        fb, lb = tables.strings.get(func, b""), tables.strings.get(file, b"")
        key = (p, fb, lb, line)
        fid = self._frames.get(key)
        if fid is None:
            fid = self._frames[key] = _id(_Q.pack(p) + _Q.pack(line & (2**64 - 1)) + fb + b"\0" + lb)
            self._new_frames.append((fid, p, _text(fb), _text(lb), line))
        if frame is not None and func in tables.strings and file in tables.strings:
            own[p] = fid
        return fid

    @staticmethod
    def _function(tables: Tables, pcs: tuple[int, ...]) -> str:
        """The function of the one PC given ("" for none)."""
        if not pcs:
            return ""
        func = tables.frames.get(pcs[0], _NO_FRAME)[0]
        return _text(tables.strings.get(func, b""))

    def take_new(self) -> tuple[pa.RecordBatch, pa.RecordBatch]:
        """The ``stacks`` and ``frames`` rows first seen since the last call."""
        s, f = self._new_stacks, self._new_frames
        self._new_stacks, self._new_frames = [], []
        stacks = pa.record_batch(
            [
                pa.array([r[0] for r in s], pa.int64()),
                pa.array([len(r[1]) for r in s], pa.int32()),
                pa.array([list(r[1]) for r in s], pa.list_(pa.int64())),
                pa.array([list(r[2]) for r in s], pa.list_(pa.uint64())),
                pa.array([r[3] for r in s], pa.string()),
                pa.array([r[4] for r in s], pa.string()),
            ],
            schema=SCHEMAS["stacks"],
        )
        frames = pa.record_batch(
            [
                pa.array([r[0] for r in f], pa.int64()),
                pa.array([r[1] for r in f], pa.uint64()),
                pa.array([r[2] for r in f], pa.string()),
                pa.array([r[3] for r in f], pa.string()),
                pa.array([r[4] for r in f], pa.int64()),
            ],
            schema=SCHEMAS["frames"],
        )
        return stacks, frames
