"""Interop over Streamable HTTP in the 2026-07-28 era: the peer SDKs' clients
against our server.

Our server is ``modern_trio_server.py --http`` (``serve_http`` on 127.0.0.1,
port 0) in a process of its own, dual-era by default (one endpoint serves
handshake sessions and stateless 2026-07-28 POSTs), legacy-only with
``--versions=2025-11-25`` or modern-only with ``--versions=2026-07-28``. The
clients are the stdio peers' scripts in their ``--http URL`` mode:

* the Python SDK (``mcp`` 2.3.0, ``modern_sdk_client.py``) in its default
  ``auto`` mode, whose ``server/discover`` probe is a POST: against the
  dual-era and the modern-only server it goes 2026-07-28 and runs every step
  with no session (no ``Mcp-Session-Id``, no GET, no DELETE); against the
  legacy-only server the probe is refused and it falls back to the handshake
  era, with a session. Pinned to 2026-07-28 (``--mode=pin``, its modern-only
  mode: no probe) against the modern-only server too.
* the TypeScript SDK v2 client (2.4.0, ``ts_v2_modern_client.mjs``) with
  ``versionNegotiation`` ``auto`` and pinned to 2026-07-28, the same way.

The peers wait for our server's ``slow started`` / ``slow cancelled`` lines,
which are its stderr: the test reads them and copies each to the client's
stdin. Cancelling ``slow`` in 2026-07-28 closes its POST (HM-13), which our
server takes as the cancel: the handler stops and says so. Events are ordered
by these lines and the clients' JSON lines, never by sleeping; times are
printed under ``[http-modern]`` (run with ``-s``) and never asserted beyond
generous bounds that prove nothing hung.
"""

from __future__ import annotations

import functools
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
from test_modern_interop import expected_steps, step_timings
from test_ts_v2_interop import NOT_HUNG, Lines, ts_sdk_v2_dir

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
OUR_SERVER = str(HERE / "modern_trio_server.py")
PYTHON_CLIENT = str(HERE / "modern_sdk_client.py")
#: Bound on our server process ending once its stdin is closed.
EXIT_NOT_HUNG = 10.0

DUAL = ()
LEGACY_ONLY = ("2025-11-25",)
MODERN_ONLY = ("2026-07-28",)


def describe(versions: Sequence[str]) -> str:
    """How a figure names the server the client ran against."""
    return {DUAL: "dual-era", LEGACY_ONLY: "legacy-only", MODERN_ONLY: "modern-only"}[
        tuple(versions)
    ]


def figure(direction: str, timings: dict[str, float]) -> None:
    """Print one run's timings (seconds), in milliseconds, seen with ``pytest -s``."""
    parts = ", ".join(f"{name} {seconds * 1000:.1f} ms" for name, seconds in timings.items())
    print(f"[http-modern] {direction}: {parts}", flush=True)


class RelayedLines(Lines):
    """:class:`Lines` that also queues every line for one reader (the client)."""

    def __init__(self) -> None:
        super().__init__()
        self._queued, self.queue = trio.open_memory_channel[str](math.inf)

    def append(self, line: str) -> None:
        super().append(line)
        self._queued.send_nowait(line)


@attrs.define
class OurServer:
    """Our HTTP server process: its URL and its stderr lines."""

    url: str
    log: RelayedLines

    async def copy_to(self, stdin: trio.abc.SendStream) -> None:
        """Write each of the server's stderr lines (those seen so far, then the
        rest as they come) to *stdin*, until cancelled or the reader is gone.

        Cancellation: stops copying (done once the client has exited); a line
        cut short then has no reader left.
        """
        async for line in self.log.queue:
            try:
                await stdin.send_all(line.encode() + b"\n")
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return


