"""Every live view against a big service's trace, replayed as fast as the
view takes it: events per second and per CPU-second of the view.

    .venv/bin/python bench/live_scale.py [--trace FILE] [--go PATH] [--seconds 10] [--advance 0.5]
                                         [--views tail-jsonl,top,...] [--jobs 1,2] [--runs 1]
                                         [--baseline DIR] [--profile VIEW] [--pace X [--queue-mb 64]]

The trace: --trace names a file; if it does not exist, the demo service
(built with --go, default as `livetrace demo` finds it) runs with
GOMAXPROCS=16 and -workers 12 and is recorded into it for --seconds (a
trace of 16 Ps on any machine), so the next run replays the same trace.
Without --trace it is recorded into a temporary file. The helper closes a
generation every --advance seconds, as it does for the views by default
(their --period); 0 leaves the runtime's own, about a second: fewer,
larger generations, which the pool has fewer of to run side by side.

The replay: a fake helper here (a thread serving a unix socket) sends the
trace's frames as the helper sends them (the header, then each batch and
end-of-generation byte as one CHUNK with its generation) as fast as the
socket takes them, then END. With --pace X it sends them at X times the
trace's own rate instead (its --seconds, evenly), and sheds as the helper
does: past --queue-mb unsent, the queued chunks are dropped, the rest of
their generation skipped, and a GAP sent when a newer one comes; each line
then says how many generations the view's summary says were shed. That is
a service too busy for the view, here: the rate at which it falls behind. The view is the real command (`livetrace
tail ...`, `top`, `flight`, `profile`) run by main() in a child process
whose modules are imported before the clock starts; its output goes into
a pipe this process reads and throws away. Its CPU (user and system, all
its threads) and wall time are measured around main(), the time the
cyclic garbage collector ran (it holds the GIL), and the page faults (each
page of memory touched for the first time, or again after it was given
back, costs the kernel a fault and a page cleared: what memory in flight
costs in CPU).

Views: tail-jsonl, tail-text (unfiltered events), tail-spans (unfiltered
spans, JSON lines), tail-spans-text, tail-log (`-k Log`), spans-1ms
(`--spans --min-duration 1ms`), spans-blocked (`--spans --min-duration
5ms -k 'blocked*'`), spans-gc (`--spans -k gc -k stw`), top (`--format
json`), flight (`-t 'gc>1s'`), profile (`--kind sched`), export-parquet
(`export --to parquet`, a generation's files at a time). The rate is the trace's events per
second and per CPU-second of the view (the targets on a 2-core machine:
3M per CPU-second for tail-jsonl and tail-text, 4M for the others but
export-parquet, which has none).

--jobs is passed on as `--jobs N` to a command that has it; one that
does not runs once, and the line says so. Where --jobs has 1 first, each
view's run with more jobs is followed by its speed-up over one job, and
the most the machine's cores allow at one job's CPU: one job's threads
(the decoder, the event loop, the pool's) already overlap, so one job
keeps more than a core busy. --baseline DIR times the same
views, alternating, with another source tree (a checkout of an older
commit with its core built in place). --profile VIEW runs that view once
under cProfile (the thread that runs the command: the decoding threads
are not seen) and prints its top functions; --perf DIR records every
view with `perf record -g` (all its threads). --switch-interval S sets
the view's `sys.setswitchinterval` (how long a thread that wants the GIL
waits before the holder is asked to let go). --calls counts the
Python functions each view calls (C ones too, in all its threads: a
profile hook, which slows it several times): how much of its work holds
the GIL, by a count that a loaded machine does not change. --gil DIR samples every
view with `py-spy record --gil` (py-spy on PATH: only the thread that
holds the GIL is sampled, 200 times a second) into DIR/VIEW-jN.txt and
prints the seconds the GIL was held per million events (the least of
--runs: a thread that holds it while the system runs another is sampled
too, which a loaded machine makes noisy), and the frames that held it
most (the modules' imports before the clock are left out).

Timing is a benchmark, never a test.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
TREE = HERE.parent.parent

VIEWS: dict[str, list[str]] = {
    "tail-jsonl": ["tail", "{addr}", "--format", "jsonl"],
    "tail-text": ["tail", "{addr}", "--format", "text"],
    "tail-spans": ["tail", "{addr}", "--spans", "--format", "jsonl"],
    "tail-spans-text": ["tail", "{addr}", "--spans", "--format", "text"],
    "tail-log": ["tail", "{addr}", "-k", "Log", "--format", "jsonl"],
    "spans-1ms": ["tail", "{addr}", "--spans", "--min-duration", "1ms", "--format", "jsonl"],
    "spans-blocked": ["tail", "{addr}", "--spans", "--min-duration", "5ms", "-k", "blocked*", "--format", "jsonl"],
    "spans-gc": ["tail", "{addr}", "--spans", "-k", "gc", "-k", "stw", "--format", "jsonl"],
    "top": ["top", "{addr}", "--format", "json"],
    # flight re-attaches when a session ends: -d ends it once the deadline has passed (the session, stopped
    # then, still reads every frame the fake helper sends, to its end).
    "flight": ["flight", "{addr}", "-d", "0.5", "--keep", "5s", "-t", "gc>1s", "-o", "{tmp}"],
    "profile": ["profile", "{addr}", "--kind", "sched", "-o", "{tmp}/sched.pb.gz"],
    "export-parquet": ["export", "{addr}", "--to", "parquet", "-o", "{tmp}/lake"],
}
# Targets on the project's 2-core machine, with one job (events per CPU-second); the
# Parquet export from an address has none (issue 27 names it among the live consumers only).
TARGETS: dict[str, float | None] = {"tail-jsonl": 3e6, "tail-text": 3e6, "export-parquet": None}
TARGET = 4e6

HANDSHAKE = {
    "protocol": 1,
    "helper": "live_scale",
    "go_version": "go1.26.6",
    "goos": "linux",
    "goarch": "amd64",
    "pid": 0,
    "executable": "",
    "gomaxprocs": 16,
    "start_unix_ns": 0,
    "queue_bytes": 64 << 20,
    "session": 1,
    "advance_ms": 0,
    "segment_ms": 0,
}


# ---- the trace ----


async def _record(go: Path, path: Path, seconds: float, advance: float | None) -> None:
    import livetrace
    from livetrace._go.demo import run_demo
    from livetrace._go.toolchain import build_demo

    exe = build_demo(go)
    async with run_demo(exe, args=["-workers", "12"], env={"GOMAXPROCS": "16"}) as demo:
        async with livetrace.connect(demo.trace_address, duration=seconds, advance=advance) as session:
            rec = await livetrace.record(session, path)
    if not rec.complete:
        raise SystemExit(f"the recording of {path} is incomplete")


def _tree_env(tree: Path) -> dict[str, str]:
    """The tree's source first, then whatever path this process was given (a
    machine without a registry has the dependencies in a folder of its own)."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))}


