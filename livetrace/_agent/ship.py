"""The shipper: spooled entries to every sink, in order, until each has them.

Each sink gets the entries in the spool's order and never one before the
one ahead of it: the first it refuses ends its turn, and it is tried again
from there on the next flush. An entry leaves the spool once every sink has
it. A sink going down and coming back is said once each way, through
``note`` (the agent's own records).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import trio

from livetrace._agent.sinks import Sink, SinkDown
from livetrace._agent.spool import Entry, Spool

__all__ = ["Shipper"]

Note = Callable[[str, int, str], None]  # event, count, detail


class Shipper:
    def __init__(self, spool: Spool, sinks: Sequence[Sink], note: Note) -> None:
        self.spool = spool
        self.sinks = list(sinks)
        self._note = note
        self._has: dict[str, set[str]] = {s.name: set() for s in self.sinks}  # sink -> entry keys it has
        self.down: dict[str, str] = {}  # sink -> why, while it is down
        self.sent: dict[str, int] = {s.name: 0 for s in self.sinks}  # rows, by sink

    async def flush(self) -> int:
        """Send what each sink lacks, in order; the entries left in the spool."""
        turn_over: set[str] = set()
        for entry in self.spool.entries():
            rows = None
            for sink in self.sinks:
                if sink.name in turn_over or entry.key in self._has[sink.name]:
                    continue
                if rows is None:
                    rows = await trio.to_thread.run_sync(self.spool.read, entry)
                    if rows is None:  # dropped from the spool since it was listed
                        break
                try:
                    await trio.to_thread.run_sync(sink.send, entry.table, rows, entry.key)
                except SinkDown as e:
                    turn_over.add(sink.name)
                    if sink.name not in self.down:
                        self.down[sink.name] = str(e)
                        self._note("sink_down", 0, str(e))
                    continue
                self._has[sink.name].add(entry.key)
                self.sent[sink.name] += entry.rows
                if sink.name in self.down:
                    del self.down[sink.name]
                    self._note("sink_back", 0, sink.name)
            if all(entry.key in has for has in self._has.values()):
                await trio.to_thread.run_sync(self.spool.remove, entry)
                self._forget(entry)
        left = {e.key for e in self.spool.entries()}
        for has in self._has.values():
            has &= left  # entries the spool dropped since
        return len(left)

    def _forget(self, entry: Entry) -> None:
        for has in self._has.values():
            has.discard(entry.key)