@asynccontextmanager
async def our_http_server(versions: Sequence[str] = DUAL) -> AsyncIterator[OurServer]:
    """Run ``modern_trio_server.py --http`` (with ``--versions`` when given) and
    yield it once it has printed its URL.

    On the way out its stdin is closed, which stops it; it must exit 0 within
    :data:`EXIT_NOT_HUNG` seconds (else it is killed and the test fails).

    Cancellation: the process is killed and reaped (``trio.run_process``).
    """
    argv = [sys.executable, OUR_SERVER, "--http"]
    if versions:
        argv.append(f"--versions={','.join(versions)}")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out, err = Lines(), RelayedLines()
    async with trio.open_nursery() as nursery:
        process: trio.Process = await nursery.start(
            functools.partial(
                trio.run_process,
                argv,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                check=False,
            )
        )
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        nursery.start_soon(out.pump, process.stdout)
        nursery.start_soon(err.pump, process.stderr)
        try:
            with trio.fail_after(NOT_HUNG):
                await out.wait_for("http://")
            url = next(line for line in out.lines if line.startswith("http://"))
            yield OurServer(url, err)
        except Exception as exc:
            exc.add_note(f"our server's stderr was {err.lines}")
            raise
        finally:
            with trio.CancelScope(shield=True):
                await process.stdin.aclose()
            nursery.cancel_scope.deadline = trio.current_time() + EXIT_NOT_HUNG
    assert process.returncode == 0, err.lines


async def run_client(
    argv: list[str], cwd: Path, server: OurServer, *, exit_code: int = 0
) -> tuple[list[dict[str, Any]], list[float]]:
    """Run a peer client against *server* to its end, copying the server's stderr
    lines to its stdin; return its JSON lines and when each arrived (seconds
    after the spawn).

    Fails unless it exits with *exit_code* (0: every step worked; 1: a step
    failed and said so) having copied no line of the server's other than the
    events it waits for (the only lines our server writes when nothing goes
    wrong).

    Cancellation: the client is killed and reaped (``trio.run_process``).
    """
    out, err = Lines(), Lines()
    started = time.perf_counter()
    try:
        with trio.fail_after(NOT_HUNG * 2):
            async with trio.open_nursery() as relaying:
                async with trio.open_nursery() as nursery:
                    process: trio.Process = await nursery.start(
                        functools.partial(
                            trio.run_process,
                            argv,
                            cwd=cwd,
                            stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE,
                            check=False,
                        )
                    )
                    assert process.stdin is not None
                    assert process.stdout is not None
                    assert process.stderr is not None
                    relaying.start_soon(server.copy_to, process.stdin)
                    nursery.start_soon(out.pump, process.stdout)
                    nursery.start_soon(err.pump, process.stderr)
                # The client exited and both its pipes reached their end.
                relaying.cancel_scope.cancel()
        assert process.returncode == exit_code
        assert not [line for line in err.lines if line.startswith("[server]")]
    except Exception as exc:
        exc.add_note(f"the client's stdout was {out.lines}")
        exc.add_note(f"the client's stderr was {err.lines}")
        raise
    steps = [json.loads(line) for line in out.lines]
    return steps, [arrived - started for arrived in out.arrived]


def python_client(url: str, mode: str = "auto") -> list[str]:
    """The Python SDK client's command line against *url*, in *mode* (``auto`` or ``pin``)."""
    return [sys.executable, PYTHON_CLIENT, f"--mode={mode}", "--http", url]


async def ts_client(url: str, mode: str = "auto") -> tuple[list[str], Path]:
    """The TypeScript v2 client's command line against *url*, and the directory to
    run it in (the npm cache, installed on first use)."""
    cache = await trio.to_thread.run_sync(ts_sdk_v2_dir)
    return ["node", str(cache / "ts_v2_modern_client.mjs"), f"--mode={mode}", "--http", url], cache


def expected_legacy_steps(*, ts: bool) -> list[dict[str, Any]]:
    """The JSON lines a peer client prints when it fell back to the handshake era
    and every step that era has worked (no ``subscriptions/listen`` there)."""
    steps = expected_steps(ts=ts)
    steps[0] = {"step": "connect", "era": "legacy", "protocolVersion": "2025-11-25"}
    listen = next(i for i, step in enumerate(steps) if step["step"] == "listen")
    steps[listen] = {
        "step": "listen",
        "unsupported": "subscriptions/listen needs the 2026-07-28 era",
    }
    if not ts:
        # The Python script stops after the listen step in the handshake era.
        steps = [step for step in steps if step["step"] != "after-listen"]
    return steps


#: What the clients POST in 2026-07-28 after the connect, in order: one request
#: per POST (the confirm call twice: its input-required round and the retry).
MODERN_POSTS = [
    "tools/list",
    "tools/call add",
    "tools/call confirm",
    "tools/call confirm",
    "tools/call slow",
    "subscriptions/listen",
    "tools/call grow",
    "tools/list",
    "tools/call add",
]


