"""The flight recorder's captures, one at a time (trio).

A trigger that fires while a capture is pending (waiting for its tail, or being
written) joins it instead of starting another, so however often triggers
fire, one capture is in the works at a time. The files are written in a worker
thread (capture.py). A capture that cannot be written is reported, with the path,
and the recorder goes on: a full disk is retried with backoff (``--max-files``
pruned first, each time), any other error gives that capture up. Once the
session ends, the pending capture is written with the tail it has within
``finish_within`` seconds, or abandoned, and said so.
"""

from __future__ import annotations

import errno
import math
import os
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import trio

from livetrace._errors import OutputPathError
from livetrace._flight.capture import (
    JOINED_LISTED,
    Capture,
    CaptureAbandoned,
    CaptureWriteError,
    Firing,
    prune,
    write_capture,
)
from livetrace._flight.ring import FlightRing, Snapshot
from livetrace._nursery import open_nursery

DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
FIRST_RETRY = 1.0
MAX_RETRY = 30.0
# After the session ends (a stop, say), the most a pending capture gets to be written.
FINISH_WITHIN = 5.0


@dataclass
class FlightState:
    """What outlives one session: the cooldown, the counts, the captures
    written. Pass it to the next :class:`FlightRecorder` after re-attaching.
    Every trigger that fired is counted once: ``fired`` (started a capture),
    ``joined`` or ``suppressed``; every capture started once: written (in
    ``captures``), ``failed``, ``abandoned`` or ``empty``, or still pending."""

    last_fire: float = -math.inf  # trio time
    fired: int = 0  # triggers that fired and started a capture
    joined: int = 0  # fired while a capture was pending: joined it
    suppressed: int = 0  # fired within the cooldown after a capture: no capture
    captures: list[Capture] = field(default_factory=list)
    failed: int = 0  # captures given up on an error (reported with the path)
    abandoned: int = 0  # captures not written by the bound after the session ended
    empty: int = 0  # captures with nothing to write (no whole generation kept yet)
    removed: int = 0  # files removed by max_files


@dataclass(frozen=True)
class CaptureFailure:
    """A capture that could not be written (yet): ``path`` is the file or
    directory that failed, ``reason`` what went wrong in words. ``retry_in``
    is the seconds until the next try (a full disk), or None: the capture is
    given up (``abandoned``: because the recorder stopped)."""

    firing: Firing
    path: Path
    reason: str
    disk_full: bool
    retry_in: float | None
    abandoned: bool = False


def check_out_dir(path: Path) -> None:
    """Raise :class:`OutputPathError` unless captures can be written to ``path``."""
    if not path.is_dir():
        what = "is not a directory" if path.exists() else "does not exist"
        raise OutputPathError(f"cannot write captures to {path}: it {what}; create the directory first")
    if not os.access(path, os.W_OK | os.X_OK):
        raise OutputPathError(f"cannot write captures to {path}: the directory is not writable")


@dataclass
class _Pending:
    firing: Firing
    pin: int
    joined: list[Firing] = field(default_factory=list)  # the first JOINED_LISTED
    joined_count: int = 0  # before the snapshot: their spans are in it
    late: int = 0  # after the snapshot
    snapped: bool = False
    failure: CaptureFailure | None = None  # the last try's


