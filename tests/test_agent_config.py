"""The agent's configuration: every mistake found at once, one line each,
naming the key and its line; ``livetrace agent --check`` starts nothing."""

from __future__ import annotations

import io
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

from livetrace._agent.config import Policy, load_config, missing_packages, parse_config, redacted
from livetrace._cli.agent import describe
from livetrace._cli.main import main
from livetrace._errors import AgentConfigError

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.once


def problems(text: str) -> list[str]:
    with pytest.raises(AgentConfigError) as e:
        parse_config(text, "agent.toml")
    return e.value.problems


def test_the_example_is_valid_and_uses_every_policy() -> None:
    config = load_config(ROOT / "examples" / "agent.toml")
    assert [t.policy for t in config.targets] == [Policy.CONTINUOUS, Policy.FLIGHT, Policy.SAMPLED]
    checkout = config.targets[0]
    assert checkout.spans_over["blocked"] == 10_000_000 and checkout.labels == {"team": "payments", "tier": "1"}
    assert config.targets[2].every == 900.0 and config.targets[2].max_bytes == 5 << 20
    assert config.spool_max == 256 << 20 and config.budget.cpu_per_process == 0.05


def test_an_empty_file_traces_every_process_continuously() -> None:
    config = parse_config("")
    assert len(config.targets) == 1 and config.targets[0].policy is Policy.CONTINUOUS
    assert config.lake == "/var/lib/livetrace-agent/lake"


def test_every_mistake_is_one_line_with_its_key_and_line() -> None:
    text = """\
[agent]
state_dir = "relative/dir"
spool_max = "lots"
scan_intervall = 2

[[target]]
policy = "continuous"

[[target]]
policy = "sampeld"

[[target]]
policy = "sampled"
window = "1m"
every = "30s"
triggers = ["gc>1ms"]

[[target]]
policy = "flight"
triggers = ["gc>>1ms"]
spans_over = { blocked = "10ms", sleeping = "1s" }
"""
    got = problems(text)
    assert got == [
        "[agent].state_dir (line 2): must be an absolute path, not 'relative/dir'",
        "[agent].spool_max (line 3): 'lots' is not a size (a number and one of B, KiB, MiB, GiB, TiB, kB, MB, GB, "
        "TB: 2GiB)",
        "[agent].scan_intervall (line 4): unknown key; the keys are budget, flush_interval, host, scan_interval, "
        "spool_max, state_dir",
        "[[target]] 2.policy (line 10): unknown policy 'sampeld': one of continuous, sampled, flight",
        "[[target]] 3.window (line 14): a window of 60 s must be shorter than every = 30 s",
        "[[target]] 3.triggers (line 16): does not apply to policy 'sampled'",
        got[6],
        "[[target]] 4.spans_over (line 21): does not apply to policy 'flight'",
        got[8],
    ]
    assert got[6].startswith("[[target]] 4.triggers (line 20): ") and "gc>>1ms" in got[6]
    assert got[8].startswith("[[target]] 4.spans_over (line 21): unknown span kind 'sleeping'")


def test_toml_syntax_errors_name_the_line() -> None:
    (line,) = problems('[agent]\nstate_dir = "/x\n')
    assert line.startswith("not valid TOML: ") and "line 2" in line


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[sinks]\nclickhouse = 'mysql://x'\n",
            "[sinks].clickhouse (line 2): 'mysql://x' is not a URL for the clickhouse sink",
        ),
        ("[agent.budget]\ncpu_per_process = 5\n", "[agent.budget].cpu_per_process (line 2): must be a fraction"),
        ("[[target]]\nlabels = { 'a b' = 'x' }\n", "[[target]] 1.labels (line 2): label 'a b'"),
        ("[[target]]\npolicy = 'flight'\n", '[[target]] 1.policy (line 2): policy "flight" needs triggers'),
        ("[target]\npolicy = 'flight'\n", "[target] (line 1): must be an array of tables ([[target]])"),
        ("[sinks]\notlp = 'grpc://c:4317'\n", "[sinks].otlp (line 2): 'grpc://c:4317' is not a URL for the otlp sink"),
        ("[sink]\nlake = '/x'\n", "sink (line 1): unknown table; the file has [agent], [sinks] and [[target]]"),
    ],
)
def test_each_kind_of_mistake(text: str, expected: str) -> None:
    (line,) = problems(text)
    assert line.startswith(expected), line


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


def agent(*args: str) -> Done:
    """livetrace agent, in this process (a new one would spend a second importing)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["agent", *args])
    return Done(code, out.getvalue(), err.getvalue())


def test_check_prints_what_it_would_do_and_starts_nothing(tmp_path: Path) -> None:
    state = tmp_path / "state"
    conf = tmp_path / "agent.toml"
    conf.write_text(f'[agent]\nstate_dir = "{state}"\n[[target]]\nservice = "api"\nexecutable = "api*"\n')
    done = agent("--check", str(conf))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == f"{conf}: ok, 1 target"
    assert "target 1: api: executable api*, policy continuous" in done.stdout
    assert f"sinks: lake {state}/lake\n" in done.stdout
    assert not state.exists()  # nothing made, nothing started


def test_check_says_each_mistake_on_its_own_line(tmp_path: Path) -> None:
    conf = tmp_path / "agent.toml"
    conf.write_text("[agent]\nspool_max = 0\n[[target]]\npolicy = 'x'\n")
    done = agent("--check", str(conf))
    assert done.returncode == 2 and not done.stdout
    lines = done.stderr.splitlines()
    assert lines[0].startswith(f"livetrace: error: {conf}: [agent].spool_max (line 2): must be more than 0 bytes")
    assert lines[1].startswith(f"livetrace: error: {conf}: [[target]] 1.policy (line 4): unknown policy 'x'")
    assert lines[2] == f"livetrace: 2 mistakes in {conf}; nothing was started"
    missing = agent("--check", str(tmp_path / "nope.toml"))
    assert missing.returncode == 2 and "nope.toml: cannot be read: No such file or directory" in missing.stderr


def test_a_missing_package_is_one_line_naming_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = parse_config(f'[agent]\nstate_dir = "{tmp_path}"\n[sinks]\nclickhouse = "chdb:///x"\n')
    assert missing_packages(config) == []
    monkeypatch.setitem(sys.modules, "clickhouse_connect", None)  # as Python blocks an import
    assert missing_packages(config) == [
        "the clickhouse sink needs clickhouse_connect, which is not installed: pip install 'livetrace[fleet]'"
    ]


def test_a_password_never_shows() -> None:
    assert redacted("clickhouse://ingest:s3cret@ch:8123/lt") == "clickhouse://ingest:***@ch:8123/lt"
    assert redacted("chdb:///var/lib/ch") == "chdb:///var/lib/ch"
    conf = parse_config('[sinks]\nclickhouse = "clickhouse://ingest:s3cret@ch:8123/lt"\n')
    assert "s3cret" not in repr(describe(conf))
