"""The agent's configuration: a TOML file (read with tomllib) into typed,
frozen dataclasses, checked whole at start.

Every mistake is found in one pass and reported as one line that names the
key and, where the file has it on a line of its own, the line: a typo in a
key is a mistake too (an unknown key would otherwise be a policy silently
not applied). ``livetrace agent --check FILE`` runs exactly this check.
docs/fleet.md has the keys; examples/agent.toml uses each of them.
"""

from __future__ import annotations

import importlib.util
import re
import socket
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

from livetrace._agent.store import check_location, local_path
from livetrace._errors import AgentConfigError
from livetrace._flight.triggers import TriggerError, parse_duration, parse_size, parse_trigger
from livetrace._trace.spans.model import SPAN_KIND_NAMES

__all__ = ["AgentConfig", "Budget", "Policy", "Sinks", "Target", "load_config", "parse_config"]

T = TypeVar("T")

DEFAULT_STATE_DIR = Path("/var/lib/livetrace-agent")
# How often rows are spooled and shipped: each flush writes a spool entry and a lake file per table and service
# (some 3 ms of CPU each, whatever their rows: a second's are one summary and a few spans), and is a ClickHouse
# insert; the rows of the last few seconds wait in memory, and an agent killed with SIGKILL loses them.
FLUSH_INTERVAL = 5.0
SINK_SCHEMES = {"clickhouse": ("clickhouse://", "clickhouses://", "chdb://"), "otlp": ("http://", "https://")}
_LABEL = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")


class Policy(StrEnum):
    """How a process is traced (docs/fleet.md, "Policies")."""

    CONTINUOUS = "continuous"  # the helper's whole trace: a summary per generation, spans over thresholds
    SAMPLED = "sampled"  # a window of W seconds every P seconds, at most a byte cap: pprof's only policy
    FLIGHT = "flight"  # the flight recorder: captures kept when a trigger fires


@dataclass(frozen=True)
class Target:
    """One ``[[target]]``: which processes (every selector given must match;
    none matches every Go process the agent may attach to), how to trace
    them, and the labels their rows carry."""

    service: str | None = None  # the rows' service; None: the executable's name
    module: str | None = None  # a glob over the main module's path
    executable: str | None = None  # a glob over the executable's base name
    user: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    policy: Policy = Policy.CONTINUOUS
    spans_over: Mapping[str, int] = field(default_factory=dict)  # span kind -> least ns stored
    # sampled (and continuous, while over budget): seconds traced, seconds from one window's start to
    # the next, the most trace bytes a window keeps
    window: float = 5.0
    every: float = 900.0
    max_bytes: int = 5 << 20
    keep: float = 10.0  # flight: seconds kept in memory
    triggers: tuple[str, ...] = ()
    after: float = 2.0  # flight: seconds of trace after a trigger
    cooldown: float = 60.0
    max_files: int = 20
    # flight: a summary per generation, which decodes every event and builds every span; false: only what
    # the triggers need (a trigger on the process's RSS alone decodes nothing)
    summaries: bool = True


@dataclass(frozen=True)
class Sinks:
    """Where rows go; the lake is the default (``state_dir``/lake)."""

    lake: str | None = None  # a directory, or a filesystem URI (store.py)
    clickhouse: str | None = None
    otlp: str | None = None  # an OTLP/HTTP traces endpoint: http://collector:4318/v1/traces
    captures: str | None = None  # where trace files are moved once whole (default: they stay in state_dir)


@dataclass(frozen=True)
class Budget:
    cpu_per_process: float = 0.05  # a fraction of one core, per traced process
    memory: int = 256 << 20  # bytes, the agent's whole resident memory


@dataclass(frozen=True)
class AgentConfig:
    host: str
    state_dir: Path
    scan_interval: float
    flush_interval: float
    spool_max: int
    budget: Budget
    sinks: Sinks
    targets: tuple[Target, ...]

    @property
    def spool_dir(self) -> Path:
        return self.state_dir / "spool"

    @property
    def captures_dir(self) -> Path:
        """Where trace files are written: ``[sinks] captures`` if it is local, else state_dir/captures
        (whence they are moved to it)."""
        local = local_path(self.sinks.captures) if self.sinks.captures else None
        return local if local is not None else self.state_dir / "captures"

    @property
    def lake(self) -> str:
        return self.sinks.lake or str(self.state_dir / "lake")


