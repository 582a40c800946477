"""A traced service's words never reach the operator's terminal raw (issue
24, finding 6): region, task and log names, reasons, functions and files
go through one escaping (``livetrace._protocol.text.shown``, or Go's
quoting in tail's event lines) in every writer of a terminal line. Each
writer is fuzzed with any string (every code point, lone surrogates
included), and one test runs every terminal writer of the CLI over a trace
whose strings are escape sequences, served by a pprof server written here."""

from __future__ import annotations

import codecs
import io
import os
import pty
import re
import subprocess
import sys
import tty
import unicodedata
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from rich.console import Console

from livetrace._cli.flight import _fired
from livetrace._cli.render.gostr import go_quote
from livetrace._cli.render.jsonl import frame_text
from livetrace._cli.render.spans import span_text
from livetrace._flight.capture import Firing
from livetrace._flight.triggers import parse_trigger
from livetrace._protocol.text import shown
from livetrace._trace.model.events import Resource, StackFrame
from livetrace._trace.spans.model import Span, SpanKind
from livetrace._views.top import Group, Snapshot, Summary
from livetrace._views.top_screen import View, screen

from .conftest import examples
from .test_pprof_hostile import hostile_pprof
from .textform import CORPUS, load, uvarint

# Clear the screen, write the clipboard (OSC 52), retitle the window and
# the tmux pane, move the cursor, ring the bell, overwrite the line, a C1
# CSI (raw and as UTF-8), a bidi override, a line separator, a new line,
# and a byte that is no UTF-8.
HOSTILE = (
    b"\x1b[2J\x1b[H\x1b]52;c;cHduZWQ=\x07\x1b]2;pwned\x1b\\\x1bkpane\x1b\\\x07\r\x08\x7f"
    b"\x9b31m\xc2\x9b31m\xe2\x80\xae\xe2\x80\xa8\nforged line\t\xff"
)
CONTROLS = [chr(c) for c in [*range(0x20), *range(0x7F, 0xA0)]] + ["\u2028", "\u2029", "\u202e", "\u200f"]


def raw_controls(text: str) -> list[str]:
    """The control characters in a writer's output that are not its own
    line ends: C0 (but for a new line), DEL and C1, format characters
    (bidi overrides), line separators, and lone surrogates."""
    return sorted(
        {f"U+{ord(c):04X}" for c in text if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")}
    )


def one_line(text: str) -> None:
    assert "\n" not in text, text
    assert not raw_controls(text), (raw_controls(text), text)


# ---- every writer's escaping path, fuzzed ----

ANY = st.text(
    st.one_of(
        st.characters(exclude_categories=()),  # every code point, surrogates included
        st.sampled_from(CONTROLS),
        st.integers(0xDC80, 0xDCFF).map(chr),  # bytes that were not UTF-8 (surrogateescape)
    ),
    max_size=40,
)
FUZZ = settings(max_examples=examples(60))


def _span(name: str, reason: str = "", func: str = "f", file: str = "a.go") -> Span:
    frames = [StackFrame(func, file, 7, 0x1000)]
    return Span(SpanKind.REGION, Resource("Goroutine", 3), 0, 5_000_000, reason, name, 1, frames, frames)


@FUZZ
@given(ANY, ANY, ANY, ANY)
@example("", "", "", "\ud800")  # a surrogate no decoded name holds: only through the API
def test_span_lines_escape_every_string(name: str, reason: str, func: str, file: str) -> None:
    one_line(span_text(_span(name, reason, func, file), 0))


@FUZZ
@given(ANY, ANY)
@example("\ud800", "\udfff")
def test_tails_frame_text_escapes(func: str, file: str) -> None:
    one_line(frame_text([StackFrame(func, file, 1, 0)]))


@FUZZ
@given(ANY)
def test_shown_and_go_quote_leave_no_control(text: str) -> None:
    one_line(shown(text))
    one_line(go_quote(text.encode("utf-8", "surrogatepass")))


@FUZZ
@given(ANY, ANY)
def test_flights_fired_line_escapes(name: str, reason: str) -> None:
    err = io.StringIO()
    firing = Firing(parse_trigger("region:*>1ms"), 0, span=_span(name, reason))
    _fired(err, firing, True)
    lines = err.getvalue().splitlines()
    assert len(lines) == 1
    one_line(lines[0])


def _snapshot(name: str) -> Snapshot:
    s = Summary.of([1_000, 2_000])
    return Snapshot(
        index=0,
        first=1,
        last=1,
        start=0,
        end=10,
        events=2,
        gc=s,
        stw=s,
        sched=s,
        mark_assist=s,
        states={"running": 1},
        groups=[Group(name, goroutines=1, running=5, blocked={name: 3})],
        regions={name: s},
        tasks={name: s},
        heap=None,
        heap_goal=None,
        gomaxprocs=1,
        shed_generations=0,
        lost_batches=0,
        gaps=0,
    )


def _top_text(snap: Snapshot) -> str:
    out = io.StringIO()
    console = Console(file=out, width=200, force_terminal=False, color_system=None)
    console.print(screen(snap, "svc", View(), keys=False))
    return out.getvalue()


@FUZZ
@given(ANY)
def test_top_escapes_names_and_reads_no_markup_in_them(name: str) -> None:
    text = _top_text(_snapshot(name))
    assert not raw_controls(text), (raw_controls(text), text)


def test_top_shows_a_markup_name_as_written() -> None:
    text = _top_text(_snapshot("[link=http://evil/]x[/link][bold]y"))
    assert "[link=http://evil/]x[/link][bold]y" in text, text


# ---- every terminal writer of the CLI over a hostile trace ----


def hostile_trace(tmp_path: Path) -> bytes:
    """Go's annotations test trace (regions, tasks, logs) with the hostile
    bytes in front of every string but the GC worker names: task, region
    and log names, messages, reasons, functions and files."""
    lines = (CORPUS / "go122-annotations.test").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "Strings")
    grown = 0
    for i in range(start, len(lines)):
        m = re.fullmatch(r'\tdata="(.*)"', lines[i])
        if m is None:
            continue
        old = codecs.escape_decode(m.group(1).encode())[0]
        if old in (b"Not worker", b"GC (dedicated)", b"GC (fractional)", b"GC (idle)"):
            continue
        new = HOSTILE + old
        grown += len(uvarint(len(new))) + len(new) - len(uvarint(len(old))) - len(old)
        lines[i] = '\tdata="' + "".join(f"\\x{b:02x}" for b in new) + '"'
    size = re.fullmatch(r"(EventBatch .* size=)(\d+)", lines[start - 1])
    assert size is not None
    lines[start - 1] = size.group(1) + str(int(size.group(2)) + grown)
    path = tmp_path / "hostile.test"
    path.write_text("\n".join(lines) + "\n")
    return load(path).data


