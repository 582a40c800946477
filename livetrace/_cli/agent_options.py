"""``livetrace agent``'s options and help: argparse only, so that the
parser is built without importing the agent (trio, pyarrow, the sinks)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from livetrace._cli.options import duration_option

AGENT_EXAMPLES = """\
examples:
  livetrace agent --check /etc/livetrace/agent.toml     check the file, start nothing
  livetrace agent /etc/livetrace/agent.toml             run (as a systemd service: examples/livetrace-agent.service)
  livetrace agent agent.toml --once                     one scan: attach, collect, flush, exit
  livetrace agent agent.toml --compact                  a closed day's small files into one, now

A minimal file: every Go process this user may attach to, traced continuously, into the lake:

  [agent]
  state_dir = "/var/lib/livetrace-agent"      # spool/, captures/ and lake/ (0700, files 0600)

  [[target]]
  policy = "continuous"                      # or "sampled" (window, every, max_bytes), "flight" (triggers)
  spans_over = { blocked = "10ms", runnable = "5ms", gc = "1ms" }

examples/agent.toml uses every key; docs/fleet.md explains them, the tables and the sinks."""


def add_agent_parser(sub: Any, formatter: type[argparse.HelpFormatter]) -> None:
    p = sub.add_parser(
        "agent",
        help="trace a host's Go services continuously, into a Parquet lake or ClickHouse",
        description="Run one agent per host: it finds the Go processes it may trace (as `livetrace ps` "
        "does), picks them with the config file's [[target]] selectors (module, executable, user), "
        "attaches through each one's helper, else its pprof endpoint, and re-attaches when a process "
        "restarts. Each target has a policy: continuous (per-generation summaries as `top` computes "
        "them, and spans over thresholds), sampled (a window every so often, the only policy for a "
        "pprof endpoint) or flight (the flight recorder, captures kept). Rows wait in a bounded spool "
        "on disk until a sink takes them: the Parquet lake (the default, read by `livetrace sql` and "
        "DuckDB), ClickHouse (clickhouse:// or an embedded chdb:// URL) or OTLP.",
        epilog=AGENT_EXAMPLES,
        formatter_class=formatter,
    )
    p.add_argument("config", type=Path, metavar="CONFIG", help="the agent's TOML file (docs/fleet.md)")
    p.add_argument(
        "--check", action="store_true", help="check CONFIG, print one line per mistake (or what it would do), and exit"
    )
    p.add_argument(
        "--compact",
        action="store_true",
        help="merge each closed day's partition of the local lake into one file, and exit "
        "(the running agent does it hourly; safe beside a running agent)",
    )
    p.add_argument(
        "--once", action="store_true", help="scan and attach once, collect until --duration, flush, and exit"
    )
    p.add_argument(
        "--duration",
        type=duration_option,
        metavar="SECONDS",
        help="stop after this long (default: until SIGTERM or Ctrl-C)",
    )
