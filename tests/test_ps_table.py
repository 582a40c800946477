"""ps's table layout (issue 26, point 6): the MODULE column gets its width
before the command line gets any, and a module cut short keeps its end, the
part that names the service (docs/ps.md). Rows like the Debian services
that showed it: long command lines, packages built outside module mode."""

from __future__ import annotations

from livetrace._attach.buildinfo import BuildInfo, Module
from livetrace._attach.processes import Kind, ProcessInfo
from livetrace._cli.ps import HEADERS, table_lines

NOW = 1_800_000_000.0


def _row(pid: int, user: str, command: list[str], build: BuildInfo, port: int) -> ProcessInfo:
    name = command[0].rsplit("/", 1)[-1]
    return ProcessInfo(pid, user, command, name, NOW - 4000, Kind.GO, build=build, pprof=f"http://127.0.0.1:{port}")


ROWS = [
    _row(
        811,
        "caddy",
        ["/usr/bin/caddy", "run", "--environ", "--config", "/etc/caddy/Caddyfile", "--adapter", "caddyfile"],
        BuildInfo("go1.19.8", "github.com/caddyserver/caddy/v2/cmd/caddy"),
        2019,
    ),
    _row(
        812,
        "prometheus",
        [
            "/usr/bin/prometheus",
            "--config.file=/etc/prometheus/prometheus.yml",
            "--storage.tsdb.path=/var/lib/prometheus/metrics2/",
            "--web.listen-address=127.0.0.1:9090",
        ],
        BuildInfo("go1.19.8", "github.com/prometheus/prometheus/cmd/prometheus"),
        9090,
    ),
    _row(
        813,
        "etcd",
        ["/usr/bin/etcd", "--data-dir", "/var/lib/etcd/default", "--enable-pprof", "--listen-client-urls", "x" * 60],
        BuildInfo("go1.19.8", "go.etcd.io/etcd/v3", Module("go.etcd.io/etcd/v3", "v3.4.23")),
        12379,
    ),
]
MODULES = ["github.com/caddyserver/caddy/v2/cmd/caddy", "github.com/prometheus/prometheus/cmd/prometheus"]
MODULES.append("go.etcd.io/etcd/v3 v3.4.23")


def _module_cells(lines: list[str]) -> list[str]:
    """Each row's MODULE cell, read at the header's column."""
    start = lines[0].index("MODULE")
    end = lines[0].index(HEADERS[HEADERS.index("MODULE") + 1])
    return [line[start:end].rstrip() for line in lines[1:]]


def test_the_module_column_is_whole_where_it_fits() -> None:
    for width in (120, 220):
        lines = table_lines(ROWS, NOW, width)
        assert all(len(line) <= width for line in lines), lines
        assert _module_cells(lines) == MODULES, (width, lines)
        # The command line gave way first: it is cut, the module is not.
        assert width == 220 or all("…" in line.split("  go1.19.8")[0] for line in lines[1:]), lines


def test_a_module_cut_short_keeps_its_end() -> None:
    # At 80 columns the addresses and the other columns leave 20 to share.
    lines = table_lines(ROWS, NOW, 80)
    cells = _module_cells(lines)
    for cell, module in zip(cells, MODULES, strict=True):
        assert cell == module or (cell.startswith("…") and module.endswith(cell[1:]) and len(cell) >= 10), cells
    assert any(cell != module for cell, module in zip(cells, MODULES, strict=True)), cells
    # The command line still shows the program's name.
    for line, name in zip(lines[1:], ("caddy", "prometheus", "etcd"), strict=True):
        assert name in line.split("  go1.19.8")[0], line
