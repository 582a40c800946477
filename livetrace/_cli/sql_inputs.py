"""What ``livetrace sql`` and ``export --to parquet`` read: trace files,
directories of them, globs, and live services' addresses, told apart."""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from pathlib import Path

from livetrace._cli.sources import is_file_source
from livetrace._errors import InputPathError

TRACE_SUFFIX = ".trace"
_GLOB_CHARS = frozenset("*?[")


@dataclass
class Inputs:
    files: list[Path] = field(default_factory=list)
    live: list[str] = field(default_factory=list)


def _in_directory(directory: Path) -> list[Path]:
    """The trace files under a directory, at any depth, in name order:
    what record, flight and pprof windows write (``*.trace``)."""
    found = sorted(p for p in directory.rglob("*" + TRACE_SUFFIX) if p.is_file() and not p.name.startswith("."))
    if not found:
        raise InputPathError(f"{directory} holds no {TRACE_SUFFIX} files (give the files themselves)")
    return found


def expand(sources: list[str]) -> Inputs:
    """Each SOURCE as files (a file; a directory's ``*.trace`` files; a
    glob's matches, for a pattern the shell left alone) or a live address
    (anything else: pid:N, a name, unix:, tcp:, http://). A file named
    twice is read once. Raises :class:`InputPathError` for a missing file,
    an empty directory or a glob that matches nothing."""
    got = Inputs()
    seen: set[Path] = set()

    def add(path: Path) -> None:
        key = path.resolve()
        if key not in seen:
            seen.add(key)
            got.files.append(path)

    for source in sources:
        if source == "-":
            raise InputPathError("livetrace sql reads files, not standard input: give the trace's path")
        if os.path.isdir(source):
            for path in _in_directory(Path(source)):
                add(path)
        elif _GLOB_CHARS & set(source) and not os.path.exists(source):
            matches = sorted(Path(m) for m in glob.glob(source, recursive=True) if os.path.isfile(m))
            if not matches:
                raise InputPathError(f"no file matches {source}")
            for path in matches:
                add(path)
        elif is_file_source(source):
            if not os.path.isfile(source):
                raise InputPathError(f"no such file: {source}")
            add(Path(source))
        else:
            got.live.append(source)
    return got
