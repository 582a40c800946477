"""Go's pprof-like trace profiles (`go tool trace -pprof=KIND`) read back,
to check ours against: the totals per stack (our spans' totals come from
the package, livetrace._views.pprof, which documents what Go counts), and
`go tool pprof -raw` of a profile file, normalized so that two equal
profiles print the same.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from livetrace._go.toolchain import go_env
from livetrace._views.pprof import PROFILE_KINDS, Totals, profile_totals, stack_key
from livetrace._views.pprof_file import read_profile

from .gocache import go_output

__all__ = [
    "PPROF_LEGACY_FILES",
    "PPROF_TEXT_TESTS",
    "PROFILE_KINDS",
    "assert_totals_agree",
    "go_totals",
    "go_trace_pprof",
    "profile_totals",
    "raw_profile",
    "read_totals",
]

# The corpus traces whose totals are compared with Go's -pprof (the spans'
# and the pprof view's): two of Go's text-form tests (tests/corpus/modern),
# and legacy traces (Go 1.27's tool reads them from Go 1.11 on), a few,
# small and large.
PPROF_TEXT_TESTS = ("go122-gc-stress", "go122-annotations-stress")
PPROF_LEGACY_FILES = (
    "http_1_11_good",
    "stress_1_11_good",
    "http_1_19_good",
    "stress_start_stop_1_21_good",
    "user_task_region_1_21_good",
)


def read_totals(data: bytes) -> Totals:
    """(count, delay ns) per stack of PCs, innermost first, of a profile."""
    p = read_profile(data)
    address = {loc.id: loc.address for loc in p.location}
    out: dict[tuple[int, ...], tuple[int, int]] = {}
    for s in p.sample:
        count, ns = s.value
        key = stack_key(tuple(address[i] for i in s.location_id))
        c0, n0 = out.get(key, (0, 0))
        out[key] = (c0 + count, n0 + ns)
    return out


def go_trace_pprof(go: Path, kind: str, trace: Path) -> bytes:
    """`go tool trace -pprof=KIND` of a trace file."""

    def pprof() -> bytes:
        r = subprocess.run(
            [str(go), "tool", "trace", f"-pprof={kind}", str(trace)],
            capture_output=True,
            env=go_env(),
            timeout=600,
            check=True,
        )
        return r.stdout

    return go_output(go, ["tool", "trace", f"-pprof={kind}"], trace, pprof)


def go_totals(go: Path, trace: Path) -> dict[str, Totals]:
    """read_totals of `go tool trace -pprof=KIND` of a trace file, per kind."""
    return {kind: read_totals(go_trace_pprof(go, kind, trace)) for kind in PROFILE_KINDS}


def assert_totals_agree(ours: dict[str, Totals], go: dict[str, Totals], tie_ns_per_span: int) -> None:
    """Per kind and stack, the same number of intervals and the same total
    time as Go's profile; within tie_ns_per_span ns per interval where Go's
    reader breaks ties between equal timestamps by moving events 1 ns apart
    in an order of its own (legacy traces)."""
    for kind in PROFILE_KINDS:
        assert ours[kind].keys() == go[kind].keys(), kind
        for stack, (count, ns) in go[kind].items():
            our_count, our_ns = ours[kind][stack]
            assert our_count == count, (kind, stack)
            assert abs(our_ns - ns) <= tie_ns_per_span * count, (kind, stack, our_ns, ns)
    assert sum(len(go[kind]) for kind in PROFILE_KINDS) > 0


_LOCATION = re.compile(r"\s*(\d+): (.*)")


def raw_profile(go: Path, profile: Path) -> str:
    """`go tool pprof -raw` of a profile file, normalized: `go tool trace`
    keeps its samples in a Go map, so their order, and the location ids
    that follow from it, change from run to run. Each sample's location ids
    are replaced by the locations' lines (address, mapping, function,
    file:line:column, start line) and the samples sorted; the Locations
    list, now said by the samples, is left out. The header (period and
    sample types; no time or duration: neither profile has them) and the
    Mappings (the fake one pprof's reader adds) are kept as printed."""
    out = subprocess.run(
        [str(go), "tool", "pprof", "-raw", str(profile)],
        capture_output=True,
        text=True,
        env=go_env(),
        timeout=600,
        check=True,
    ).stdout
    head, rest = out.split("Samples:\n", 1)
    samples, rest = rest.split("Locations\n", 1)
    locations, mappings = rest.split("Mappings\n", 1)
    where = {}
    for line in locations.splitlines():
        m = _LOCATION.fullmatch(line)
        assert m, line
        where[m[1]] = m[2]
    types, *rows = samples.splitlines()
    lines = []
    for row in rows:
        values, ids = row.split(":", 1)
        lines.append(" ".join(values.split()) + " @ " + " | ".join(where[i] for i in ids.split()))
    return "\n".join([head + "Samples:", types, *sorted(lines), "Mappings", mappings])
