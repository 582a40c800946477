"""Record a session to disk as the exact byte stream ``go tool trace`` reads."""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import trio

from livetrace._errors import LivetraceError, OutputPathError
from livetrace._protocol.frames import Chunk, End, Gap, SegmentEnd, SessionInfo
from livetrace._session.session import Counters, Session

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


def segment_path(path: Path, index: int) -> Path:
    """The file for the index-th segment of a recording: trace.out, trace.2.out, ..."""
    if index == 1:
        return path
    return path.with_name(f"{path.stem}.{index}{path.suffix}")


def _is_stream(path: Path) -> bool:
    """A pipe, a terminal or a device (/dev/stdout, /dev/null): written to
    in place, never renamed over."""
    if str(path) == "-":
        return True
    try:
        return not stat.S_ISREG(path.stat().st_mode)
    except FileNotFoundError:
        return False


def check_output(path: str | os.PathLike[str]) -> None:
    """Raise :class:`OutputPathError` unless a recording can go to path: a
    stream target must be writable, a file's directory must exist and take
    new files. Checked before attaching, so that a typo costs no session."""
    p = Path(path)
    if str(p) == "-":
        return
    if p.is_dir():
        raise OutputPathError(f"cannot record to {p}: it is a directory; give a file name")
    if _is_stream(p):
        if not os.access(p, os.W_OK):
            raise OutputPathError(f"cannot write to {p}: permission denied")
        return
    parent = p.parent
    if not parent.is_dir():
        raise OutputPathError(f"cannot record to {p}: the directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputPathError(f"cannot record to {p}: the directory {parent} is not writable")


def _open_stream_target(path: Path) -> BinaryIO:
    """An existing pipe or device, opened for writing without creating or
    truncating anything; a regular file there now (swapped in since the
    check) is refused rather than overwritten."""
    if str(path) == "-":
        return os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    fd = os.open(path, os.O_WRONLY | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    if stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OutputPathError(f"{path} became a regular file while recording started; not overwriting it")
    return os.fdopen(fd, "wb")


class _SegmentWriter:
    """Writes chunks into a new temporary file beside the target and renames
    it into place when the segment ends.

    The temporary file gets a random name and is created exclusively
    (``mkstemp``: O_CREAT|O_EXCL, which refuses an existing name, symlinks
    included), so nothing planted in the directory is followed or
    overwritten; the final name is replaced atomically by the rename, which
    replaces a symlink there rather than writing through it. A stream
    target (``-`` for standard output, a pipe, a device) is written in
    place instead: it has no name to give, and after a gap the recording
    simply goes on in it.
    """

    def __init__(self, path: Path) -> None:
        self._base = path
        self._stream = _is_stream(path)
        self._index = 0
        self._file: BinaryIO | None = None
        self._part: Path | None = None
        self._header = b""
        self._gen = 0
        self._gen_start = 0  # file offset where the current generation began
        self.generations: set[int] = set()
        self.paths: list[Path] = []

    def _open(self) -> None:
        self._index += 1
        if self._stream:
            self._file = _open_stream_target(self._base)
        else:
            final = segment_path(self._base, self._index)
            fd, name = tempfile.mkstemp(prefix=final.name + ".", suffix=".part", dir=final.parent)
            self._part = Path(name)
            self._file = os.fdopen(fd, "wb", buffering=1 << 20)
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
        assert self._file is not None
        self._file.close()
        self._file = None
        if self._stream:
            self.paths.append(self._base)
            return
        assert self._part is not None
        final = segment_path(self._base, self._index)
        if not complete:
            final = final.with_name(final.name + INCOMPLETE_SUFFIX)
        os.chmod(self._part, 0o666 & ~_umask())  # mkstemp makes it 0600; a trace file is an ordinary file
        os.replace(self._part, final)
        self._part = None
        self.paths.append(final)

    def finish(self, complete: bool) -> None:
        if self._file is not None:
            self._close(complete)


def _umask() -> int:
    """The process's umask, read without setting it where Linux allows
    (setting it, even back, races with other threads creating files)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


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
        try:
            # A lossless subscriber of the raw frames: it holds the reader up
            # rather than lose a byte, and decoded subscribers share the session.
            async for frame in self._session.subscribe(what="frames", lossless=True, buffer=FRAME_BUFFER):
                if isinstance(frame, Chunk):
                    writer.chunk(frame)
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
            writer.finish(rec.complete)
            rec.paths = writer.paths
            rec.generations = len(writer.generations)
        return rec


async def record(session: Session, path: str | os.PathLike[str]) -> Recording:
    """Record the session to ``path``; see :class:`Recorder`."""
    return await Recorder(session, path).run()