def assert_stateless_modern(
    exchanges: list[list[Any]], *, probed: bool, cancels_listen: bool = False
) -> None:
    """Every exchange was a 2026-07-28 POST: no session id came back (HM-31),
    the client sent no GET or DELETE, cancelling ``slow`` closed its POST (HM-13: no
    ``notifications/cancelled`` for it), and every request was answered 200
    (``slow``'s POST may never have had a head: it was cancelled while the
    server held its head back).

    *cancels_listen*: the client also POSTed a ``notifications/cancelled`` when
    it left its subscription (the TypeScript SDK does, beside closing the listen
    stream, SB-08); our server accepts it with 202 and no body (HM-06).
    """
    expected = (["server/discover"] if probed else []) + MODERN_POSTS
    if cancels_listen:
        expected.insert(-1, "notifications/cancelled")
    labels = [label for _, label, _, _ in exchanges]
    assert labels == expected, exchanges
    assert {http for http, _, _, _ in exchanges} == {"POST"}, exchanges
    assert not [e for e in exchanges if e[3]], exchanges
    for _, label, status, _ in exchanges:
        if label == "notifications/cancelled":
            assert status == 202, exchanges
        elif label != "tools/call slow" or status is not None:
            assert status == 200, exchanges


def assert_handshake_fallback(exchanges: list[list[Any]], *, ends_session: bool) -> None:
    """The probe was refused (400 and -32600: our legacy-only endpoint does not
    serve the 2026-07-28 ``MCP-Protocol-Version``, HT-37), the client fell back
    to ``initialize`` (a 400 whose body is no modern error, HM-32) and from then
    on used the session our server minted: its GET stream, an elicitation answer
    POSTed as a JSON-RPC response, the cancel of ``slow`` as a
    ``notifications/cancelled`` POST (CN-01: in this era a closed stream is not
    a cancel, HT-17), and with *ends_session* a DELETE at the end (HT-34)."""
    assert exchanges[:2] == [
        ["POST", "server/discover", 400, False],
        ["POST", "initialize", 200, True],
    ], exchanges
    rest = exchanges[2:]
    if ends_session:
        assert rest[-1] == ["DELETE", None, 200, False], exchanges
        rest = rest[:-1]
    assert ["GET", None, 200, True] in rest, exchanges
    assert all(sid for *_, sid in rest), exchanges
    posts = [label for http, label, _, _ in rest if http == "POST"]
    assert posts[:7] == [
        "notifications/initialized",
        "tools/list",
        "tools/call add",
        "tools/call confirm",
        "(response)",
        "tools/call slow",
        "notifications/cancelled",
    ], exchanges
    assert "DELETE" not in [http for http, *_ in rest], exchanges


@pytest.mark.spec("HM-01")
@pytest.mark.spec("HM-13")
@pytest.mark.spec("HM-31")
@pytest.mark.spec("VR-09")
@pytest.mark.spec("CN-05")
@pytest.mark.parametrize(
    ("mode", "versions"),
    [("auto", DUAL), ("auto", MODERN_ONLY), ("pin", DUAL), ("pin", MODERN_ONLY)],
    ids=["auto-dual", "auto-modern-only", "pin-dual", "pin-modern-only"],
)
async def test_a_python_sdk_client_goes_modern_against_our_server(
    mode: str, versions: tuple[str, ...]
) -> None:
    async with our_http_server(versions) as server:
        steps, arrived = await run_client(python_client(server.url, mode), HERE, server)
        # The handler started and was cancelled by the closed POST.
        assert server.log.lines == ["slow started", "slow cancelled"]
    *steps, closed = steps
    expected = expected_steps(ts=False)
    # Pinned, it adopts a discover result of its own making, which names no
    # server (the later results' _meta do, ME-11).
    expected[0].update(mode=mode, server="modern-trio-server" if mode == "auto" else None)
    assert [*steps, {"step": "closed"}] == expected
    assert_stateless_modern(closed["exchanges"], probed=mode == "auto")
    figure(
        f"mcp 2.3.0 client ({mode}) -> our {describe(versions)} server",
        step_timings(steps, arrived),
    )


