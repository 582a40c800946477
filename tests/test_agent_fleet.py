"""``livetrace agent`` over a small fleet of real services, and the faults
issue 29 lists: a sink down and back, the agent killed and restarted, a
traced process restarted, a full disk under the spool.

The fleet: the demo built with Go 1.26.6 and with Go 1.21.13 (helpers), and
the plain service with only net/http/pprof. The agent runs as a process of
its own, as it would under systemd."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import signal
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from livetrace._agent.fleet import FLEET_VIEWS, SLOW_SERVICES_AND_DUMPS, clickhouse_client, lake_connection
from tests.agentrun import agent, demo_named, lake_query, lake_rows, plain_named
from tests.test_agent_otlp import Receiver, running_receiver
from tests.test_agent_stop import shed_ranges
from tests.test_flight_dumps import tmpfs

pytestmark = [pytest.mark.slow, pytest.mark.once]


FLEET_RUN = 60.0


# A budget the demos fit (one traced continuously costs a third of a core, and chdb's engine alone
# 200 MiB): the tests of other things see continuous sessions and sampled periods as configured.
ROOMY = '[agent.budget]\ncpu_per_process = 1.0\nmemory = "4GiB"\n'


def write_config(
    path: Path, state: Path, targets: str, sinks: str = "", budget: str = ROOMY, **agent_keys: str
) -> Path:
    keys = {"state_dir": f'"{state}"', "scan_interval": '"0.5s"', "flush_interval": '"0.5s"', **agent_keys}
    text = "[agent]\n" + "".join(f"{k} = {v}\n" for k, v in keys.items())
    text += f"{budget}[sinks]\n{sinks}\n{targets}"
    path.write_text(text)
    return path


def continuous(exe: str, spans: str = '{ gc = "1us", stw = "1us", runnable = "1ms" }') -> str:
    return f'[[target]]\nservice = "{exe}"\nexecutable = "{exe}*"\npolicy = "continuous"\nspans_over = {spans}\n'


def generations_contiguous(rows: list[tuple[int, int]]) -> bool:
    """Summaries in key order cover generation after generation, none missed, none twice."""
    return all(first == prev_last + 1 for (_, prev_last), (first, _) in itertools.pairwise(rows))


def everything_in(lake: Path) -> bool:
    services = {r[0] for r in lake_rows(lake, "summaries", "service")}
    sources = {r[0] for r in lake_rows(lake, "captures", "source")}
    spans = lake_rows(lake, "spans", "kind")
    continuous = lake_rows(lake, "summaries", "key", "service = 'fleet-new'")
    return len(services) == 3 and sources == {"flight dump", "pprof window"} and bool(spans) and len(continuous) >= 5


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as r:
        yield r


async def test_a_small_fleet_with_every_policy_into_the_lake_and_clickhouse(tmp_path: Path, receiver: Receiver) -> None:
    state, ch = tmp_path / "state", tmp_path / "ch"
    targets = (
        continuous("fleet-new") + '[[target]]\nservice = "fleet-old"\nexecutable = "fleet-old*"\npolicy = "flight"\n'
        'keep = "4s"\ntriggers = ["gc>1us"]\nafter = "0.5s"\ncooldown = "3s"\n'
        '[[target]]\nservice = "fleet-plain"\nexecutable = "fleet-plain*"\npolicy = "sampled"\n'
        'window = "1s"\nevery = "3s"\nmax_bytes = "2MiB"\n'
    )
    sinks = f'clickhouse = "chdb://{ch}"\notlp = "{receiver.url}"'
    conf = write_config(tmp_path / "agent.toml", state, targets, sinks)
    async with (
        demo_named("1.26", tmp_path, "fleet-new") as new,
        demo_named("1.21", tmp_path, "fleet-old") as old,
        plain_named("1.26", tmp_path, "fleet-plain") as plain,
        agent(conf, tmp_path / "agent.log") as a,
    ):
        started = trio.current_time()
        await a.until(lambda t: t.count("attached:") >= 3, 30, "three processes attached")
        await a.until(lambda t: everything_in(state / "lake"), 60, "summaries of all three, and their captures")
        await trio.sleep_until(started + FLEET_RUN)  # the run: all three policies for a minute
        assert await a.stop() == 0
    lake = state / "lake"
    # each process attached once, and kept: one session's end (a pprof window's) stops no other; a
    # detached row says why a session ended
    sessions = lake_rows(lake, "agent_log", "event, pid, detail", "event IN ('attached', 'detached')")
    attached = Counter(pid for event, pid, _ in sessions if event == "attached")
    assert attached == {new.pid: 1, old.pid: 1, plain.pid: 1}, (attached, sessions)
    by_service = Counter(r[0] for r in lake_rows(lake, "summaries", "service"))
    assert set(by_service) == {"fleet-new", "fleet-old", "fleet-plain"}, by_service
    policies = {r[0]: (r[1], r[2], r[3]) for r in lake_rows(lake, "summaries", "service, policy, pid, go_version")}
    assert policies["fleet-new"] == ("continuous", new.pid, "go1.26.6")
    assert policies["fleet-old"] == ("flight", old.pid, "go1.21.13")
    assert policies["fleet-plain"][:2] == ("sampled", plain.pid)
    sources = Counter((r[0], r[1]) for r in lake_rows(lake, "captures", "service, source"))
    assert sources[("fleet-old", "flight dump")] >= 1 and sources[("fleet-plain", "pprof window")] >= 1, sources
    for (path,) in lake_rows(lake, "captures", "path"):
        assert Path(path).stat().st_size > 0
    spans = lake_rows(lake, "spans", "service, kind, duration_ns")
    assert {s[1] for s in spans} >= {"gc", "runnable"} and all(s[0] == "fleet-new" for s in spans)
    assert all(d >= (1_000_000 if k == "runnable" else 1_000) for _, k, d in spans)
    # Each summary is top's snapshot of its generations: its JSON, and its columns read from it.
    for gc, sched_p99, top_json in lake_rows(lake, "summaries", "gc_count, sched_p99_ns, top_json"):
        top = json.loads(top_json)
        assert (top["gc"]["count"], top["sched"]["p99"]) == (gc, sched_p99)
    # Every generation is in a summary, or in the agent's record of what the helper shed (a decode far
    # behind, at a load of 12, sheds), or among the batches the summary before it lost (batches_lost).
    new_gens = lake_rows(lake, "summaries", "first_generation, last_generation, lost_batches", "service = 'fleet-new'")
    shed = shed_ranges(lake_rows(lake, "agent_log", "detail", f"event = 'generations_shed' AND pid = {new.pid}"))
    assert len(new_gens) >= 5, new_gens  # one a second unloaded; 6 at a load of 15
    for (_, last, lost), (first, _, _) in itertools.pairwise(new_gens):
        assert first == last + 1 or lost or set(range(last + 1, first)) <= shed, (last, first, sorted(shed))
    windows = lake_rows(lake, "captures", "key", "source = 'pprof window'")
    assert len(windows) >= 3  # a window every 3 s, unloaded
    # The OTLP collector got the runtime's pauses, as events of go.runtime spans of the continuous service.
    sent = [rs for r in receiver.requests for rs in r.resource_spans]
    services = {a.value.string_value for rs in sent for a in rs.resource.attributes if a.key == "service.name"}
    assert services == {"fleet-new"}
    events = {e.name for rs in sent for ss in rs.scope_spans for sp in ss.spans for e in sp.events}
    assert "gc" in events
    # ClickHouse holds the same rows, and the prepared views give the same answers there.
    con = lake_connection(lake)
    client = clickhouse_client(f"chdb://{ch}")
    try:
        for table in ("summaries", "spans", "captures", "agent_log"):
            lake_keys = {r[0] for r in con.execute(f"SELECT key FROM {table}").fetchall()}
            ch_keys = {r[0] for r in client.query(f"SELECT key FROM {table}").result_rows}
            assert lake_keys == ch_keys and lake_keys, table
        questions = {name: f"SELECT * FROM {name} ORDER BY ALL" for name in FLEET_VIEWS}
        questions["slow"] = SLOW_SERVICES_AND_DUMPS.format(threshold_ns=0)
        for name, sql in questions.items():
            on_lake = [tuple(map(same, r)) for r in con.execute(sql).fetchall()]
            on_ch = [tuple(map(same, r)) for r in client.query(sql).result_rows]
            assert on_lake == on_ch and (on_lake or name == "fleet_losses"), (name, on_lake, on_ch)
        assert {r[0] for r in con.execute(questions["slow"]).fetchall()} == {"fleet-old"}  # its flight dumps
    finally:
        client.close()


def same(v: object) -> object:
    """A value as both engines' answers can be compared: times in UTC, without their zone."""
    if isinstance(v, dt.datetime) and v.tzinfo is not None:
        return v.astimezone(dt.UTC).replace(tzinfo=None)
    return v


