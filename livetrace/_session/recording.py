"""Record a session to disk as the exact byte stream ``go tool trace`` reads."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import trio

from livetrace._errors import LivetraceError, OutputTamperedError
from livetrace._items import Gap, SegmentEnd
from livetrace._outfile import AtomicFile, is_stream, open_stream
from livetrace._protocol.frames import Chunk, End, SessionInfo
from livetrace._session.limits import Counters
from livetrace._session.session import Session

INCOMPLETE_SUFFIX = ".incomplete"
FRAME_BUFFER = 16  # frames read ahead of the writes


@dataclass
class Recording:
    """How a recording went.

    ``paths`` lists the files written: one, unless the helper shed
    generations, in which case the recording continues in a new file after
    each gap (Go's reader rejects a trace with a generation missing, but
    reads one that starts at any generation), or the session is in segment
    mode, where each segment of a legacy trace is a file of its own.
    Incomplete files carry the ``.incomplete`` suffix.
    """

    info: SessionInfo
    paths: list[Path] = field(default_factory=list)
    complete: bool = False
    end: End | None = None
    error: LivetraceError | None = None
    counters: Counters = field(default_factory=Counters)
    generations: int = 0
    gaps: list[Gap] = field(default_factory=list)
    segments: list[SegmentEnd] = field(default_factory=list)
    # When the first and the last chunk after the trace's header were read (Unix ns, the source's clock).
    read_span: tuple[int, int] | None = None


def segment_path(path: Path, index: int) -> Path:
    """The file for the index-th segment of a recording: trace.out, trace.2.out, ..."""
    if index == 1:
        return path
    return path.with_name(f"{path.stem}.{index}{path.suffix}")


class _SegmentWriter:
    """Writes chunks into a new temporary file beside the target (``NAME.
    <random>.part``) and renames it into place when the segment ends, all
    through :class:`~livetrace._outfile.AtomicFile`, so that nothing another
    user plants or swaps in the directory is followed, overwritten or
    re-moded. A stream target (``-`` for standard output, a pipe, a device)
    is written in place instead: it has no name to give, and after a gap
    the recording simply goes on in it.
    """

    def __init__(self, path: Path) -> None:
        self._base = path
        self._stream = is_stream(path)
        self._index = 0
        self._file: BinaryIO | None = None
        self._part: AtomicFile | None = None
        self._header = b""
        self._gen = 0
        self._gen_start = 0  # file offset where the current generation began
        self.generations: set[int] = set()
        self.paths: list[Path] = []

    def _open(self) -> None:
        self._index += 1
        if self._stream:
            self._file = open_stream(self._base)
        else:
            self._part = AtomicFile(segment_path(self._base, self._index))
            self._file = self._part.file
        self._file.write(self._header)
        self._gen = 0
        self._written = len(self._header)

    def chunk(self, c: Chunk) -> None:
        if self._file is None:
            self._header = c.data  # the first chunk is the trace header
            self._open()
            return
        if c.generation != self._gen and c.generation != 0:
            self._gen = c.generation
            self._gen_start = self._written
            self.generations.add(c.generation)
        self._file.write(c.data)
        self._written += len(c.data)

    def gap(self, g: Gap) -> Path | None:
        """Cut the segment at a gap; returns the file that continues the recording."""
        if self._file is None or self._stream:
            return None  # a stream cannot be cut; readers restart at the next generation
        if g.discard_received and self._gen == g.first_generation:
            self._file.truncate(self._gen_start)
            self._file.seek(self._gen_start)
            self._written = self._gen_start
            self.generations.discard(g.first_generation)
        if self._written <= len(self._header):
            return None  # nothing but the header yet: the next generation can simply follow
        self._close(complete=True)
        self._open()
        return segment_path(self._base, self._index)

    def segment_end(self) -> None:
        """A legacy segment is over and complete: the next chunk is the
        header of the next one, which goes in a file of its own (a stream
        just goes on: its reader sees one trace after the other)."""
        if self._file is not None and not self._stream:
            self._close(complete=True)

    def _close(self, complete: bool) -> None:
        """Put the segment in place; raises OutputTamperedError if another
        user moved or replaced it meanwhile (then it is in no path)."""
        assert self._file is not None
        file, part = self._file, self._part
        self._file = self._part = None
        if part is None:  # a stream
            file.close()
            self.paths.append(self._base)
            return
        name = part.path.name + ("" if complete else INCOMPLETE_SUFFIX)
        self.paths.append(part.commit(name))

    def finish(self, complete: bool) -> None:
        if self._file is not None:
            self._close(complete)


class Recorder:
    """Writes a session's trace to ``path`` until the helper ends it.

    The file only gets its final name once the helper's end frame says the
    trace is complete; otherwise it is kept as ``path + '.incomplete'``. A
    connection lost mid-stream, a helper that timed out or broke the
    protocol lands in ``result.error`` rather than being raised, and
    ``result`` stays valid when :meth:`run` is cancelled, so the caller can
    always report what was saved.
    """

    def __init__(
        self,
        session: Session,
        path: str | os.PathLike[str],
        *,
        on_gap: Callable[[Gap, Path | None], None] | None = None,
    ) -> None:
        self._session = session
        self._writer = _SegmentWriter(Path(path))
        self._on_gap = on_gap
        self.result = Recording(info=session.info, counters=session.counters)

    async def run(self) -> Recording:
        rec, writer = self.result, self._writer
        seen_header = False
        try:
            # A lossless subscriber of the raw frames: it holds the reader up
            # rather than lose a byte, and decoded subscribers share the session.
            async for frame in self._session.subscribe(what="frames", lossless=True, buffer=FRAME_BUFFER):
                if isinstance(frame, Chunk):
                    writer.chunk(frame)
                    if seen_header:
                        rec.read_span = ((rec.read_span or (frame.read_unix_ns, 0))[0], frame.read_unix_ns)
                    seen_header = True
                elif isinstance(frame, SegmentEnd):
                    rec.segments.append(frame)
                    writer.segment_end()
                elif isinstance(frame, Gap):
                    rec.gaps.append(frame)
                    continued = writer.gap(frame)
                    if self._on_gap is not None:
                        self._on_gap(frame, continued)
                await trio.lowlevel.checkpoint_if_cancelled()
            rec.end = self._session.end
            rec.complete = bool(rec.end and rec.end.complete)
        except LivetraceError as e:  # lost, timed out, or not the protocol: what came is kept, incomplete
            rec.error = e
        finally:
            try:
                writer.finish(rec.complete)
            except OutputTamperedError as e:  # the file is not where it should be: say so, never "complete"
                rec.error, rec.complete = e, False
            rec.paths = writer.paths
            rec.generations = len(writer.generations)
        return rec


async def record(session: Session, path: str | os.PathLike[str]) -> Recording:
    """Record the session to ``path``; see :class:`Recorder`."""
    return await Recorder(session, path).run()