def _window(trace: bytes) -> object:
    def behave(sock: object) -> None:
        sock.sendall(  # type: ignore[attr-defined]  # a socket
            b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
            + f"Content-Length: {len(trace)}\r\nConnection: close\r\n\r\n".encode()
            + trace
        )

    return behave


WRITERS = [
    ("tail", "text"),
    ("tail", "--spans"),
    ("tail", "--format", "jsonl"),
    ("tail", "--spans", "--format", "jsonl"),
    ("top", "--once", "--interval", "1"),
    ("top", "--once", "--interval", "1", "--format", "json"),
    ("flight", "-t", "region:*>0s", "--no-status"),
    ("record",),
    # Not `decode`: its dumps are Go's own (go tool trace -d), byte for byte,
    # for files and diffs (docs/protocol.md, "Terminal escaping").
]


@pytest.mark.slow
@pytest.mark.once
def test_no_terminal_writer_passes_a_control_byte(tmp_path: Path) -> None:
    trace = hostile_trace(tmp_path)
    found = {}
    with hostile_pprof(_window(trace)) as base:  # type: ignore[arg-type]  # a Behaviour
        for command, *options in WRITERS:
            args = [command, base, "-d", "1", *(o for o in options if o != "text")]
            if command in ("flight", "record"):
                args += ["-o", str(tmp_path / command)]
            if command == "flight":
                (tmp_path / command).mkdir()
            proc = subprocess.run(
                [sys.executable, "-m", "livetrace", *args], capture_output=True, timeout=120, check=False
            )
            # Bytes that are no UTF-8 come out as lone surrogates: raw too.
            out, err = (b.decode("utf-8", "surrogateescape") for b in (proc.stdout, proc.stderr))
            assert "Traceback" not in err, err
            for stream, text in (("stdout", out), ("stderr", err)):
                bad = raw_controls(text)
                if bad:
                    found[f"{' '.join(args[:1] + options)} {stream}"] = bad
            if command == "tail":
                assert "pwned" in out, (args, out, err)  # the hostile names were shown, escaped
    assert not found, found


def _decode_output(trace: Path, dump: str, terminal: bool) -> str:
    """``livetrace decode`` of the trace, its standard output a terminal (a
    pty in raw mode, so that the bytes are the command's own) or a pipe."""
    argv = [sys.executable, "-m", "livetrace", "decode", "--dump", dump, str(trace)]
    if not terminal:
        return subprocess.run(argv, capture_output=True, timeout=60, check=True).stdout.decode(
            "utf-8", "surrogateescape"
        )
    controller, terminal_fd = pty.openpty()
    tty.setraw(terminal_fd)
    with subprocess.Popen(argv, stdout=terminal_fd, stderr=subprocess.DEVNULL) as proc:
        os.close(terminal_fd)
        chunks = []
        while True:
            try:
                chunk = os.read(controller, 1 << 16)
            except OSError:  # EIO: the terminal's other end closed
                break
            if not chunk:
                break
            chunks.append(chunk)
        os.close(controller)
        assert proc.wait(timeout=60) == 0
    return b"".join(chunks).decode("utf-8", "surrogateescape")


@pytest.mark.once
@pytest.mark.parametrize("dump", ["parsed", "wire"])
def test_decode_escapes_on_a_terminal_and_stays_gos_in_a_pipe(tmp_path: Path, dump: str) -> None:
    path = tmp_path / "hostile.trace"
    path.write_bytes(hostile_trace(tmp_path))
    piped = _decode_output(path, dump, terminal=False)
    assert raw_controls(piped)  # Go's dump, byte for byte: the strings as they are
    shown = _decode_output(path, dump, terminal=True)
    assert not raw_controls(shown), raw_controls(shown)
    assert "\\x1b[2J" in shown and "forged line" in shown
    assert shown.count("\n") == piped.count("\n")  # no line forged, none lost
