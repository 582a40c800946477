"""Every output file of every command (record, profile -o, export -o, flight's
dumps) is written so that another user who owns the output directory can
touch no file of anyone else's (issue 24, findings 1, 2 and 9).

The attacks are made for real: a second, unprivileged user (tests/otheruser.py)
owns the directory and runs the attacks as its own processes, against a
root-owned 0600 file; that file's mode and content must stay as they were,
and the output be where it should be, or the command say it is not.
"""

from __future__ import annotations

import errno
import gzip
import json
import os
import random
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetrace._cli.main import main
from livetrace._errors import OutputPathError, OutputTamperedError
from livetrace._flight.capture import Capture, Firing, write_capture
from livetrace._flight.ring import FlightRing, Layout
from livetrace._flight.triggers import parse_trigger
from livetrace._items import SegmentEnd
from livetrace._outfile import AtomicFile, write_atomic
from livetrace._protocol.frames import Chunk

from .conftest import examples
from .otheruser import OtherUser, other_user, world_traversable
from .test_hostile_peer import HEADER, Conn, Peer, batch

pytestmark = pytest.mark.once  # the files, not the decoder

TRACE = Path(__file__).parent / "corpus" / "legacy" / "go-testdata" / "user_task_region_1_21_good"
SECRET = b"root's eyes only\n"
BODY = batch(1, b"\x00" * 100)
S = 1_000_000_000


class Scene:
    """A directory the other user owns, and a root-owned 0600 file outside
    it that the other user must not get at."""

    def __init__(self, tmp_path: Path) -> None:
        self.user: OtherUser = other_user()
        self.dir = self.user.owned_dir(tmp_path / "shared")
        world_traversable(self.dir)
        self.victim = tmp_path / "victim"
        self.victim.write_bytes(SECRET)
        self.victim.chmod(0o600)

    def attack(self, script: str, *args: str | Path) -> None:
        """Run a shell script as the other user, with args as $1, $2, ..."""
        self.user.run(["/bin/sh", "-c", script, "sh", *map(str, args)], capture_output=True, timeout=30)

    def plant_link(self, name: str) -> Path:
        """The other user's symlink to the victim, at name in its directory."""
        self.attack('ln -s "$1" "$2"', self.victim, self.dir / name)
        return self.dir / name

    def race_parts(self) -> subprocess.Popen[bytes]:
        """The other user's loop that swaps every .part it sees for a link to
        the victim, as fast as a shell can."""
        script = (
            'while :; do for f in "$1"/*.part; do [ -L "$f" ] || { mv -f "$f" "$f.stolen" && ln -s "$2" "$f"; }; '
            "done; done 2>/dev/null"
        )
        return self.user.popen(["/bin/sh", "-c", script, "sh", str(self.dir), str(self.victim)])

    def assert_victim_untouched(self) -> None:
        st = os.stat(self.victim)
        assert stat.S_IMODE(st.st_mode) == 0o600, "the victim's mode was changed through a link"
        assert st.st_uid == 0 and self.victim.read_bytes() == SECRET, "the victim was written through a link"


@pytest.fixture
def scene(tmp_path: Path) -> Scene:
    return Scene(tmp_path)


def assert_ours(path: Path, content: bytes | None = None) -> bytes:
    """path is a regular file of ours (not a link), with content if given; its bytes."""
    st = os.lstat(path)
    assert stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid(), f"{path} is not a file of ours"
    data = path.read_bytes()
    if content is not None:
        assert data == content
    return data


def wait_for(find: Callable[[], list[Path]], timeout: float = 30) -> Path:
    deadline = time.monotonic() + timeout
    while not (found := find()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)
    return found[0]


def one_trace_helper(c: Conn, before_end: Callable[[], None] = lambda: None) -> None:
    c.handshake()
    c.chunk(HEADER)
    c.chunk(BODY, gen=1)
    before_end()
    c.end(chunks=2, bytes=len(HEADER) + len(BODY))
    c.wait_closed(10)


