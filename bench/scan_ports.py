"""The listening ports of N processes: psutil's per-process
net_connections (what the scan did, each process re-reading every socket
table) against livetrace's listening_ports (each process's fds, then
/proc/net/tcp and tcp6 once). CPU time (user+sys) per call, mean of --runs;
the host's socket tables are what they are, so say how many lines
/proc/net/tcp had.

    .venv/bin/python bench/scan_ports.py [--processes 5] [--runs 5]
"""

from __future__ import annotations

import argparse
import resource
import socket
import subprocess
import sys
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from livetrace._attach.sockets import listening_ports


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def mean_cpu_ms(runs: int, fn: Callable[[], object]) -> float:
    start = cpu_s()
    for _ in range(runs):
        fn()
    return (cpu_s() - start) / runs * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--processes", type=int, default=5)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with ExitStack() as stack, open("/proc/net/tcp") as table:
        lines = sum(1 for _ in table) - 1
        pids = []
        for _ in range(args.processes):  # each a sleep holding a listening socket of its own
            s = stack.enter_context(socket.socket())
            s.bind(("127.0.0.1", 0))
            s.listen()
            child = stack.enter_context(subprocess.Popen(["sleep", "600"], pass_fds=[s.fileno()]))
            stack.callback(child.kill)
            pids.append(child.pid)
        print(f"/proc/net/tcp: {lines} sockets; {args.processes} processes; CPU ms per call, mean of {args.runs}")
        per_process = mean_cpu_ms(args.runs, lambda: [psutil.Process(p).net_connections("inet") for p in pids])
        print(f"  psutil, per process:       {per_process:8.1f}")
        print(f"  listening_ports, at once:  {mean_cpu_ms(args.runs, lambda: listening_ports(pids)):8.1f}")


if __name__ == "__main__":
    main()
