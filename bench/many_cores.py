"""Every live view against the demo on a machine with many cores: does it keep up?

    python3 bench/many_cores.py DEMO_BINARY [--procs 16] [--jobs 1,7] [--seconds 8]
                                [--workers 16,48] [--only tail-jsonl,top@1,...] [--limit S]
                                [--extra '--max-pipeline-mb 4096']

The demo runs with GOMAXPROCS=--procs and each of --workers (16 gives about
4M events/s on 16 cores, 48 about 12M: issue 27's table), and every view
runs against it for --seconds with each of --jobs (`--jobs 7` keeps
livetrace to 8 cores: the pool's 7 threads and the decoder's). Each
experiment prints one line: what the view wrote, its wall and CPU time
(all its threads), the cores it used on average, its peak RSS, the lag of
its JSON lines (read as fast as a pipe allows; the first line of each read
against the wall-clock time the line names), and the gaps its summary
reports (a gap: generations the helper shed because the view fell behind).

It also records 5 s of each load and decodes it with
``livetrace.decode_batches``, the sequential decoder's rate on this machine's
cores, which bounds every view at any --jobs.

bench/many_cores.sh packs what a machine without a package registry needs
(the demo, the source, wheels) into .scale/ and runs this there.
Timing is a benchmark, never a test.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from datetime import datetime
from pathlib import Path

import psutil

LT = [sys.executable, "-m", "livetrace"]

# (name, the command's arguments after the address, reads JSON lines)
VIEWS: dict[str, tuple[list[str], bool]] = {
    "tail-jsonl": (["tail", "--format", "jsonl"], True),
    # Into /dev/null (issue 27's target): no reader to time the lines, or to hold them up (a reader in Python took
    # about 0.5 GB/s of JSON lines there); tail's own summary says how far behind it wrote them.
    "tail-jsonl-null": (["tail", "--format", "jsonl"], False),
    "tail-text": (["tail", "--format", "text"], False),
    "tail-spans": (["tail", "--spans", "--format", "jsonl"], True),
    "tail-spans-null": (["tail", "--spans", "--format", "jsonl"], False),
    "tail-log": (["tail", "--format", "jsonl", "-k", "Log"], True),
    "spans-5ms-blocked": (["tail", "--format", "jsonl", "--min-duration", "5ms", "-k", "blocked*"], True),
    "spans-gc-stw": (["tail", "--format", "jsonl", "--spans", "-k", "gc", "-k", "stw"], True),
    "top": (["top", "--format", "json"], False),
    "flight": (["flight", "--keep", "5s", "-t", "gc>1s", "-o", "/tmp/many-cores-flight", "--no-status"], False),
    "profile": (["profile", "--kind", "sched", "-o", "/tmp/many-cores.pb.gz"], False),
}
# The views issue 27 asks of each load.
LOADS = {
    16: ["tail-jsonl-null", "tail-spans-null", "tail-text", "tail-jsonl"],
    48: [v for v in VIEWS if not v.startswith(("tail-jsonl", "tail-text")) and not v.endswith("-null")],
}


def log(*a: object) -> None:
    print(*a, flush=True)


class Watch:
    """CPU seconds and peak RSS of a process and its children, sampled."""

    def __init__(self, pid: int) -> None:
        self.p = psutil.Process(pid)
        self.peak = 0
        self.cpu = 0.0
        self.stop = False
        threading.Thread(target=self.run, daemon=True).start()

    def run(self) -> None:
        while not self.stop:
            try:
                procs = [self.p, *self.p.children(recursive=True)]
                self.peak = max(self.peak, sum(q.memory_info().rss for q in procs))
                self.cpu = max(self.cpu, sum(q.cpu_times().user + q.cpu_times().system for q in procs))
            except psutil.Error:
                pass
            time.sleep(0.1)


def start_demo(binary: str, sock: str, procs: int, workers: int, http: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, GOMAXPROCS=str(procs))
    if os.path.exists(sock):
        os.unlink(sock)
    cmd = [binary, "-listen", f"unix:{sock}", "-workers", str(workers), "-http", http]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        if os.path.exists(sock):
            return p
        time.sleep(0.05)
    raise SystemExit("the demo did not start")


def ops(http: str) -> int:
    with urllib.request.urlopen(f"http://{http}/stats", timeout=30) as r:
        return int(json.load(r)["ops"])


def wall_of(line: bytes) -> float | None:
    try:
        w = json.loads(line).get("wall")
    except (ValueError, AttributeError):
        return None
    if isinstance(w, str):
        return datetime.fromisoformat(w).timestamp()
    if isinstance(w, (int, float)):
        return w / 1e9 if w > 1e12 else float(w)
    return None


def run_view(
    view: str,
    addr: str,
    seconds: float,
    jobs: int,
    limit: float,
    extra: list[str],
    pyspy: str | None = None,
    cgroup: str | None = None,
) -> str:
    args, is_jsonl = VIEWS[view]
    # The flight recorder runs until stopped: it is sent SIGINT, as Ctrl-C, after the same time.
    timed = view != "flight"
    cmd = [*LT, args[0], addr, *args[1:], *(["--duration", str(seconds)] if timed else []), "--jobs", str(jobs), *extra]
    if pyspy and timed:
        # Every thread, idle or not, as collapsed stacks: where each thread spends the view's time
        # (docs/decoder.md, "On 16 cores, a fourth time", reads top's so).
        out = os.path.join(pyspy, f"{view}-jobs{jobs}.txt")
        spy = ["py-spy", "record", "-f", "raw", "-o", out, "-r", "100", "--threads", "--idle", "--nonblocking"]
        cmd = [*spy, "--", *cmd]
    os.makedirs("/tmp/many-cores-flight", exist_ok=True)
    null = view.endswith("-null")
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL if null else subprocess.PIPE, stderr=subprocess.PIPE)
    if cgroup:  # before its first thread but the main one, which the others inherit it from
        Path(cgroup, "cgroup.procs").write_text(f"{p.pid}\n")
    w = Watch(p.pid)
    if not timed:
        threading.Timer(seconds, p.send_signal, (signal.SIGINT,)).start()
    killer = threading.Timer(limit, p.kill)
    killer.start()
    t0 = time.time()
    lines, nbytes, lags, rem, shed, lost = 0, 0, [], b"", 0, 0
    when: list[int] = []  # top: what each snapshot says was shed, in order (when it fell behind)
    assert p.stderr is not None
    err: list[bytes] = []
    reader = threading.Thread(target=lambda: err.append(p.stderr.read()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    while not null and (chunk := p.stdout.read1(1 << 20)):  # type: ignore[attr-defined]
        now = time.time()
        nbytes += len(chunk)
        data = rem + chunk
        end = data.rfind(b"\n")
        if end < 0:
            rem = data
            continue
        whole, rem = data[: end + 1], data[end + 1 :]
        lines += whole.count(b"\n")
        if view == "top":  # each JSON snapshot counts what was lost since the one before
            for snap in (json.loads(x) for x in whole.splitlines() if x.startswith(b"{")):  # (py-spy's lines)
                shed, lost = shed + snap["shed_generations"], lost + snap["lost_batches"]
                when.append(snap["shed_generations"])
        if is_jsonl:
            t = wall_of(whole[: whole.find(b"\n")])
            if t is not None:
                lags.append(now - t)
    rc = p.wait()
    killer.cancel()
    reader.join(5)
    wall = time.time() - t0
    w.stop = True
    text = b"".join(err).decode(errors="replace")
    gaps = re.findall(r"(\d+) gaps?\b", text) or re.findall(r"helper shed (\d+) generations?", text)
    if view == "top":
        gaps = [f"{shed} shed ({' '.join(map(str, when))} a snapshot), {lost} batches lost"]
    behind = re.search(r"behind the service by (p50 [\d.]+ s, p99 [\d.]+ s, max [\d.]+ s)", text)
    lag = ""
    if lags:
        lags.sort()
        lag = f", lag p50 {lags[len(lags) // 2]:.2f}s p99 {lags[int(len(lags) * 0.99)]:.2f}s max {lags[-1]:.2f}s"
    tail = " | ".join(s.strip() for s in text.strip().splitlines()[-2:])[:300]
    return (
        f"{view:18} jobs={jobs}: rc {rc}, {lines:,} lines ({nbytes / 2**20:,.0f} MiB) in {wall:.1f}s wall, "
        f"CPU {w.cpu:.1f}s = {w.cpu / wall:.1f} cores, peak RSS {w.peak / 2**20:,.0f} MiB{lag}; "
        f"gaps {gaps[-1] if gaps else '?'}{f'; written behind by {behind[1]}' if behind else ''}; stderr: {tail}"
    )


def decode_rate(addr: str, seconds: float) -> str:
    f = "/tmp/many-cores.trace"
    subprocess.run([*LT, "record", addr, "-o", f, "--duration", str(seconds)], capture_output=True, check=False)
    import livetrace

    t = time.perf_counter()
    n = sum(len(b) for b in livetrace.decode_batches(f))
    dt = time.perf_counter() - t
    return (
        f"recorded {seconds:g} s: {os.path.getsize(f) / 2**20:.0f} MiB, {n / seconds / 1e6:.2f}M events/s made; "
        f"decode_batches {n / dt / 1e6:.1f}M events/s on one core ({livetrace.implementation()})"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("demo")
    ap.add_argument("--procs", type=int, default=16)
    ap.add_argument("--workers", default="16,48")
    ap.add_argument("--jobs", default="1,7")
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument(
        "--only", default="", help="comma-separated views (default: each load's views); VIEW@N: with --jobs N only"
    )
    ap.add_argument("--extra", default="", help="more options for every view (say --max-pipeline-mb 4096)")
    ap.add_argument("--pyspy", metavar="DIR", help="record each timed view with py-spy (every thread) into DIR")
    ap.add_argument("--limit", type=float, help="kill a view after this many seconds (default: 6 x --seconds + 30)")
    ap.add_argument(
        "--view-cgroup",
        metavar="DIR",
        help="run each view in this cgroup (v1 or v2, made beforehand): with a CPU quota, a view with fewer "
        "and slower cores than the service, as a big service's consumer is, on a small machine",
    )
    a = ap.parse_args()
    only = [v for v in a.only.split(",") if v]
    log(f"== {os.cpu_count()} cores; {sys.version.split()[0]}; demo GOMAXPROCS={a.procs}")
    for workers in map(int, a.workers.split(",")):
        sock = f"/tmp/many-cores-{workers}.sock"
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            http = f"127.0.0.1:{s.getsockname()[1]}"
        addr = f"unix:{sock}"
        demo = start_demo(a.demo, sock, a.procs, workers, http)
        try:
            time.sleep(2)
            o, t = ops(http), time.monotonic()
            time.sleep(2)
            log(f"== -workers {workers}: {(ops(http) - o) / (time.monotonic() - t):,.0f} ops/s untraced")
            log(decode_rate(addr, 5))
            for spec in only or LOADS.get(workers, list(VIEWS)):
                view, _, pinned = spec.partition("@")
                for jobs in map(int, (pinned or a.jobs).split(",")):
                    limit = a.limit or a.seconds * 6 + 30
                    log(run_view(view, addr, a.seconds, jobs, limit, a.extra.split(), a.pyspy, a.view_cgroup))
        finally:
            demo.send_signal(signal.SIGTERM)
            try:
                demo.wait(10)
            except subprocess.TimeoutExpired:
                demo.kill()


if __name__ == "__main__":
    main()