def chunks_of(data: bytes) -> list[tuple[int, bytes]]:
    """(generation, bytes) of each chunk the helper would send, as the tests'
    fake helpers replay a trace."""
    sys.path.insert(0, str(TREE))  # here, not at the top: a --run-view child imports the tree it is given
    from tests.wirechunks import modern_chunks

    return modern_chunks(data)


def count_events(path: Path) -> int:
    from livetrace._files import decode_batches

    return sum(len(b) for b in decode_batches(path))


# ---- the fake helper ----


def _frame(ftype: int, payload: bytes) -> bytes:
    return struct.pack(">BI", ftype, len(payload)) + payload


class FakeHelper:
    """Serves the chunks to each client of a unix socket, one at a time: as
    fast as the socket takes them, or with ``pace`` (the trace's ``seconds``
    compressed that many times) at that rate, shedding as the helper does
    what the client leaves unread past ``queue_bytes``."""

    def __init__(
        self, chunks: list[tuple[int, bytes]], path: str, pace: float = 0, seconds: float = 10, queue_bytes: int = 0
    ) -> None:
        self.chunks = chunks
        self.path = path
        self.pace, self.seconds, self.queue_bytes = pace, seconds, queue_bytes
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(4)
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        from livetrace._protocol import frames as proto

        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                with suppress(OSError):
                    self._session(conn, proto)

    def _session(self, conn: socket.socket, proto: object) -> None:
        p = proto  # livetrace._protocol.frames
        conn.recv(13, socket.MSG_WAITALL)  # the client's preamble: ours answers the same
        conn.sendall(b"LIVETRACE" + struct.pack(">HH", 1, 1))
        hdr = conn.recv(5, socket.MSG_WAITALL)
        _ftype, n = struct.unpack(">BI", hdr)
        conn.recv(n, socket.MSG_WAITALL)  # the HELLO
        info = {**HANDSHAKE, "pid": os.getpid(), "start_unix_ns": time.time_ns()}
        conn.sendall(_frame(p.HANDSHAKE, json.dumps(info).encode()))  # type: ignore[attr-defined]
        if self.pace:
            self._paced(conn, p)
            return
        total, out = 0, []
        for seq, (gen, data) in enumerate(self.chunks, 1):
            out.append(_frame(p.CHUNK, struct.pack(">QqQ", seq, time.time_ns(), gen) + data))  # type: ignore[attr-defined]
            total += len(data)
            if len(out) >= 64:
                conn.sendall(b"".join(out))
                out = []
        end = {"reason": "client-stop", "complete": True, "chunks": len(self.chunks), "bytes": total}
        out.append(_frame(p.END, json.dumps(end).encode()))  # type: ignore[attr-defined]
        conn.sendall(b"".join(out))
        conn.shutdown(socket.SHUT_WR)
        # Until the client leaves (it may send STOP first).
        while conn.recv(1 << 16):
            pass

    def _paced(self, conn: socket.socket, p: Any) -> None:
        """The chunks at their pace from a producer thread, sent from this
        one; past queue_bytes unsent, the queued chunks are dropped and the
        rest of their generation skipped, and a GAP says so when a newer
        generation comes (the helper's policy, go_helper/ring.go)."""
        cv = threading.Condition()
        queue: list[tuple[int, bytes]] = []  # (generation, frame); -1: a frame of no generation
        state = {"queued": 0, "sent_gen": -1, "done": False, "dropped": [0, 0, 0]}
        gap: dict[str, Any] | None = None
        skip = -1
        every = self.seconds / self.pace / max(1, len(self.chunks))

        def count(g: dict[str, Any], generations: int) -> None:
            d = state["dropped"]
            d[0], d[1], d[2] = d[0] + g["chunks"], d[1] + g["bytes"], d[2] + generations

        def produce() -> None:
            nonlocal gap, skip
            t0 = time.monotonic()
            for seq, (gen, data) in enumerate(self.chunks, 1):
                time.sleep(max(0.0, t0 + seq * every - time.monotonic()))
                with cv:
                    if gen <= skip and gap is not None:
                        gap["chunks"], gap["bytes"] = gap["chunks"] + 1, gap["bytes"] + len(data)
                        continue
                    if gap is not None:  # a newer generation: the gap is over
                        gap["last_generation"] = gen - 1
                        queue.append((-1, _frame(p.GAP, json.dumps(gap).encode())))
                        count(gap, gen - gap["first_generation"])
                        gap = None
                    frame = _frame(p.CHUNK, struct.pack(">QqQ", seq, time.time_ns(), gen) + data)
                    queue.append((gen, frame))
                    state["queued"] += len(frame)
                    if state["queued"] > self.queue_bytes:
                        dropped = [(g, f) for g, f in queue if g >= 0]
                        first = min(g for g, _ in dropped)
                        gap = {
                            "first_generation": first, "last_generation": gen, "chunks": len(dropped),
                            "bytes": sum(len(f) - 29 for _, f in dropped),  # less the frame's headers
                            "discard_received": state["sent_gen"] >= first,
                        }  # fmt: skip
                        queue[:] = [(g, f) for g, f in queue if g < 0]
                        state["queued"], skip = 0, gen
                    cv.notify()
            with cv:
                if gap is not None:
                    queue.append((-1, _frame(p.GAP, json.dumps(gap).encode())))
                    count(gap, skip - gap["first_generation"] + 1)
                state["done"] = True
                cv.notify()

        threading.Thread(target=produce, daemon=True).start()
        while True:
            with cv:
                while not queue and not state["done"]:
                    cv.wait()
                if not queue and state["done"]:
                    break
                # At most 1 MiB at a time: what waits in sendall is unread, as in the helper's ring.
                k, size = 0, 0
                while k < len(queue) and (k == 0 or size + len(queue[k][1]) <= 1 << 20):
                    size += len(queue[k][1]) if queue[k][0] >= 0 else 0
                    k += 1
                out = queue[:k]
                del queue[:k]
                state["queued"] -= size
                state["sent_gen"] = max([state["sent_gen"], *(g for g, _ in out)])
            conn.sendall(b"".join(f for _, f in out))
        chunks, nbytes, gens = state["dropped"]
        end = {
            "reason": "client-stop", "complete": True, "chunks": len(self.chunks) - chunks,
            "bytes": sum(len(d) for _, d in self.chunks) - nbytes, "dropped_chunks": chunks,
            "dropped_bytes": nbytes, "dropped_generations": gens,
        }  # fmt: skip
        conn.sendall(_frame(p.END, json.dumps(end).encode()))
        conn.shutdown(socket.SHUT_WR)
        while conn.recv(1 << 16):
            pass

    def close(self) -> None:
        self.sock.close()


