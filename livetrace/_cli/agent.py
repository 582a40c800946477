"""``livetrace agent``: check a configuration, or run the agent (docs/fleet.md)."""

from __future__ import annotations

import argparse
import gc
import os
import signal
from typing import TextIO

import trio

from livetrace._agent.config import AgentConfig, load_config, missing_packages, redacted
from livetrace._agent.store import local_path
from livetrace._cli.common import EXIT_ERROR, EXIT_OK, say
from livetrace._errors import AgentConfigError
from livetrace._nursery import open_nursery
from livetrace._plural import plural


def describe(config: AgentConfig) -> list[str]:
    """What the agent would do, a line each: for --check."""
    lines = [
        f"host {config.host}; state in {config.state_dir} (spool at most {config.spool_max >> 20} MiB)",
        f"sinks: lake {config.lake}"
        + (f", clickhouse {redacted(config.sinks.clickhouse)}" if config.sinks.clickhouse else "")
        + (f", otlp {redacted(config.sinks.otlp)}" if config.sinks.otlp else ""),
        f"captures in {config.captures_dir}"
        + (
            f", moved to {config.sinks.captures}"
            if config.sinks.captures and local_path(config.sinks.captures) is None
            else ""
        ),
    ]
    for i, t in enumerate(config.targets, 1):
        sel = ", ".join(
            f"{k} {v}" for k, v in (("module", t.module), ("executable", t.executable), ("user", t.user)) if v
        )
        lines.append(
            f"target {i}: {t.service or '(the executable name)'}: {sel or 'every Go process'}, policy {t.policy.value}"
        )
    return lines


def agent_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        config = load_config(args.config)
    except AgentConfigError as e:
        for problem in e.problems:
            say(err, f"error: {args.config}: {problem}")
        say(err, f"{plural(len(e.problems), 'mistake')} in {args.config}; nothing was started")
        return EXIT_ERROR
    missing = missing_packages(config)
    for line in missing:
        say(err, f"error: {line}")
    if missing:
        return EXIT_ERROR
    if args.check:
        for line in describe(config):
            print(line, file=out)
        print(f"{args.config}: ok, {plural(len(config.targets), 'target')}", file=out)
        return EXIT_OK

    # Everything the agent writes (spool, lake, captures) is its own: 0600 files in 0700 directories.
    os.umask(0o077)
    if args.compact:
        return _compact(config, out, err)

    from livetrace._agent.agent import Agent  # pyarrow, trio's sessions: only to run

    # What is loaded by now (modules, classes: most of the process's objects) lives as long as the agent: out of
    # the collector's way, its full collections look only at what the agent makes as it runs.
    gc.freeze()

    async def run() -> None:
        agent = Agent(config, err)
        stop = trio.Event()
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async with open_nursery() as nursery:

                async def stop_on_signal() -> None:
                    async for _ in signals:
                        say(err, "agent stopping: sending what the spool holds")
                        stop.set()

                nursery.start_soon(stop_on_signal)
                await agent.run(args.duration, args.once, stop)
                nursery.cancel_scope.cancel()

    trio.run(run)
    return EXIT_OK


def _compact(config: AgentConfig, out: TextIO, err: TextIO) -> int:
    from livetrace._agent.compact import compact_lake  # pyarrow: only to compact
    from livetrace._agent.rows import TABLES

    lake = local_path(config.lake)
    if lake is None:
        say(err, f"error: the lake is at {config.lake}: only a local lake is compacted (a store: with its own tools)")
        return EXIT_ERROR
    if not lake.is_dir():
        print(f"{lake}: no lake yet, nothing to compact", file=out)
        return EXIT_OK
    done = compact_lake(lake, TABLES)
    for why in done.skipped:
        say(err, f"warning: left as it was: {why}")
    print(
        f"{lake}: {plural(done.partitions, 'partition')} of closed days compacted, "
        f"{done.files} files into {done.partitions}, {done.rows:,} rows",
        file=out,
    )
    return EXIT_ERROR if done.skipped else EXIT_OK