def record(tmp_path: Path, out: Path, behave: Callable[[Conn], None] = one_trace_helper) -> int:
    with Peer(behave, Path(tempfile.mkdtemp(dir=tmp_path))) as peer:
        return main(["record", peer.address, "-o", str(out)])


def flight_dump(out_dir: Path) -> Capture:
    """A two-segment dump, as the flight recorder writes one."""
    ring = FlightRing(Layout.SEGMENTS, keep_ns=3600 * S)
    for seg in range(2):
        ring.feed(Chunk(0, seg * S, 0, b"trace%d" % seg))
        ring.feed(SegmentEnd(seg + 1, seg * S))
    firing = Firing(parse_trigger("gc>1ms"), 1_700_000_000 * S, unit=2)
    return write_capture(out_dir, firing, ring.snapshot(), 0, False)


# ---- finding 1: record's .part swapped for a link ----


def test_a_record_part_swapped_for_a_link_is_reported_and_its_target_untouched(
    scene: Scene, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = scene.dir / "x.trace"

    def swap() -> None:
        part = wait_for(lambda: list(scene.dir.glob("x.trace.*.part")))
        scene.attack('mv "$1" "$1.stolen" && ln -s "$2" "$1"', part, scene.victim)

    code = record(tmp_path, out, lambda c: one_trace_helper(c, swap))
    err = capsys.readouterr().err
    scene.assert_victim_untouched()
    assert code == 1 and "trace complete" not in err, err
    assert "was moved or replaced by another user" in err and f"nothing was saved at {out}" in err, err
    assert not out.exists() and not out.is_symlink(), "nothing may be reported or left as the recording"


@pytest.mark.slow  # races a real process for a few seconds
def test_the_writer_raced_by_another_users_process_never_touches_the_target(scene: Scene) -> None:
    # Whichever step of the writer the other user's loop lands between, the
    # victim keeps its mode and bytes, and a file committed is ours.
    looper = scene.race_parts()
    outcomes = {"saved": 0, "tampered": 0}
    try:
        deadline = time.monotonic() + 3
        i = 0
        while time.monotonic() < deadline:
            i += 1
            data = b"%d" % i * 1000
            try:
                with AtomicFile(scene.dir / "raced.bin") as f:
                    f.file.write(data)
                    time.sleep(0.001 * (i % 3))  # vary where in the loop the commit lands
                    path = f.commit()
            except OutputTamperedError as e:
                assert e.path == scene.dir / "raced.bin"
                outcomes["tampered"] += 1
            else:
                assert_ours(path, data)
                outcomes["saved"] += 1
    finally:
        looper.kill()
        looper.wait()
    scene.assert_victim_untouched()
    assert outcomes["tampered"] > 0, f"the race never landed: {outcomes}"
    assert not [p for p in scene.dir.iterdir() if p.name.endswith(".part") and not p.is_symlink()], (
        "a temporary file of ours was left behind"
    )


@pytest.mark.slow  # races a real process across several recordings
def test_record_raced_by_another_users_process_says_what_happened(
    scene: Scene, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    looper = scene.race_parts()
    try:
        for i in range(6):
            out = scene.dir / f"r{i}.trace"
            code = record(tmp_path, out, partial(one_trace_helper, before_end=partial(time.sleep, 0.01 * i)))
            err = capsys.readouterr().err
            if code == 0:
                assert f"trace complete (ended: client-stop) -> {out}" in err
                assert_ours(out, HEADER + BODY)
            else:
                assert code == 1 and "by another user" in err and "trace complete" not in err, err
    finally:
        looper.kill()
        looper.wait()
    scene.assert_victim_untouched()


# ---- findings 1 and 2: a link planted at the output's final name ----


def test_profile_replaces_a_link_planted_at_its_output(scene: Scene) -> None:
    out = scene.plant_link("p.pb.gz")
    assert main(["profile", str(TRACE), "--kind", "sched", "-o", str(out)]) == 0
    scene.assert_victim_untouched()
    assert gzip.decompress(assert_ours(out))


def test_export_replaces_a_link_planted_at_its_output(scene: Scene) -> None:
    out = scene.plant_link("t.pftrace")
    assert main(["export", str(TRACE), "--to", "perfetto", "-o", str(out)]) == 0
    scene.assert_victim_untouched()
    assert len(assert_ours(out)) > 100


def test_record_replaces_a_link_planted_at_its_output(scene: Scene, tmp_path: Path) -> None:
    out = scene.plant_link("r.trace")
    assert record(tmp_path, out) == 0
    scene.assert_victim_untouched()
    assert_ours(out, HEADER + BODY)


def test_a_flight_dump_replaces_links_planted_at_its_names(scene: Scene, tmp_path: Path) -> None:
    # The names a dump takes, learnt from a first one, then planted as links.
    (tmp_path / "first").mkdir()
    first = flight_dump(tmp_path / "first")
    for name in [p.name for p in (*first.traces, first.json_path)]:
        scene.plant_link(name)
    dump = flight_dump(scene.dir)
    scene.assert_victim_untouched()
    for p in (*dump.traces, dump.json_path):
        assert_ours(p)
    assert [p.read_bytes() for p in dump.traces] == [b"trace0", b"trace1"]
    assert json.loads(dump.json_path.read_bytes())["trigger"] == "gc>1ms"


def test_a_link_in_place_of_the_output_directory_is_not_followed(
    scene: Scene, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The other user's directory entry "sub", swapped for a link to a root-owned directory.
    rootdir = tmp_path / "rootdir"
    rootdir.mkdir(mode=0o700)
    scene.attack('ln -s "$1" "$2"', rootdir, scene.dir / "sub")
    assert main(["profile", str(TRACE), "--kind", "sched", "-o", str(scene.dir / "sub" / "p.pb.gz")]) == 2
    assert "symbolic link made by another user" in capsys.readouterr().err
    assert list(rootdir.iterdir()) == []


def test_a_link_of_ones_own_in_place_of_the_directory_is_followed(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "traces").symlink_to(tmp_path / "real")  # ~/traces -> /data/traces
    assert main(["profile", str(TRACE), "--kind", "sched", "-o", str(tmp_path / "traces" / "p.pb.gz")]) == 0
    assert gzip.decompress(assert_ours(tmp_path / "real" / "p.pb.gz"))


def test_another_users_pipe_at_the_output_is_replaced_not_written_into(scene: Scene) -> None:
    # Written into, the pipe would hand the profile to its owner whatever the umask (and
    # block the command until it read).
    out = scene.dir / "p.pb.gz"
    scene.attack('mkfifo "$1"', out)
    got = subprocess.run(
        [sys.executable, "-m", "livetrace", "profile", str(TRACE), "--kind", "sched", "-o", str(out)],
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert got.returncode == 0, got.stderr
    assert gzip.decompress(assert_ours(out))


# ---- finding 9: every output honours the umask ----


@pytest.fixture(params=[0o077, 0o022], ids=["umask-077", "umask-022"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def outputs(tmp_path: Path) -> list[Path]:
    """One output of each command, written into tmp_path."""
    prof, exp, rec = tmp_path / "p.pb.gz", tmp_path / "t.pftrace", tmp_path / "r.trace"
    assert main(["profile", str(TRACE), "--kind", "sched", "-o", str(prof)]) == 0
    assert main(["export", str(TRACE), "--to", "perfetto", "-o", str(exp)]) == 0
    assert record(tmp_path, rec) == 0
    dump = flight_dump(tmp_path)
    return [prof, exp, rec, *dump.traces, dump.json_path]


def test_every_output_honours_the_umask(tmp_path: Path, umask: int) -> None:
    for path in outputs(tmp_path):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o666 & ~umask, path.name


# ---- the writer's own failures ----


def test_a_write_that_fails_leaves_nothing_and_keeps_the_old_file(tmp_path: Path) -> None:
    out = tmp_path / "keep.bin"
    out.write_bytes(b"old")

    def fail_midway() -> Iterator[bytes]:
        yield b"new"
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        write_atomic(out, fail_midway())
    assert out.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["keep.bin"]


def test_a_missing_directory_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(OutputPathError, match=r"cannot write in .*/nowhere: No such file or directory"):
        AtomicFile(tmp_path / "nowhere" / "x")


def test_standard_output_still_takes_a_profile() -> None:
    got = subprocess.run(
        [sys.executable, "-m", "livetrace", "profile", str(TRACE), "--kind", "sched", "-o", "-"],
        capture_output=True,
        check=True,
        timeout=60,
    )
    assert gzip.decompress(got.stdout)


@pytest.mark.parametrize("command", [["profile", "--kind", "sched"], ["export", "--to", "perfetto"]])
def test_an_output_that_cannot_be_written_is_one_typed_line(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A directory, before the trace is read; a full device and a file past
    the size the system allows, when written: never an OSError's repr."""
    name, *options = command
    assert main([name, str(TRACE), *options, "-o", str(tmp_path)]) == 2
    assert (
        capsys.readouterr().err
        == f"livetrace: error: cannot write to {tmp_path}: it is a directory; give a file name\n"
    )
    assert main([name, str(TRACE), *options, "-o", "/dev/full"]) == 2
    assert capsys.readouterr().err.endswith(
        "livetrace: error: cannot write to /dev/full: No space left on device; what it took is incomplete\n"
    )
    out = tmp_path / "big.out"
    # A file limit of 16 bytes (RLIMIT_FSIZE; its signal ignored, so the write fails with EFBIG: a gzip header and
    # trailer alone are 18), in a process of its own.
    limited = (
        "import resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
        "resource.setrlimit(resource.RLIMIT_FSIZE, (16, 16)); "
        "from livetrace._cli.main import main; sys.exit(main(sys.argv[1:]))"
    )
    got = subprocess.run(
        [sys.executable, "-c", limited, name, str(TRACE), *options, "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert got.returncode == 2
    assert got.stderr == f"livetrace: error: cannot write {out}: File too large; nothing was saved there\n"
    assert list(tmp_path.iterdir()) == [], "no file, and no temporary file left"


# ---- fuzz: the writer keeps every byte, and leaves nothing behind ----


@settings(max_examples=examples(60))
@given(
    sizes=st.lists(st.integers(0, 300_000), max_size=8),
    fail_at=st.none() | st.integers(0, 8),
    earlier=st.none() | st.binary(max_size=64),
    seed=st.integers(0, 2**32 - 1),
)
def test_fuzz_the_writer_keeps_every_byte_and_leaves_nothing_behind(
    sizes: list[int], fail_at: int | None, earlier: bytes | None, seed: int
) -> None:
    rng = random.Random(seed)
    pieces = [rng.randbytes(n) for n in sizes]
    fails = fail_at is not None and fail_at < len(pieces)

    def written() -> Iterator[bytes]:
        for i, piece in enumerate(pieces):
            if fails and i == fail_at:
                raise OSError(errno.EIO, "the source failed")
            yield piece

    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "out.bin"
        if earlier is not None:
            out.write_bytes(earlier)
        if fails:
            with pytest.raises(OSError, match="the source failed"):
                write_atomic(out, written())
        else:
            assert write_atomic(out, written()) == sum(sizes)
        assert os.listdir(d) == ([] if fails and earlier is None else ["out.bin"]), "a temporary file was left"
        if fails:
            assert earlier is None or out.read_bytes() == earlier
        else:
            assert out.read_bytes() == b"".join(pieces)
