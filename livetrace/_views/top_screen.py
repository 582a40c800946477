"""A :class:`Snapshot` as a screen, with rich: the same renderables redraw
a terminal (``rich.live``) and print plain text snapshots on a pipe.

rich rather than textual: top is one screen redrawn about once a second
plus a few keys, which rich's Live and Table do without an application
framework's event loop competing with trio's.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.console import Group as Stack
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from livetrace._protocol.text import shown
from livetrace._views.top import Group, Snapshot, Summary

# Sort keys: key -> (what the column is called, how a group sorts).
SORT_KEYS: dict[str, tuple[str, Any]] = {
    "r": ("running", lambda g: g.running),
    "b": ("blocked", lambda g: g.blocked_total),
    "s": ("syscall", lambda g: g.syscall),
    "w": ("runnable", lambda g: g.runnable),
    "n": ("goroutines", lambda g: g.goroutines),
}
SORT_NAMES = {name: key for key, (name, _) in SORT_KEYS.items()}
KEYS_HELP = "sort: r running  b blocked  s syscall  w runnable  n goroutines   p pause   q quit"


@dataclass
class View:
    """What the user chose: the sort column, paused, how many rows."""

    sort: str = "running"
    paused: bool = False
    rows: int = 12


def duration(ns: int) -> str:
    if ns >= 1_000_000_000:
        return f"{ns / 1e9:.2f} s"
    if ns >= 1_000_000:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1_000:
        return f"{ns / 1e3:.1f} µs"
    return f"{ns} ns"


def size(n: int | None) -> str:
    if n is None:
        return "-"
    return f"{n / (1 << 20):,.1f} MiB"


def _summary_row(label: str, s: Summary) -> list[str]:
    if not s.count:
        return [label, "0", "-", "-", "-"]
    return [label, f"{s.count:,}", duration(s.p50), duration(s.p99), duration(s.max)]


def header(snap: Snapshot, about: str, view: View) -> Text:
    span = duration(max(0, snap.end - snap.start)) if snap.end >= snap.start >= 0 else "-"
    units = f"{snap.first}" if snap.first == snap.last else f"{snap.first}-{snap.last}"
    t = Text()
    t.append("livetrace top", style="bold")
    t.append(f"  {about}\n")
    t.append(f"snapshot {snap.index + 1}: generation {units}, {span} of trace, {snap.events:,} events")
    t.append(f"   heap {size(snap.heap)} (goal {size(snap.heap_goal)})   GOMAXPROCS {snap.gomaxprocs or '-'}\n")
    if snap.shed_generations or snap.lost_batches:
        t.append(
            f"shed: {snap.shed_generations} generations by the helper, {snap.lost_batches} batches by top "
            "(it fell behind)",
            style="bold red",
        )
    else:
        t.append("shed: nothing")
    if snap.gaps:
        t.append(f"   ({snap.gaps} untraced gap{'s' if snap.gaps > 1 else ''} between segments or windows)")
    if view.paused:
        t.append("   PAUSED (p resumes)", style="bold yellow")
    return t


def runtime_table(snap: Snapshot) -> Table:
    t = Table(box=box.SIMPLE_HEAD, title="GC, stop-the-world, scheduler latency", title_justify="left", expand=False)
    for col in ("", "count", "p50", "p99", "max"):
        t.add_column(col, justify="left" if not col else "right")
    t.add_row(*_summary_row("GC cycles", snap.gc))
    t.add_row(*_summary_row("stop-the-world", snap.stw))
    t.add_row(*_summary_row("mark assists", snap.mark_assist))
    t.add_row(*_summary_row("sched latency", snap.sched))
    return t


def states_table(snap: Snapshot) -> Table:
    t = Table(box=box.SIMPLE_HEAD, title="goroutines now", title_justify="left")
    for state in snap.states:
        t.add_column(state, justify="right")
    t.add_row(*(f"{n:,}" for n in snap.states.values()))
    return t


def _said(text: str) -> Text:
    """A name from the trace (a start function, a region, a reason) as a
    cell: escaped (the traced service's words must not reach the terminal
    as escape sequences) and plain Text, so rich reads no markup in it."""
    return Text(shown(text))


def _reasons(g: Group) -> str:
    top = sorted(g.blocked.items(), key=lambda kv: -kv[1])[:2]
    return ", ".join(f"{shown(r) or 'unknown'} {duration(ns)}" for r, ns in top)


class TailCut:
    """A start function's name in its cell, cut at its start when the cell
    is too narrow (never wrapped): a Go name's end (the function, or
    ``func1.gowrap2``) tells two apart, its start (the package) seldom."""

    MIN_WIDTH = 12

    def __init__(self, name: str | Text) -> None:
        self.text = Text(name) if isinstance(name, str) else name

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        width = self.text.cell_len
        return Measurement(min(width, self.MIN_WIDTH), width)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        text, width = self.text.copy(), max(1, options.max_width)
        if text.cell_len > width:
            plain, start, cells = text.plain, len(text), 1  # the ellipsis's cell
            while start > 0 and cells + cell_len(plain[start - 1]) <= width:
                start -= 1
                cells += cell_len(plain[start])
            text = Text("…") + text.divide([start])[-1]
        text.no_wrap = True
        yield text


def goroutines_table(snap: Snapshot, view: View) -> Table:
    key = SORT_KEYS[SORT_NAMES[view.sort]][1]
    groups = sorted(snap.groups, key=lambda g: (-key(g), g.name))[: view.rows]
    t = Table(
        box=box.SIMPLE_HEAD, title=f"top goroutines by start function, sorted by {view.sort}", title_justify="left"
    )
    cols = ("start function", "goroutines", "running", "runnable", "blocked", "blocked on", "syscall")
    for col in cols:
        name = f"{col} ▼" if col == view.sort else col
        t.add_column(name, justify="left" if col in ("start function", "blocked on") else "right", overflow="fold")
    for g in groups:
        t.add_row(
            TailCut(_said(g.name)),
            f"{g.goroutines:,}",
            duration(g.running),
            duration(g.runnable),
            duration(g.blocked_total),
            Text(_reasons(g)),  # escaped in _reasons
            duration(g.syscall),
        )
    return t


def user_table(snap: Snapshot, view: View) -> Table:
    t = Table(box=box.SIMPLE_HEAD, title="slowest user regions and tasks", title_justify="left")
    for col in ("", "name", "count", "p50", "p99", "max"):
        t.add_column(col, justify="right" if col in ("count", "p50", "p99", "max") else "left")
    rows = [("task", n, s) for n, s in snap.tasks.items()] + [("region", n, s) for n, s in snap.regions.items()]
    for kind, name, s in sorted(rows, key=lambda r: (-r[2].max, r[1]))[: view.rows]:
        t.add_row(
            kind,
            _said(name) if name else "(begun before the trace)",
            f"{s.count:,}",
            duration(s.p50),
            duration(s.p99),
            duration(s.max),
        )
    return t


def screen(snap: Snapshot, about: str, view: View, *, keys: bool) -> RenderableType:
    parts: list[RenderableType] = [
        header(snap, about, view),
        runtime_table(snap),
        states_table(snap),
        goroutines_table(snap, view),
        user_table(snap, view),
    ]
    if keys:
        parts.append(Text(KEYS_HELP, style="dim"))
    return Stack(*parts)


def snapshot_dict(snap: Snapshot) -> dict[str, Any]:
    """The snapshot as JSON-ready data (``--format json``)."""
    d = asdict(snap)
    for g, grp in zip(d["groups"], snap.groups, strict=True):
        g["blocked_total"] = grp.blocked_total
    return d
