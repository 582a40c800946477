"""What the consumer writes, hardened: recordings never write through links
planted in the output directory, a bad output path is found before the
session starts, and text from the trace that is not UTF-8 is shown as
U+FFFD (its bytes kept in the API) instead of killing the output."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import livetrace

from . import textform
from .conftest import cli
from .test_hostile_peer import HEADER, Conn, Peer, batch, finish, one_error_line

BODY = batch(1, b"\x00" * 100)  # a chunk record only copies, never decodes


def simple_helper(c: Conn) -> None:
    c.handshake()
    c.chunk(HEADER)
    c.chunk(BODY, gen=1)
    c.end(chunks=2, bytes=len(HEADER) + len(BODY))
    c.wait_closed(10)


def record(peer: Peer, out: str | Path, *args: str) -> tuple[int, str]:
    code, _, err = finish(cli("record", peer.address, "-o", str(out), *args))
    return code, err


# ---- output files ----
# (A recording copies what comes and decodes nothing: `once`.)


@pytest.mark.once
def test_a_part_file_planted_as_a_symlink_is_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    out = tmp_path / "trace.out"
    (tmp_path / "trace.out.part").symlink_to(victim)  # where recordings used to be written
    with Peer(simple_helper, tmp_path) as peer:
        code, err = record(peer, out)
    assert code == 0, err
    assert victim.read_bytes() == b"precious"
    assert out.read_bytes() == HEADER + BODY and not out.is_symlink()
    assert [p.name for p in tmp_path.glob("*.part")] == ["trace.out.part"], "only the planted link is left"


@pytest.mark.once
def test_a_symlink_at_the_final_name_is_replaced_not_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    out = tmp_path / "trace.out"
    out.symlink_to(victim)
    with Peer(simple_helper, tmp_path) as peer:
        code, err = record(peer, out)
    assert code == 0, err
    assert victim.read_bytes() == b"precious"
    assert not out.is_symlink() and out.read_bytes() == HEADER + BODY


@pytest.mark.once
def test_an_incomplete_recording_goes_through_a_fresh_file_too(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    out = tmp_path / "cut.trace"
    (tmp_path / "cut.trace.part").symlink_to(victim)

    def cut(c: Conn) -> None:
        c.handshake()
        c.chunk(HEADER)
        c.chunk(BODY, gen=1)  # and the connection ends without END

    with Peer(cut, tmp_path) as peer:
        code, err = record(peer, out)
    assert code == 1, err
    assert victim.read_bytes() == b"precious"
    assert out.with_name("cut.trace.incomplete").read_bytes() == HEADER + BODY


@pytest.mark.once
def test_a_recording_is_an_ordinary_file_for_its_owner(tmp_path: Path) -> None:
    out = tmp_path / "mode.trace"
    with Peer(simple_helper, tmp_path) as peer:
        code, err = record(peer, out)
    assert code == 0, err
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask


@pytest.mark.once
def test_a_missing_output_directory_is_refused_before_attaching(tmp_path: Path) -> None:
    with Peer(simple_helper, tmp_path) as peer:
        code, err = record(peer, tmp_path / "no" / "such" / "dir" / "x.trace")
        assert peer.connections == 0, "the session must not start for a recording that cannot be written"
    assert code == 2
    assert "directory" in one_error_line(err) and "does not exist" in err and err.count("\n") == 1


@pytest.mark.once
def test_a_directory_as_output_is_refused_before_attaching(tmp_path: Path) -> None:
    with Peer(simple_helper, tmp_path) as peer:
        code, err = record(peer, tmp_path)
        assert peer.connections == 0
    assert code == 2 and "is a directory" in err


@pytest.mark.once
@pytest.mark.skipif(os.getuid() == 0, reason="root writes anywhere")
def test_a_read_only_output_directory_is_refused_before_attaching(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o500)
    with Peer(simple_helper, tmp_path) as peer:
        code, err = record(peer, ro / "x.trace")
        assert peer.connections == 0
    assert code == 2 and "not writable" in err


@pytest.mark.once
def test_a_fifo_is_written_in_place(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    with Peer(simple_helper, tmp_path) as peer:
        code, err = record(peer, fifo)
    reader.join(30)
    assert code == 0, err
    assert got == [HEADER + BODY] and stat.S_ISFIFO(fifo.lstat().st_mode)


@pytest.mark.once
def test_standard_output_is_written_in_place(tmp_path: Path) -> None:
    with Peer(simple_helper, tmp_path) as peer:
        p = subprocess.run(
            [sys.executable, "-m", "livetrace", "record", peer.address, "-o", "-"],
            capture_output=True,
            timeout=60,
            check=False,
        )
    assert p.returncode == 0, p.stderr
    assert p.stdout == HEADER + BODY


# ---- text that is not UTF-8 ----


def broken_utf8_trace(tmp_path: Path) -> bytes:
    """Go's annotations test trace with a byte 0x80 in two source file names."""
    text = (textform.CORPUS / "go122-annotations.test").read_text()
    for name in ("annotations.go", "annotation.go"):
        assert f'/{name}"' in text
        text = text.replace(f'/{name}"', f'/{name[:5]}\\x80{name[6:]}"')  # same length: batch sizes stay
    path = tmp_path / "broken.test"
    path.write_text(text)
    return textform.load(path).data


