"""What an event stream says besides events.

Every item a decoder or a session yields is either events (an
:class:`~livetrace.Event`, an :class:`~livetrace.EventBatch`, a legacy
trace's :class:`~livetrace.Provisional` batch) or a :class:`Notice`: a gap,
a legacy segment boundary, a legacy footer. Code that only wants events can
skip every notice, on any Go version, with ``isinstance(x, Notice)``.
"""

from __future__ import annotations


class Notice:
    """Something that happened to the stream rather than in the traced
    program. ``message`` (also ``str(notice)``) says what, in one line."""

    __slots__ = ()

    @property
    def message(self) -> str:
        raise NotImplementedError

    def __str__(self) -> str:
        return self.message
