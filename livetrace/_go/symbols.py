"""Naming the PCs of Go 1.5 and 1.6 traces (and gotrace streams), whose
stacks carry no function, file or line: the program binary has them, and
``go tool addr2line`` reads it, as Go 1.21's own tool did for these traces."""

from __future__ import annotations

import subprocess
from pathlib import Path

from livetrace._errors import LivetraceError
from livetrace._go.toolchain import find_go, go_env
from livetrace._trace.legacy.trace import LegacyTrace


class SymbolizeError(LivetraceError):
    """The binary could not name the trace's PCs."""


def symbolize(trace: LegacyTrace, binary: Path, go: Path | None = None) -> int:
    """Names the PCs of a PCs-only trace from the binary that wrote it;
    returns how many PCs got a function. Traces of Go 1.7 and later name
    their own frames and are left alone."""
    if not trace.version.stacks_are_pcs or not trace.stacks:
        return 0
    if not binary.is_file():
        raise SymbolizeError(f"{binary}: no such file; give the program binary that wrote the trace")
    pcs = sorted({pc for stack in trace.stacks.values() for pc in stack})
    # The stacks hold return addresses: the call is the byte before.
    query = "".join(f"0x{pc - 1:x}\n" for pc in pcs)
    try:
        out = subprocess.run(
            [str(go or find_go()), "tool", "addr2line", str(binary)],
            input=query,
            capture_output=True,
            text=True,
            env=go_env(),
            timeout=300,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SymbolizeError(f"go tool addr2line {binary}: {e}") from None
    lines = out.stdout.split("\n")
    if out.returncode != 0 or len(lines) < 2 * len(pcs):
        why = out.stderr.strip().splitlines()[-1:] or ["it gave too few answers"]
        raise SymbolizeError(f"go tool addr2line {binary} failed: {why[0]}")
    strings = trace.strings
    ids: dict[str, int] = {}
    next_id = max(strings, default=0) + 1

    def intern(s: str) -> int:
        nonlocal next_id
        if s not in ids:
            ids[s] = next_id
            strings[next_id] = s.encode("utf-8", "surrogateescape")
            next_id += 1
        return ids[s]

    named = 0
    for i, pc in enumerate(pcs):
        func, where = lines[2 * i], lines[2 * i + 1]
        file, _, line = where.rpartition(":")
        if not line.isdigit():
            file, line = "", "0"
        trace.frames[pc] = (intern(func), intern(file), int(line))
        named += func != "?"
    return named