def serve_trace(data: bytes, version: str = "go1.22.0", end: bool = True):  # type: ignore[no-untyped-def]  # a peer script: its type is the fake helper's
    """A helper that sends a whole trace (header chunk first) and ends."""

    def behave(c: Conn) -> None:
        c.handshake(go_version=version)
        c.chunk(data[:16])
        for i in range(16, len(data), 4096):
            c.chunk(data[i : i + 4096], gen=1)
        if end:
            c.end(chunks=1 + (len(data) - 16 + 4095) // 4096, bytes=len(data))
            c.wait_closed(10)

    return behave


def test_tail_jsonl_shows_bytes_that_are_not_utf8_as_replacement_characters(tmp_path: Path) -> None:
    with Peer(serve_trace(broken_utf8_trace(tmp_path)), tmp_path) as peer:
        code, out, err = finish(cli("tail", peer.address, "--format", "jsonl"))
    assert code == 0, err
    objs = [json.loads(line) for line in out.splitlines()]
    files = {f["file"] for o in objs for key in ("stack", "transition_stack") for f in o.get(key, [])}
    assert any(f.endswith("/annot\ufffdtions.go") for f in files), files
    assert any(f.endswith("/annot\ufffdtion.go") for f in files), files


def test_tail_text_shows_them_as_replacement_characters_too(tmp_path: Path) -> None:
    with Peer(serve_trace(broken_utf8_trace(tmp_path)), tmp_path) as peer:
        code, out, err = finish(cli("tail", peer.address))
    assert code == 0, err
    assert "annot\ufffdtion" in out


async def test_the_api_keeps_the_raw_bytes(tmp_path: Path) -> None:
    with Peer(serve_trace(broken_utf8_trace(tmp_path)), tmp_path) as peer:
        async with livetrace.connect(peer.address) as session:
            files = {
                f.file for e in [e async for e in session.events()] if isinstance(e, livetrace.Event) for f in e.stack()
            }
    raw = {f.encode("utf-8", "surrogateescape") for f in files}
    assert any(r.endswith(b"/annot\x80tions.go") for r in raw), raw


@pytest.mark.once  # refused before connecting: nothing is decoded
def test_tail_period_outside_what_the_helper_takes_is_refused_before_connecting() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "livetrace", "tail", "unix:/nonexistent", "--period", "2"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "the period is 0.1 to 1 s" in out.stderr, out.stderr


async def test_an_advance_the_helper_would_refuse_is_refused_before_connecting() -> None:
    with pytest.raises(ValueError, match=r"advance must be 0\.1 to 1 seconds"):
        async with livetrace.connect("unix:/nonexistent", advance=0.01):
            pass