# ---- one view, in a child process ----


def run_view(argv: list[str], result: Path, profile: bool, calls: bool = False) -> None:
    """In the child: main(argv), timed; the figures into result (with calls:
    the Python functions called, in every thread, the C ones among them)."""
    import gc

    import livetrace._cli.flight  # imported before the clock starts
    import livetrace._cli.profile
    import livetrace._cli.tail
    import livetrace._cli.top  # noqa: F401
    from livetrace._cli.main import main

    collected = [0.0, 0]  # seconds in the cyclic collector (the GIL held), passes

    def timing(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collected.append(time.perf_counter())
        else:
            collected[0] += time.perf_counter() - collected.pop()
            collected[1] += 1

    gc.callbacks.append(timing)
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    if profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        rc = prof.runcall(main, argv)
        pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(25)
    elif calls:
        import itertools
        import threading

        counter = itertools.count()
        tick = counter.__next__
        by: dict[object, int] = {}

        def hook(frame: Any, event: str, arg: Any) -> None:
            if event == "call" or event == "c_call":
                tick()
                # A C function by its name: the function itself may be a method bound to a batch.
                key = frame.f_code if event == "call" else getattr(arg, "__qualname__", "?")
                by[key] = by.get(key, 0) + 1

        threading.setprofile(hook)  # type: ignore[arg-type]  # a profile function
        sys.setprofile(hook)  # type: ignore[arg-type]
        rc = main(argv)
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
        for key, n in sorted(by.items(), key=lambda kv: -kv[1])[:50]:
            code = getattr(key, "co_qualname", None)
            where = f"{code} ({key.co_filename.rsplit('/', 2)[-1]}:{key.co_firstlineno})" if code else key
            print(f"calls {n:>10,} {where}", file=sys.stderr)
    else:
        rc = main(argv)
    sys.stdout.flush()
    t1, r1 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    faults = r1.ru_minflt - r0.ru_minflt + r1.ru_majflt - r0.ru_majflt
    # Not ru_maxrss: Linux keeps it across exec, so it starts at the parent's (which holds the trace).
    hwm = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("VmHWM:"))
    rss = int(hwm.split()[1]) / 1024
    n = next(counter) if calls else None
    result.write_text(
        json.dumps(
            {"rc": rc, "wall": t1 - t0, "cpu": cpu, "rss_mib": rss, "calls": n, "gc": collected[:2], "faults": faults}
        )
    )