@pytest.mark.spec("HM-32")
@pytest.mark.spec("HT-37")
@pytest.mark.spec("HT-17")
@pytest.mark.spec("HT-34")
async def test_a_python_sdk_client_in_auto_mode_falls_back_against_our_legacy_only_server() -> None:
    async with our_http_server(LEGACY_ONLY) as server:
        steps, arrived = await run_client(python_client(server.url), HERE, server)
        assert server.log.lines == ["slow started", "slow cancelled"]
    *steps, closed = steps
    expected = expected_legacy_steps(ts=False)
    expected[0].update(mode="auto", server="modern-trio-server")
    assert [*steps, {"step": "closed"}] == expected
    assert_handshake_fallback(closed["exchanges"], ends_session=True)
    figure("mcp 2.3.0 client (auto) -> our legacy-only server", step_timings(steps, arrived))


@pytest.mark.spec("HM-01")
@pytest.mark.spec("HM-06")
@pytest.mark.spec("HM-13")
@pytest.mark.spec("HM-31")
@pytest.mark.spec("VR-09")
@pytest.mark.spec("CN-05")
@pytest.mark.parametrize(
    ("mode", "versions"),
    [("auto", DUAL), ("auto", MODERN_ONLY), ("pin", DUAL), ("pin", MODERN_ONLY)],
    ids=["auto-dual", "auto-modern-only", "pin-dual", "pin-modern-only"],
)
async def test_a_ts_v2_client_goes_modern_against_our_server(
    mode: str, versions: tuple[str, ...]
) -> None:
    async with our_http_server(versions) as server:
        argv, cache = await ts_client(server.url, mode)
        steps, arrived = await run_client(argv, cache, server)
        assert server.log.lines == ["slow started", "slow cancelled"]
    *steps, closed = steps
    expected = expected_steps(ts=True)
    expected[0].update(mode=mode, server="modern-trio-server")
    assert [*steps, {"step": "closed"}] == expected
    # Pinned, it still probes (no fallback if the answer does not offer 2026-07-28).
    assert_stateless_modern(closed["exchanges"], probed=True, cancels_listen=True)
    figure(
        f"TS v2 client ({mode}) -> our {describe(versions)} server", step_timings(steps, arrived)
    )


@pytest.mark.spec("HM-32")
@pytest.mark.spec("HT-37")
@pytest.mark.spec("HT-17")
async def test_a_ts_v2_client_in_auto_mode_falls_back_against_our_legacy_only_server() -> None:
    async with our_http_server(LEGACY_ONLY) as server:
        argv, cache = await ts_client(server.url)
        steps, arrived = await run_client(argv, cache, server)
        assert server.log.lines == ["slow started", "slow cancelled"]
    *steps, closed = steps
    expected = expected_legacy_steps(ts=True)
    expected[0].update(mode="auto", server="modern-trio-server")
    assert [*steps, {"step": "closed"}] == expected
    # Its close() leaves the session to our idle timeout (no DELETE).
    assert_handshake_fallback(closed["exchanges"], ends_session=False)
    figure("TS v2 client (auto) -> our legacy-only server", step_timings(steps, arrived))


@pytest.mark.spec("HT-37")
async def test_a_python_sdk_client_pinned_to_2026_07_28_does_not_fall_back() -> None:
    # Pinned, it connects without a word on the wire; its first request is
    # refused by our legacy-only endpoint and nothing falls back.
    async with our_http_server(LEGACY_ONLY) as server:
        steps, _ = await run_client(python_client(server.url, "pin"), HERE, server, exit_code=1)
        assert server.log.lines == []
    assert steps == [
        {
            "step": "connect",
            "mode": "pin",
            "era": "modern",
            "protocolVersion": "2026-07-28",
            "server": None,
        },
        {"step": "tools", "error": "MCPError: Unsupported MCP-Protocol-Version '2026-07-28'"},
    ]


@pytest.mark.spec("HT-37")
async def test_a_ts_v2_client_pinned_to_2026_07_28_does_not_fall_back() -> None:
    async with our_http_server(LEGACY_ONLY) as server:
        argv, cache = await ts_client(server.url, "pin")
        steps, _ = await run_client(argv, cache, server, exit_code=1)
        assert server.log.lines == []
    assert steps == [
        {
            "step": "connect",
            "error": "SdkError: Version negotiation failed: the server did not offer pinned "
            "protocol version 2026-07-28 via server/discover (no fallback in pin mode)",
        }
    ]