async def test_a_sink_down_for_20_s_loses_nothing_and_keeps_the_order(tmp_path: Path) -> None:
    state, lake = tmp_path / "state", tmp_path / "lake"
    lake.write_text("the lake's disk is not mounted")
    conf = write_config(tmp_path / "agent.toml", state, continuous("down"), f'lake = "{lake}"')
    async with demo_named("1.26", tmp_path, "down"), agent(conf, tmp_path / "agent.log") as a:
        await a.until(lambda t: "sink_down" in t, 30, "the lake said down")
        await trio.sleep(20)
        held = len(list((state / "spool").iterdir()))
        assert held >= 10  # the rows of 20 s wait in the spool
        lake.unlink()
        await a.until(lambda t: "sink_back" in t, 30, "the lake said back")
        await trio.sleep(2)
        assert await a.stop() == 0
    assert not list((state / "spool").iterdir())
    gens = lake_rows(lake, "summaries", "first_generation, last_generation")
    assert len(gens) >= 10 and generations_contiguous(gens), gens  # in order, none missing (one a second unloaded)
    events = [r[0] for r in lake_rows(lake, "agent_log", "event")]
    assert events.index("sink_down") < events.index("sink_back")
    # SIGTERM: the session was stopped as the helper stops one, and the agent said so before it exited
    details = [r[0] for r in lake_rows(lake, "agent_log", "detail", "event = 'detached'")]
    assert len(details) == 1 and details[0].endswith(": the agent stopped"), details