@dataclass
class Run:
    wall: float
    cpu: float
    rss_mib: float
    out_bytes: int
    calls: int | None = None
    gc: tuple[float, int] = (0.0, 0)
    faults: int = 0  # page faults: pages first touched, or touched again after being given back
    shed: int = 0  # generations the (paced) helper shed, as the view's summary says


def has_jobs(tree: Path, command: str) -> bool:
    env = _tree_env(tree)
    out = subprocess.run(
        [sys.executable, "-m", "livetrace", command, "--help"], env=env, capture_output=True, text=True, check=False
    )
    return "--jobs" in out.stdout


# py-spy's samples a second under --gil.
GIL_RATE = 200


def once(
    tree: Path,
    view: str,
    addr: str,
    jobs: int | None,
    profile: bool = False,
    perf: Path | None = None,
    gil: Path | None = None,
    switch: float | None = None,
    calls: bool = False,
) -> Run:
    with tempfile.TemporaryDirectory(prefix="live-scale-") as tmp:
        argv = [a.format(addr=addr, tmp=tmp) for a in VIEWS[view]]
        if jobs is not None:
            argv += ["--jobs", str(jobs)]
        result = Path(tmp) / "result.json"
        cmd = [sys.executable, str(HERE), "--run-view", str(result), *(["--cprofile"] if profile else [])]
        cmd += [*([] if switch is None else ["--switch-interval", str(switch)]), *(["--calls"] if calls else [])]
        cmd += ["--", *argv]
        if perf is not None:
            cmd = ["perf", "record", "-q", "-g", "-F", "499", "-o", str(perf / f"{view}.data"), "--", *cmd]
        if gil is not None:
            out = gil / f"{view}-j{jobs}.txt"
            cmd = ["py-spy", "record", "--gil", "-r", str(GIL_RATE), "--format", "raw", "-o", str(out), "--", *cmd]
        env = _tree_env(tree)
        proc = subprocess.Popen(cmd, env=env, cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        got = 0
        errs: list[bytes] = []
        t = threading.Thread(target=lambda: errs.append(proc.stderr.read()), daemon=True)  # type: ignore[union-attr]
        t.start()
        assert proc.stdout is not None
        while piece := proc.stdout.read1(1 << 20):
            got += len(piece)
        proc.wait()
        t.join()
        if proc.returncode or not result.exists():
            raise SystemExit(f"{view} failed ({proc.returncode}): {b''.join(errs).decode(errors='replace')[-2000:]}")
        if profile:
            sys.stderr.write(b"".join(errs).decode(errors="replace"))
        elif calls:  # the most called
            sys.stderr.writelines(x + "\n" for x in b"".join(errs).decode().splitlines() if x.startswith("calls "))
        r = json.loads(result.read_text())
        if r["rc"]:
            raise SystemExit(f"{view} exited {r['rc']}: {b''.join(errs).decode(errors='replace')[-2000:]}")
        text = b"".join(errs).decode(errors="replace")
        shed = sum(int(a or b) for a, b in re.findall(r"(\d+) generations? shed|helper shed (\d+) generations?", text))
        return Run(r["wall"], r["cpu"], r["rss_mib"], got, r.get("calls"), tuple(r["gc"]), r.get("faults", 0), shed)


def gil_dir(given: Path | None, tree: str) -> Path | None:
    """Where a tree's GIL samples go (each tree its own folder)."""
    if given is None:
        return None
    (given / tree).mkdir(parents=True, exist_ok=True)
    return given / tree


# Where the GIL holder wakes a waiting thread: a loaded machine runs the woken thread there and
# leaves the holder waiting for a core, GIL in hand (an idle one would not).
WAKING = ("Condition.notify (threading.py",)


def gil_held(path: Path) -> tuple[float, list[tuple[str, int]]]:
    """From py-spy's raw samples (a stack and its count a line): the seconds
    the GIL was held while the view ran (not the imports before main), and the
    innermost frames that held it, most first."""
    total, frames = 0, dict[str, int]()
    for line in path.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if "run_view (" in stack and "livetrace/_cli/main.py" not in stack:
            continue  # the child's imports and setup, before the clock
        total += int(n)
        leaf = stack.rsplit(";", 1)[-1]
        frames[leaf] = frames.get(leaf, 0) + int(n)
    return total / GIL_RATE, sorted(frames.items(), key=lambda kv: -kv[1])


# ---- main ----


@contextmanager
def the_trace(given: Path | None, go: Path | None, seconds: float, advance: float | None) -> Iterator[Path]:
    import trio

    from livetrace._go.toolchain import find_go

    if given is not None and given.exists():
        yield given
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = given or Path(tmp) / "demo16.trace"
        every = f"a generation every {advance:g} s" if advance else "the runtime's generations"
        print(f"recording the demo (GOMAXPROCS=16, -workers 12) for {seconds:g} s, {every}, into {path}", flush=True)
        trio.run(_record, go or find_go(), path, seconds, advance)
        yield path


def main() -> None:
    if "--run-view" in sys.argv:
        sys.path.remove(str(HERE.parent))  # bench/profile.py is no stdlib profile for cProfile
        i = sys.argv.index("--run-view")
        if "--switch-interval" in sys.argv:
            sys.setswitchinterval(float(sys.argv[sys.argv.index("--switch-interval") + 1]))
        opts = sys.argv[: sys.argv.index("--")]
        run_view(sys.argv[sys.argv.index("--") + 1 :], Path(sys.argv[i + 1]), "--cprofile" in opts, "--calls" in opts)
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", type=Path, help="the trace to replay (recorded into it if it does not exist)")
    ap.add_argument("--go", type=Path, help="the go binary to build the demo with")
    ap.add_argument("--seconds", type=float, default=10.0, help="how long to record the demo (default 10)")
    ap.add_argument(
        "--advance",
        type=float,
        default=0.5,
        help="the recording's generations: the helper closes one this often (s; default 0.5, what the views "
        "ask for by default, their --period; 0: the runtime's own, about a second)",
    )
    ap.add_argument(
        "--pace",
        type=float,
        default=0,
        help="replay at this many times the trace's own rate (its --seconds), shedding as the helper does past "
        "--queue-mb unread (default 0: as fast as the view takes it)",
    )
    ap.add_argument("--queue-mb", type=int, default=64, help="the paced helper's queue (default 64, the helper's)")
    ap.add_argument("--views", default=",".join(VIEWS), help="comma-separated (default: all)")
    ap.add_argument("--jobs", default="1,2", help="comma-separated job counts (default 1,2)")
    ap.add_argument("--runs", type=int, default=1, help="best of N (default 1)")
    ap.add_argument("--baseline", type=Path, help="another source tree to time the same views with")
    ap.add_argument("--profile", metavar="VIEW", help="run VIEW once under cProfile and print where its time goes")
    ap.add_argument("--perf", type=Path, metavar="DIR", help="record each view with perf into DIR/VIEW.data")
    ap.add_argument("--calls", action="store_true", help="count the Python calls of each view (all its threads)")
    ap.add_argument("--switch-interval", type=float, help="the view's sys.setswitchinterval (s)")
    ap.add_argument("--gil", type=Path, metavar="DIR", help="sample each view's GIL holder with py-spy into DIR")
    args = ap.parse_args()
    views = args.views.split(",")
    for v in views:
        if v not in VIEWS:
            raise SystemExit(f"unknown view {v!r}: one of {', '.join(VIEWS)}")
    jobs = [int(j) for j in args.jobs.split(",")]
    with the_trace(args.trace, args.go, args.seconds, args.advance or None) as path:
        data = path.read_bytes()
        events = count_events(path)
    chunks = chunks_of(data)
    print(f"trace: {len(data) / 1e6:.1f} MB, {events:,} events, {len(chunks):,} chunks", flush=True)
    with tempfile.TemporaryDirectory(prefix="live-scale-sock-") as tmp:
        sock = f"{tmp}/helper.sock"
        helper = FakeHelper(chunks, sock, args.pace, args.seconds, args.queue_mb << 20)
        addr = f"unix:{sock}"
        try:
            if args.profile:
                once(TREE, args.profile, addr, None, profile=True)
                return
            trees = [("this", TREE)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
            for view in views:
                command = VIEWS[view][0]
                for name, tree in trees:
                    supported = has_jobs(tree, command)
                    one: Run | None = None  # the view's run with one job, for the speed-up of more
                    for j in jobs if supported else jobs[:1]:
                        best: Run | None = None
                        held: tuple[float, list[tuple[str, int]]] | None = None
                        for _ in range(args.runs):
                            r = once(
                                tree,
                                view,
                                addr,
                                j if supported else None,
                                perf=args.perf,
                                gil=gil_dir(args.gil, name),
                                switch=args.switch_interval,
                                calls=args.calls,
                            )
                            # Paced, a run that shed more did less: the best sheds least.
                            better = best is None or (r.shed, r.cpu) < (best.shed, best.cpu)
                            best = r if better else best
                            if args.gil is not None:
                                h = gil_held(args.gil / name / f"{view}-j{j if supported else None}.txt")
                                held = h if held is None or h[0] < held[0] else held
                        assert best is not None
                        target = TARGETS.get(view, TARGET)
                        rate = events / best.cpu
                        note = "" if supported else f" (--jobs not yet supported: jobs=1; asked {args.jobs})"
                        print(
                            f"{view:<16} {name:<8} jobs={j}: {events / best.wall / 1e6:6.2f} M events/s, "
                            f"{rate / 1e6:6.2f} M events/CPU-s ({best.cpu:.2f} s CPU, {best.wall:.2f} s wall, "
                            f"{best.rss_mib:.0f} MiB, {best.faults / 1e3:.0f}k faults, "
                            f"{best.out_bytes / 1e6:.1f} MB out, "
                            f"collector {best.gc[0]:.2f} s in {best.gc[1]:,} passes; "
                            + (f"{best.shed} generations shed; " if args.pace else "")
                            + (
                                "no target)"
                                if target is None
                                else f"target {target / 1e6:g}M {'met' if rate >= target else 'NOT met'})"
                            )
                            + note,
                            flush=True,
                        )
                        if j == 1:
                            one = best
                        elif one is not None:
                            print(f"  {speed_up(one, best, j)}", flush=True)
                        if best.calls is not None:
                            print(f"  {best.calls / events * 1e6:,.0f} Python calls per M events", flush=True)
                        if held is not None:
                            top = "; ".join(f"{f} {n / GIL_RATE:.2f}" for f, n in held[1][:4])
                            waking = sum(n for f, n in held[1] if f.startswith(WAKING)) / GIL_RATE
                            print(
                                f"  GIL held {held[0]:.2f} s (least of {args.runs}), "
                                f"{held[0] / events * 1e6:.3f} s per M events "
                                f"({(held[0] - waking) / events * 1e6:.3f} s without waking a thread); most: {top}",
                                flush=True,
                            )
        finally:
            helper.close()


def speed_up(one: Run, more: Run, jobs: int) -> str:
    """What ``jobs`` jobs gave against one, and the most this machine's
    cores allow: one job's threads (the decoder, the event loop, the
    pool's thread) already overlap, so it uses more than a core, and with
    the same CPU per event the cores bound the ratio at cores / that."""
    cores = os.cpu_count() or 1
    used = one.cpu / one.wall
    return (
        f"jobs={jobs}: {one.wall / more.wall:.2f}x the events/s of jobs=1 at {more.cpu / one.cpu:.2f}x its CPU; "
        f"jobs=1 kept {used:.2f} cores busy, so {cores} cores allow at most {cores / used:.2f}x at its CPU"
    )


if __name__ == "__main__":
    main()