class _Checker:
    """Reads values out of the parsed TOML, collecting one line per mistake."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self._found: list[tuple[float, str]] = []  # (line, or inf where unknown; the problem)

    @property
    def problems(self) -> list[str]:
        """In the file's order: the reader fixes them top to bottom."""
        return [p for _, p in sorted(self._found, key=lambda f: f[0])]

    def add(self, line: int | None, problem: str) -> None:
        self._found.append((line or float("inf"), problem))

    def line_of(self, table: str, index: int, key: str | None) -> int | None:
        """The line (1-based) of ``key`` in the ``index``-th ``[table]`` or
        ``[[table]]`` (of the table's header if key is None); None if it is
        not on a line of its own (an inline table, say)."""
        header = re.compile(r"\s*\[\[?\s*" + re.escape(table) + r"\s*\]\]?\s*(#.*)?$")
        any_header = re.compile(r"\s*\[")
        keyline = re.compile(r"\s*" + re.escape(key or "") + r"\s*=") if key else None
        seen, inside = -1, False
        for n, line in enumerate(self.lines, 1):
            if header.match(line):
                seen += 1
                inside = seen == index
                if inside and keyline is None:
                    return n
                continue
            if any_header.match(line):
                inside = False
            elif inside and keyline is not None and keyline.match(line):
                return n
        return None

    def problem(self, table: str, index: int, key: str | None, many: bool, what: str) -> None:
        name = f"[[{table}]] {index + 1}" if many else f"[{table}]"
        line = self.line_of(table, index, key)
        at = f" (line {line})" if line else ""
        self.add(line, f"{name}{'.' + key if key else ''}{at}: {what}")

    def table(self, data: Mapping[str, Any], name: str, known: set[str], index: int = 0, many: bool = False) -> None:
        for key in data:
            if key not in known:
                self.problem(name, index, key, many, f"unknown key; the keys are {', '.join(sorted(known))}")

    def get(
        self,
        data: Mapping[str, Any],
        where: tuple[str, int, bool],
        key: str,
        default: T,
        convert: Callable[[Any], T],
    ) -> T:
        if key not in data:
            return default
        try:
            return convert(data[key])
        except (ValueError, TypeError, TriggerError) as e:
            self.problem(where[0], where[1], key, where[2], str(e))
            return default


def _text(v: Any) -> str:
    if not isinstance(v, str) or not v:
        raise TypeError(f"must be a non-empty string, not {v!r}")
    return v


def _seconds(v: Any) -> float:
    """A number of seconds, or a duration string ("15m", "500ms")."""
    if isinstance(v, bool) or not isinstance(v, int | float | str):
        raise TypeError(f'must be seconds (a number) or a duration such as "15m", not {v!r}')
    s = parse_duration(v) / 1e9 if isinstance(v, str) else float(v)
    if s <= 0:
        raise ValueError(f"must be more than 0 seconds, not {v!r}")
    return s


def _bytes(v: Any) -> int:
    """A number of bytes, or a size string ("5MiB")."""
    if isinstance(v, bool) or not isinstance(v, int | str):
        raise TypeError(f'must be bytes (an integer) or a size such as "5MiB", not {v!r}')
    n = parse_size(v) if isinstance(v, str) else v
    if n <= 0:
        raise ValueError(f"must be more than 0 bytes, not {v!r}")
    return n


