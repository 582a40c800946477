"""What start-up imports: `import livetrace`, `livetrace --help` and
`livetrace decode` of a file stay clear of trio, httpx, psutil, protobuf,
perfetto and the session layer (bench/startup.py times them; no timing
here). Each path runs in a fresh interpreter, whose sys.modules it reports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import livetrace

from . import textform

LEGACY_TRACE = textform.CORPUS.parent / "legacy" / "go-testdata" / "http_1_21_good"
# What a command that only reads a file, or only prints its help, has no use for.
HEAVY = ("trio", "httpx", "psutil", "google.protobuf", "perfetto", "construct", "rich")
# Layers of the live commands; of the session layer, the parser shows only
# the defaults of its options (livetrace._session.defaults: constants).
LIVE_LAYERS = ("livetrace._session.", "livetrace._attach", "livetrace._flight", "livetrace._go", "livetrace._protocol")
# The session's defaults (for --help), and the standard-library-only text
# helpers every command's messages go through (escaping, redaction).
ALLOWED_LIVE = {
    "livetrace._session.defaults",
    "livetrace._protocol",
    "livetrace._protocol.text",
    "livetrace._protocol.redact",
}

# The exit status and the imported modules' names, as JSON.
PRINT_MODULES = 'import json, sys\nprint(json.dumps({{"code": {code}, "modules": sorted(sys.modules)}}))\n'
# Runs main(argv) with standard output captured.
RUN_MAIN = """
import contextlib, io, sys
from livetrace._cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        code = main(sys.argv[1:])
    except SystemExit as e:
        code = e.code
""" + PRINT_MODULES.format(code="code")


def modules_after(code: str, *args: str) -> tuple[object, list[str]]:
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.splitlines()[-1])
    return result["code"], result["modules"]


def heavy_in(modules: list[str]) -> list[str]:
    heavy = [m for m in modules if m in HEAVY or m.startswith(tuple(h + "." for h in HEAVY))]
    live = [m for m in modules if m.startswith(LIVE_LAYERS) and m not in ALLOWED_LIVE]
    return heavy + live


@pytest.fixture(scope="module")
def modern_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("startup") / "modern.trace"
    path.write_bytes(textform.load(textform.CORPUS / "go122-annotations-stress.test").data)
    return path


def test_import_livetrace_is_light() -> None:
    _, modules = modules_after("import livetrace\n" + PRINT_MODULES.format(code=0))
    assert heavy_in(modules) == []
    assert not [m for m in modules if m.startswith("livetrace._trace")], "the decoders load on first use"


def test_every_exported_name_resolves() -> None:
    """The lazy names (PEP 562) are all there, for `from livetrace import X` and dir()."""
    for name in livetrace.__all__:
        assert getattr(livetrace, name) is not None, name
    assert set(livetrace.__all__) <= set(dir(livetrace))
    from livetrace import Session, connect, decode

    assert connect.__module__ == "livetrace._session.connect" and Session.__name__ == "Session"
    assert decode.__module__ == "livetrace._files"
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = livetrace.no_such_name


@pytest.mark.parametrize(
    "command", [[], ["record"], ["tail"], ["flight"], ["profile"], ["export"], ["top"], ["decode"]]
)
def test_help_imports_no_command(command: list[str]) -> None:
    code, modules = modules_after(RUN_MAIN, *command, "--help")
    assert code == 0
    assert heavy_in(modules) == []


@pytest.mark.parametrize(
    ("dump", "trace"),
    [("parsed", "modern"), ("wire", "modern"), ("parsed", "legacy"), ("legacy", "legacy")],
)
def test_decoding_a_file_imports_no_live_layer(dump: str, trace: str, modern_trace: Path) -> None:
    path = modern_trace if trace == "modern" else LEGACY_TRACE
    code, modules = modules_after(RUN_MAIN, "decode", "--dump", dump, str(path))
    assert code == 0
    assert heavy_in(modules) == []
    assert "livetrace._cli.decode" in modules, "the command ran"


# The decoding layers a wire dump never reaches: it prints each batch's
# records as they stand, so it neither assembles generations nor orders
# events, and reads no legacy trace.
ORDERING = ("livetrace._trace.decoder", "livetrace._trace.modern.", "livetrace._trace.legacy.")
WIRE_LAYER = {"livetrace._trace.modern.wire"}


def test_wire_dump_imports_no_generation_or_ordering(modern_trace: Path) -> None:
    code, modules = modules_after(RUN_MAIN, "decode", "--dump", "wire", str(modern_trace))
    assert code == 0
    assert "livetrace._trace.modern.wire" in modules, "the command ran"
    assert [m for m in modules if m.startswith(ORDERING) and m not in WIRE_LAYER] == []