async def test_the_agent_killed_and_restarted_sends_its_spool_once(tmp_path: Path) -> None:
    state, lake = tmp_path / "state", tmp_path / "lake"
    lake.write_text("down while the agent runs")
    conf = write_config(tmp_path / "agent.toml", state, continuous("killed"), f'lake = "{lake}"')
    async with demo_named("1.26", tmp_path, "killed"):
        async with agent(conf, tmp_path / "agent.log") as first:
            await first.until(lambda t: "sink_down" in t, 30, "the lake said down")
            await trio.sleep(3)
            assert await first.stop(signal.SIGKILL) == -signal.SIGKILL
        # (a hidden .part file is a write the kill cut short: the next agent removes it)
        spooled = sorted(p.name for p in (state / "spool").iterdir() if not p.name.startswith("."))
        assert spooled
        lake.unlink()
        async with agent(conf, tmp_path / "agent2.log") as second:
            await second.until(lambda t: "entries in the spool" in t, 30, "the second agent started")
            assert f"{len(spooled)} entries in the spool" in second.text()
            await trio.sleep(3)
            assert await second.stop() == 0
    keys = [r[0] for r in lake_rows(lake, "summaries", "key")] + [r[0] for r in lake_rows(lake, "spans", "key")]
    assert len(keys) == len(set(keys))
    sent = {n.split(".")[0] for n in spooled}
    in_lake = {k.split(":")[1] for k in keys} | {r[0].split(":")[1] for r in lake_rows(lake, "agent_log", "key")}
    assert sent <= in_lake  # every spooled entry of the killed agent is in the lake


async def test_a_restarted_process_is_traced_again_within_5_s(tmp_path: Path) -> None:
    state = tmp_path / "state"
    conf = write_config(tmp_path / "agent.toml", state, continuous("restarted"), scan_interval='"2s"')
    async with agent(conf, tmp_path / "agent.log") as a:
        async with demo_named("1.26", tmp_path, "restarted") as first:
            await a.until(lambda t: f"pid {first.pid} through" in t, 30, "attached to the first")
            first.process.kill()
        async with demo_named("1.26", tmp_path, "restarted") as second:
            took = await a.until(lambda t: f"pid {second.pid} through" in t, 10, "attached to the second")
            assert took < 5
            await a.until(lambda t: "detached: restarted" in t, 10, "the first said detached")
        assert await a.stop() == 0


async def test_a_full_disk_under_the_spool_drops_counted_rows_and_goes_on(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    lake.write_text("down: everything waits in the spool")
    with tmpfs(tmp_path / "disk", "1m") as disk:
        conf = write_config(
            tmp_path / "agent.toml", disk / "state", continuous("full", '{ running = "1ns" }'), f'lake = "{lake}"'
        )
        async with demo_named("1.26", tmp_path, "full"), agent(conf, tmp_path / "agent.log") as a:
            await a.until(lambda t: "spool_dropped" in t, 60, "rows dropped on the full disk")
            lake.unlink()
            await a.until(lambda t: "sink_back" in t, 30, "the lake back")
            await trio.sleep(2)
            assert await a.stop() == 0
    dropped = lake_rows(lake, "agent_log", "count, detail", "event = 'spool_dropped'")
    assert dropped and all(n > 0 for n, _ in dropped), dropped
    # it went on: summaries made after the first drop are in the lake
    ((later,),) = lake_query(
        lake,
        "SELECT count(*) FROM {summaries} "
        "WHERE time > (SELECT min(time) FROM {agent_log} WHERE event = 'spool_dropped')",
    )
    assert later > 0


async def test_over_budget_a_continuous_process_is_sampled_and_the_records_say_so(tmp_path: Path) -> None:
    state = tmp_path / "state"
    targets = continuous("budget") + 'window = "1s"\nevery = "3s"\n'
    budget = '[agent.budget]\ncpu_per_process = 0.01\nmemory = "4GiB"\n'  # a continuous demo costs far more
    conf = write_config(tmp_path / "agent.toml", state, targets, budget=budget)
    async with demo_named("1.26", tmp_path, "budget") as d, agent(conf, tmp_path / "agent.log") as a:
        await a.until(lambda t: "budget_sampling" in t, 60, "the continuous session given up for windows")
        lake = state / "lake"
        await a.until(lambda t: lake_rows(lake, "captures", "key", "source = 'helper window'") != [], 60, "a window")
        assert await a.stop() == 0
    log = lake_rows(state / "lake", "agent_log", "event, pid, detail")
    events = [e for e, _, _ in log]
    assert events.index("budget_cut") < events.index("budget_sampling")
    assert ("budget_sampling", d.pid) in {(e, p) for e, p, _ in log}
    assert "budget_continuous" not in events  # what continuous cost never fits a budget of 1% of a core
