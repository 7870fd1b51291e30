"""The public switch: ``telemetry=`` on the server and the clients, the
``TRIO_MCP_TELEMETRY`` variable, and what happens without the ``otel`` extra
(a fresh interpreter in which ``opentelemetry`` cannot be imported)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from trio_mcp import Server
from trio_mcp._telemetry._middleware import Telemetry
from trio_mcp._telemetry._switch import CAPTURE_VARIABLE, ENVIRONMENT_VARIABLE, resolve
from trio_mcp.testing import open_memory_client


def modes(server: Server) -> list[str]:
    return [m.mode for m in server.middleware if isinstance(m, Telemetry)]


def test_native_by_default_when_the_api_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENVIRONMENT_VARIABLE, raising=False)
    assert resolve(None) == "native"
    assert modes(Server("s")) == ["native"]
    assert modes(Server("s", telemetry="propagation")) == ["propagation"]
    assert modes(Server("s", telemetry="off")) == []


@pytest.mark.parametrize(("value", "expected"), [("off", []), (" Propagation ", ["propagation"])])
def test_the_environment_variable_sets_the_default(
    monkeypatch: pytest.MonkeyPatch, value: str, expected: list[str]
) -> None:
    monkeypatch.setenv(ENVIRONMENT_VARIABLE, value)
    assert modes(Server("s")) == expected
    assert modes(Server("s", telemetry="native")) == ["native"]  # the argument wins


async def test_the_client_switch_puts_telemetry_outermost(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENVIRONMENT_VARIABLE, raising=False)
    mine = Telemetry("client", "propagation")
    async with open_memory_client(Server("s", telemetry="off"), middleware=[mine]) as client:
        [first, second] = client.middleware
        assert isinstance(first, Telemetry)
        assert (first.role, first.mode, second) == ("client", "native", mine)


def test_a_mode_that_does_not_exist_is_one_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(
        ValueError, match=r"^telemetry must be native, propagation or off, not 'on'$"
    ):
        Server("s", telemetry="on")  # type: ignore[arg-type]
    monkeypatch.setenv(ENVIRONMENT_VARIABLE, "verbose")
    with pytest.raises(
        ValueError,
        match=r"^TRIO_MCP_TELEMETRY must be native, propagation or off, not 'verbose'$",
    ):
        Server("s")


def run_without_opentelemetry(code: str) -> subprocess.CompletedProcess[str]:
    # A None entry in sys.modules makes every import of the package fail, as
    # when the extra is not installed.
    prelude = "import sys\nsys.modules['opentelemetry'] = None\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": "/usr/bin:/bin"},
    )


def test_without_the_extra_the_default_is_off_and_asking_names_the_extra() -> None:
    done = run_without_opentelemetry(
        """
        import trio_mcp
        from trio_mcp.tasks import MissingExtra
        server = trio_mcp.Server("s")
        print(server.middleware)
        try:
            trio_mcp.Server("s", telemetry="native")
        except MissingExtra as exc:
            print(exc)
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "[]",
        "telemetry=native needs the otel extra: pip install 'trio_mcp[otel]'",
    ]


def test_off_never_imports_opentelemetry() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, trio_mcp\n"
            "trio_mcp.Server('s', telemetry='off')\n"
            "print(any(name.startswith('opentelemetry') for name in sys.modules))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout.strip() == "False", done.stderr


def captures(server: Server) -> list[bool]:
    return [m.capture for m in server.middleware if isinstance(m, Telemetry)]


def test_capture_is_off_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENVIRONMENT_VARIABLE, raising=False)
    monkeypatch.delenv(CAPTURE_VARIABLE, raising=False)
    assert captures(Server("s")) == [False]
    assert captures(Server("s", telemetry_capture=True)) == [True]
    monkeypatch.setenv(CAPTURE_VARIABLE, " True ")
    assert captures(Server("s")) == [True]
    assert captures(Server("s", telemetry_capture=False)) == [False]  # the argument wins
    monkeypatch.setenv(CAPTURE_VARIABLE, "0")
    assert captures(Server("s")) == [False]
    monkeypatch.setenv(CAPTURE_VARIABLE, "everything")
    with pytest.raises(
        ValueError,
        match=r"^TRIO_MCP_TELEMETRY_CAPTURE must be 1 or 0 \(true or false\), not 'everything'$",
    ):
        Server("s")


async def test_the_client_takes_the_capture_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENVIRONMENT_VARIABLE, raising=False)
    monkeypatch.delenv(CAPTURE_VARIABLE, raising=False)
    server = Server("s", telemetry="off")
    async with open_memory_client(server, telemetry_capture=True) as client:
        [first] = client.middleware
        assert isinstance(first, Telemetry)
        assert first.capture
    async with open_memory_client(server) as client:
        [first] = client.middleware
        assert isinstance(first, Telemetry)
        assert not first.capture
