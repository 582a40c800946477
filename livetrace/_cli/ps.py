"""``livetrace ps``: the Go processes this user may attach to, and how.

A table for people (fits 80 to 120 columns by cutting the command line
short), or one JSON object per process for scripts (docs/ps.md). What is
left out is counted on standard error, never silently dropped."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections import Counter
from typing import TextIO

import trio

from livetrace._attach.probe import MAX_PORTS_PER_PROCESS, PROBE_DEADLINE
from livetrace._attach.processes import (
    FIX,
    HELPER_IMPORT,
    NO_SUCH_PROCESS,
    Kind,
    ProcessInfo,
    Survey,
    find_by_name,
    survey,
)
from livetrace._attach.resolve import PID_PREFIX, parse_pid
from livetrace._cli.common import EXIT_INCOMPLETE, EXIT_OK, say
from livetrace._plural import plural
from livetrace._protocol.text import shown

HEADERS = ("PID", "USER", "COMMAND", "GO", "MODULE", "UPTIME", "ATTACH")
GAP = "  "
MIN_WIDTH, MAX_WIDTH = 80, 120
MIN_FLEX = 10  # the least a shortened COMMAND or MODULE column keeps
MAX_USER = 10
NOT_ATTACHABLE = "not attachable (*)"
NONE = "-"
NOT_ATTACHABLE_NOTE = (
    "\n(*) no livetrace helper announced itself and no HTTP port answers /debug/pprof/. To attach,\n"
    f'    import _ "{HELPER_IMPORT}" and run it with LIVETRACE_LISTEN=unix:/path/to/socket,\n'
    '    or import _ "net/http/pprof" and serve HTTP.\n'
)


def uptime_text(seconds: float | None) -> str:
    """42s, 5m12s, 3h05m, 12d03h."""
    if seconds is None:
        return NONE
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def module_text(row: ProcessInfo) -> str:
    """The main module and its version; the main package when the binary
    has no module (built outside module mode)."""
    build = row.build
    if build is None:
        return NONE
    if build.main is not None:
        return shown(f"{build.main.path} {build.main.version}")
    return shown(build.path) or NONE


def attach_text(row: ProcessInfo) -> str:
    if row.kind is not Kind.GO:
        return shown(row.reason)
    if row.attach:
        return shown(row.attach)
    if row.unprobed:
        return f"not probed: too many ports ({row.unprobed} of {len(row.ports)} not asked)"
    return NOT_ATTACHABLE


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _cut_left(text: str, width: int) -> str:
    """A module path keeps its end, the part that names the service."""
    return text if len(text) <= width else "…" + text[len(text) - width + 1 :]


def table_lines(rows: list[ProcessInfo], now: float, width: int) -> list[str]:
    """The table, its columns fitted to width where the command line and
    the module can give way; addresses are never cut (they are to be
    copied)."""
    cells = [
        [
            str(r.pid),
            _cut(shown(r.user) or NONE, MAX_USER),
            shown(" ".join(r.command)) or NONE,
            shown(r.build.go_version) if r.build else NONE,
            module_text(r),
            uptime_text(None if r.started is None else now - r.started),
            attach_text(r),
        ]
        for r in rows
    ]
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(HEADERS)]
    command, module, attach = HEADERS.index("COMMAND"), HEADERS.index("MODULE"), len(HEADERS) - 1
    # The last column is not padded: a long reason on a row that is not Go
    # may run past the width rather than squeeze every command line.
    widths[attach] = max(
        [len(HEADERS[attach])] + [len(c[attach]) for c, r in zip(cells, rows, strict=True) if r.kind is Kind.GO]
    )
    fixed = sum(w for i, w in enumerate(widths) if i not in (command, module)) + len(GAP) * (len(HEADERS) - 1)
    room = max(2 * MIN_FLEX, width - fixed)
    if widths[command] + widths[module] > room:
        # Cut short, the program's name says more than its directory.
        for row, line in zip(rows, cells, strict=True):
            if row.command:
                line[command] = shown(" ".join([os.path.basename(row.command[0]), *row.command[1:]]))
        widths[command] = max([len(HEADERS[command])] + [len(c[command]) for c in cells])
    if widths[command] + widths[module] > room:
        # The module, which names the service, is served first; the command
        # line keeps what is left, at least MIN_FLEX, as does a module cut short.
        widths[module] = min(widths[module], max(MIN_FLEX, room - MIN_FLEX))
        widths[command] = min(widths[command], max(MIN_FLEX, room - widths[module]))
    lines = []
    for line in [list(HEADERS), *cells]:
        parts = [
            text if i == attach else _cut_left(text, widths[i]) if i == module else _cut(text, widths[i])
            for i, text in enumerate(line)
        ]
        lines.append(GAP.join(p.rjust(widths[0]) if i == 0 else p.ljust(widths[i]) for i, p in enumerate(parts)))
    return [line.rstrip() for line in lines]


def row_json(row: ProcessInfo, now: float) -> dict[str, object]:
    """One process as docs/ps.md describes it."""
    build = row.build
    main = build.main if build else None
    return {
        "pid": row.pid,
        "user": row.user,
        "command": row.command,
        "name": row.name,
        "kind": row.kind.value,
        "reason": row.reason or None,
        "go_version": build.go_version if build else None,
        "package": (build.path or None) if build else None,
        "module": main.path if main else None,
        "module_version": main.version if main else None,
        "started_unix": row.started,
        "uptime_s": None if row.started is None else round(max(0.0, now - row.started), 3),
        "helper": row.helper.address if row.helper else None,
        "helper_version": row.helper.helper if row.helper else None,
        "pprof": row.pprof,
        "unprobed_ports": row.unprobed,
        "attach": row.attach,
        "fix": FIX if row.kind is Kind.GO and row.attach is None else None,
    }


def table_width() -> int:
    columns = shutil.get_terminal_size((MAX_WIDTH, 24)).columns
    return min(MAX_WIDTH, max(MIN_WIDTH, columns))


def _target_pids(targets: list[str], err: TextIO) -> tuple[list[int], bool]:
    """The pids the TARGET arguments name (a number, pid:N or a name), and
    whether each named at least one."""
    pids: list[int] = []
    all_found = True
    for target in targets:
        if target.isdigit() or target.startswith(PID_PREFIX):
            pids.append(parse_pid(target if target.startswith(PID_PREFIX) else PID_PREFIX + target))
            continue
        matches = find_by_name(target)
        if not matches:
            say(err, f"no process named {shown(target)!r}")
            all_found = False
        pids += [m.pid for m in matches]
    return pids, all_found


async def ps_command(targets: list[str], *, fmt: str, show_all: bool, out: TextIO, err: TextIO) -> int:
    """List the processes (those targets name, or all) and how to attach to each."""
    pids: list[int] | None = None
    all_found = True
    if targets:
        pids, all_found = await trio.to_thread.run_sync(_target_pids, targets, err)
    found: Survey = await survey(pids)
    now = time.time()
    if found.announce.problem:
        say(err, f"ignored the announce directory {found.announce.directory}: {found.announce.problem}")
    # Processes asked for by name or pid are all shown, whatever they are.
    everything = show_all or bool(targets)
    shown_rows = found.processes if everything else [r for r in found.processes if r.kind is Kind.GO]
    if fmt == "jsonl":
        out.writelines(json.dumps(row_json(row, now), ensure_ascii=False) + "\n" for row in shown_rows)
    elif shown_rows:
        out.write("\n".join(table_lines(shown_rows, now, table_width())) + "\n")
        if any(r.kind is Kind.GO and r.attach is None for r in shown_rows):
            out.write(NOT_ATTACHABLE_NOTE)
    elif not targets:
        say(err, "no Go processes found" + ("" if show_all else " (--all lists every process)"))
    out.flush()
    left_out = Counter(r.kind for r in found.processes if not everything and r.kind is not Kind.GO)
    if left_out:
        parts = [
            f"{n} {what}"
            for n, what in (
                (left_out[Kind.NOT_GO], "not Go"),
                (left_out[Kind.UNINSPECTABLE], "that cannot be inspected (another user's, exited, unreadable)"),
            )
            if n
        ]
        say(
            err,
            f"left out {plural(left_out.total(), 'process', 'processes')}: {', '.join(parts)}; "
            "--all lists them with the reason",
        )
    unprobed = [r for r in shown_rows if r.unprobed and r.attach is None]
    if unprobed:
        say(
            err,
            f"not probed: too many ports: {plural(sum(r.unprobed for r in unprobed), 'port')} of "
            f"{plural(len(unprobed), 'process', 'processes')} "
            f"were not asked for /debug/pprof/ (at most {MAX_PORTS_PER_PROCESS} a process, all within "
            f"{PROBE_DEADLINE:g} s); livetrace ps PID probes one process alone",
        )
    all_found = all_found and not any(r.reason == NO_SUCH_PROCESS for r in found.processes)
    return EXIT_OK if all_found else EXIT_INCOMPLETE