class CaptureWriter:
    """Runs the captures of one :class:`FlightRecorder`; ``wait_tail`` waits
    for a capture's tail and says whether it was cut short."""

    def __init__(
        self,
        ring: FlightRing,
        out_dir: Path,
        *,
        after: float,
        cooldown: float,
        max_files: int | None,
        state: FlightState,
        wait_tail: Callable[[], Awaitable[bool]],
        on_capture: Callable[[Capture], object],
        on_error: Callable[[CaptureFailure], object] | None,
        finish_within: float = FINISH_WITHIN,
    ) -> None:
        self.ring = ring
        self.out_dir = out_dir
        self.after = after
        self.cooldown = cooldown
        self.max_files = max_files
        self.state = state
        self.finish_within = finish_within
        self._wait_tail = wait_tail
        self._on_capture = on_capture
        self._on_error = on_error
        self._pending: _Pending | None = None
        self._wake = trio.Event()
        self._closed = trio.Event()
        self._stop = threading.Event()  # seen by the writing thread between pieces
        self._scope: trio.CancelScope | None = None

    @property
    def pending(self) -> int:
        """Captures waiting for their tail or being written: 0 or 1."""
        return 0 if self._pending is None else 1

    @property
    def writing(self) -> bool:
        """A capture has its tail and its files are being written."""
        return self._pending is not None and self._pending.snapped

    def fire(self, firing: Firing, pin: int) -> bool:
        """Start a capture, join the pending one, or count the firing as in the
        cooldown. Returns whether a capture was started."""
        st, p = self.state, self._pending
        if self._closed.is_set():
            return False
        if p is not None:
            st.joined += 1
            if p.snapped:
                p.late += 1
            else:
                p.joined_count += 1
                if len(p.joined) < JOINED_LISTED:
                    p.joined.append(firing)
            return False
        now = trio.current_time()
        if now - st.last_fire < self.cooldown:
            st.suppressed += 1
            return False
        st.last_fire = now
        st.fired += 1
        self.ring.pin(pin)
        self._pending = _Pending(firing, pin)
        self._wake.set()
        return True

    def close(self) -> None:
        """The session ended: no capture starts now; the pending one is written
        with the tail it has, or abandoned after ``finish_within``."""
        self._closed.set()
        self._wake.set()

    def abandon(self) -> None:
        """Give the pending capture up now (a second Ctrl-C): a file being
        written is removed at its next piece."""
        self._stop.set()
        if self._scope is not None:
            self._scope.cancel()

    async def run(self) -> None:
        """Write captures as they are started until :meth:`close`, and the pending one after it."""
        async with open_nursery() as nursery:
            nursery.start_soon(self._deadline)
            while True:
                p = self._pending
                if p is None:
                    if self._closed.is_set():
                        break
                    await self._wake.wait()
                    self._wake = trio.Event()
                    continue
                try:
                    await self._capture(p)
                finally:
                    self._pending = None
            nursery.cancel_scope.cancel()

    async def _deadline(self) -> None:
        await self._closed.wait()
        await trio.sleep(self.finish_within)
        self.abandon()

    async def _capture(self, p: _Pending) -> None:
        st = self.state
        pinned = True
        capture: Capture | None = None
        with trio.CancelScope() as scope:
            self._scope = scope
            if self._stop.is_set():
                scope.cancel()
            try:
                tail_cut = await self._wait_tail()
                snap = self.ring.snapshot()
                p.snapped = True
                self.ring.unpin(p.pin)  # the snapshot holds what it needs
                pinned = False
                if not snap.units:
                    st.empty += 1  # nothing whole kept yet (it fired in the first generation)
                    return
                capture = await self._write(p, snap, tail_cut)
                if capture is None:
                    st.failed += 1
                    return
            except CaptureAbandoned:
                pass
            finally:
                self._scope = None
                if pinned:
                    self.ring.unpin(p.pin)
        if capture is None:  # abandoned (the stop's bound, or a second Ctrl-C)
            st.abandoned += 1
            last = p.failure
            why = "" if last is None else f" ({last.reason})"
            path = self.out_dir if last is None else last.path
            self._report(
                CaptureFailure(p.firing, path, f"not written when the recorder stopped{why}", False, None, True)
            )
            return
        capture = replace(capture, joined_late=p.late)
        st.captures.append(capture)
        self._on_capture(capture)

    async def _write(self, p: _Pending, snap: Snapshot, tail_cut: bool) -> Capture | None:
        """Prune, then write; retry a full disk. None if given up."""
        delay = FIRST_RETRY
        while True:
            try:
                if self.max_files is not None:
                    self.state.removed += len(await trio.to_thread.run_sync(self._prune))
                return await trio.to_thread.run_sync(
                    write_capture,
                    self.out_dir,
                    p.firing,
                    snap,
                    int(self.after * 1e9),
                    tail_cut,
                    list(p.joined),
                    p.joined_count,
                    self._stop.is_set,
                )
            except CaptureWriteError as e:
                full = e.errno in DISK_FULL
                reason = e.strerror + (
                    ": the disk is full" if full else self._gone() if e.errno == errno.ENOENT else ""
                )
                p.failure = CaptureFailure(p.firing, e.path, reason, full, delay if full else None)
                self._report(p.failure)
                if not full:
                    return None
            await trio.sleep(delay)
            delay = min(delay * 2, MAX_RETRY)

    def _prune(self) -> list[Path]:
        assert self.max_files is not None
        try:
            return prune(self.out_dir, self.max_files - 1)  # before writing: room for this one
        except OSError as e:
            raise CaptureWriteError(Path(e.filename) if e.filename else self.out_dir, e) from e

    def _gone(self) -> str:
        return "" if self.out_dir.is_dir() else f": the directory {self.out_dir} is gone"

    def _report(self, f: CaptureFailure) -> None:
        if self._on_error is not None:
            self._on_error(f)