def _fraction(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not 0 < v <= 1:
        raise ValueError(f"must be a fraction of one core, more than 0 and at most 1 (0.05 is 5%), not {v!r}")
    return float(v)


def _count(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ValueError(f"must be a whole number, at least 1, not {v!r}")
    return v


def _flag(v: Any) -> bool:
    if not isinstance(v, bool):
        raise TypeError(f"must be true or false, not {v!r}")
    return v


def _labels(v: Any) -> dict[str, str]:
    if not isinstance(v, dict):
        raise TypeError(f'must be a table of strings, such as {{ team = "payments" }}, not {v!r}')
    for k, val in v.items():
        if not _LABEL.fullmatch(k):
            raise ValueError(f"label {k!r}: a label's name is letters, digits, _ . - (starting with a letter or _)")
        if not isinstance(val, str):
            raise TypeError(f"label {k!r} must be a string, not {val!r}")
    return dict(v)


def _spans_over(v: Any) -> dict[str, int]:
    if not isinstance(v, dict):
        raise TypeError(f'must be a table of span kinds and durations, such as {{ blocked = "10ms" }}, not {v!r}')
    out: dict[str, int] = {}
    for kind, d in v.items():
        if kind not in SPAN_KIND_NAMES:
            raise ValueError(f"unknown span kind {kind!r}: one of {', '.join(SPAN_KIND_NAMES)}")
        seconds = _seconds(d)  # more than 0, a number or a string: a threshold of 0 would store every span
        out[kind] = parse_duration(d) if isinstance(d, str) else round(seconds * 1e9)
    return out


def _triggers(v: Any) -> tuple[str, ...]:
    if not isinstance(v, list) or not v or not all(isinstance(t, str) for t in v):
        raise TypeError(f'must be a list of triggers, such as ["gc>50ms", "runnable>20ms"], not {v!r}')
    for t in v:
        parse_trigger(t)  # TriggerError says what is wrong
    return tuple(v)


def _sink(kind: str) -> Callable[[Any], str]:
    def check(v: Any) -> str:
        url = _text(v)
        schemes = SINK_SCHEMES[kind]
        if not url.startswith(schemes):
            raise ValueError(f"{url!r} is not a URL for the {kind} sink: it starts with one of {', '.join(schemes)}")
        return url

    return check


def _location(v: Any) -> str:
    return check_location(_text(v))


_AGENT_KEYS = {"host", "state_dir", "scan_interval", "flush_interval", "spool_max", "budget"}
_BUDGET_KEYS = {"cpu_per_process", "memory"}
_SINK_KEYS = {"lake", "clickhouse", "otlp", "captures"}
_TARGET_KEYS = {
    "service",
    "module",
    "executable",
    "user",
    "labels",
    "policy",
    "spans_over",
    "window",
    "every",
    "max_bytes",
    "keep",
    "triggers",
    "after",
    "cooldown",
    "max_files",
    "summaries",
}
_FLIGHT_ONLY = {"keep", "triggers", "after", "cooldown", "max_files", "summaries"}
_SAMPLED_ONLY = {"window", "every", "max_bytes"}
_CONTINUOUS_ONLY = {"spans_over"}


def _section(c: _Checker, data: Mapping[str, Any], name: str) -> dict[str, Any]:
    v = data.get(name, {})
    if not isinstance(v, dict):
        c.problem(name, 0, None, False, "must be a table ([" + name + "])")
        return {}
    return v


def _target(c: _Checker, t: Any, i: int) -> Target | None:
    if not isinstance(t, dict):
        c.problem("target", i, None, True, "must be a table ([[target]])")
        return None
    c.table(t, "target", _TARGET_KEYS, i, many=True)
    w = ("target", i, True)
    policy = c.get(
        t, w, "policy", Policy.CONTINUOUS, lambda v: Policy(_text(v)) if v in set(Policy) else _bad_policy(v)
    )
    # A continuous target's window, every and max_bytes are what it samples when over budget.
    wrong = {Policy.CONTINUOUS: _FLIGHT_ONLY, Policy.SAMPLED: _FLIGHT_ONLY | _CONTINUOUS_ONLY}.get(
        policy, _SAMPLED_ONLY | _CONTINUOUS_ONLY
    )
    for key in sorted(wrong & t.keys()):
        c.problem("target", i, key, True, f"does not apply to policy {policy.value!r}")
    target = Target(
        service=c.get(t, w, "service", None, _text),
        module=c.get(t, w, "module", None, _text),
        executable=c.get(t, w, "executable", None, _text),
        user=c.get(t, w, "user", None, _text),
        labels=c.get(t, w, "labels", {}, _labels),
        policy=policy,
        spans_over=c.get(t, w, "spans_over", {}, _spans_over),
        window=c.get(t, w, "window", Target.window, _seconds),
        every=c.get(t, w, "every", Target.every, _seconds),
        max_bytes=c.get(t, w, "max_bytes", Target.max_bytes, _bytes),
        keep=c.get(t, w, "keep", Target.keep, _seconds),
        triggers=c.get(t, w, "triggers", (), _triggers),
        after=c.get(t, w, "after", Target.after, _seconds),
        cooldown=c.get(t, w, "cooldown", Target.cooldown, _seconds),
        max_files=c.get(t, w, "max_files", Target.max_files, _count),
        summaries=c.get(t, w, "summaries", Target.summaries, _flag),
    )
    if policy is not Policy.FLIGHT and target.window >= target.every:
        c.problem(
            "target",
            i,
            "window",
            True,
            f"a window of {target.window:g} s must be shorter than every = {target.every:g} s",
        )
    if policy is Policy.FLIGHT and not target.triggers and "triggers" not in t:
        c.problem("target", i, "policy", True, 'policy "flight" needs triggers = ["gc>50ms", ...]')
    return target


def _bad_policy(v: Any) -> Policy:
    raise ValueError(f"unknown policy {v!r}: one of {', '.join(p.value for p in Policy)}")


def parse_config(text: str, path: str | Path = "<config>") -> AgentConfig:
    """The configuration in ``text``; :class:`AgentConfigError` lists every mistake."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:  # its message ends "(at line N, column M)"
        raise AgentConfigError(path, [f"not valid TOML: {e}"]) from None
    c = _Checker(text)
    for stray in sorted(data.keys() - {"agent", "sinks", "target"}):
        line = next((n for n, s in enumerate(c.lines, 1) if re.match(r"\s*\[*\s*" + re.escape(stray) + r"\b", s)), None)
        c.add(
            line,
            f"{stray}{f' (line {line})' if line else ''}: unknown table; the file has [agent], [sinks] and [[target]]",
        )
    agent = _section(c, data, "agent")
    c.table(agent, "agent", _AGENT_KEYS)
    a = ("agent", 0, False)
    budget_data = agent.get("budget", {})
    if not isinstance(budget_data, dict):
        c.problem("agent", 0, "budget", False, "must be a table ([agent.budget])")
        budget_data = {}
    c.table(budget_data, "agent.budget", _BUDGET_KEYS)
    b = ("agent.budget", 0, False)
    sinks = _section(c, data, "sinks")
    c.table(sinks, "sinks", _SINK_KEYS)
    s = ("sinks", 0, False)
    raw_targets = data.get("target", [])
    if not isinstance(raw_targets, list):
        c.problem("target", 0, None, False, "must be an array of tables ([[target]])")
        raw_targets = []
    targets = [t for i, raw in enumerate(raw_targets) if (t := _target(c, raw, i)) is not None]
    config = AgentConfig(
        host=c.get(agent, a, "host", socket.gethostname(), _text),
        state_dir=Path(c.get(agent, a, "state_dir", str(DEFAULT_STATE_DIR), _text)),
        scan_interval=c.get(agent, a, "scan_interval", 2.0, _seconds),
        flush_interval=c.get(agent, a, "flush_interval", FLUSH_INTERVAL, _seconds),
        spool_max=c.get(agent, a, "spool_max", 256 << 20, _bytes),
        budget=Budget(
            cpu_per_process=c.get(budget_data, b, "cpu_per_process", Budget.cpu_per_process, _fraction),
            memory=c.get(budget_data, b, "memory", Budget.memory, _bytes),
        ),
        sinks=Sinks(
            lake=c.get(sinks, s, "lake", None, _location),
            clickhouse=c.get(sinks, s, "clickhouse", None, _sink("clickhouse")),
            otlp=c.get(sinks, s, "otlp", None, _sink("otlp")),
            captures=c.get(sinks, s, "captures", None, _location),
        ),
        targets=tuple(targets) or (Target(),),
    )
    if not config.state_dir.is_absolute():
        c.problem("agent", 0, "state_dir", False, f"must be an absolute path, not {str(config.state_dir)!r}")
    if c.problems:
        raise AgentConfigError(path, c.problems)
    return config


def redacted(url: str) -> str:
    """A URL with its password hidden, for messages and records."""
    scheme, sep, rest = url.partition("://")
    creds, at, host = rest.rpartition("@")
    if not at:
        return url
    return f"{scheme}{sep}{creds.split(':', 1)[0]}:***@{host}"


# (module, what needs it): the packages of the `fleet` extra a configuration needs.
def needed_modules(config: AgentConfig) -> list[tuple[str, str]]:
    need = [("pyarrow", "the spool and the lake"), ("duckdb", "livetrace sql over the lake")]
    if config.sinks.clickhouse:
        need.append(("clickhouse_connect", "the clickhouse sink"))
        if config.sinks.clickhouse.startswith("chdb:"):
            need.append(("chdb", "a chdb:// sink"))
    if config.sinks.otlp:
        need.append(("opentelemetry.exporter.otlp.proto.http", "the otlp sink"))
    return need


def missing_packages(config: AgentConfig) -> list[str]:
    """One line per package the configuration needs and this Python lacks."""
    missing = []
    for module, what in needed_modules(config):
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # a parent package is missing
            found = False
        if not found:
            missing.append(
                f"{what} needs {module.split('.')[0]}, which is not installed: pip install 'livetrace[fleet]'"
            )
    return missing


def load_config(path: Path) -> AgentConfig:
    """The configuration in the file at ``path``."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise AgentConfigError(path, [f"cannot be read: {getattr(e, 'strerror', None) or e}"]) from None
    return parse_config(text, path)
