"""Our client's pending calls and its close stay bounded when the server stops
answering (black hole), dies, or half-closes, over each transport.

Elsewhere a client's close blocks on a DELETE to a black-holed server until the
TCP timeout, and an HTTP call hangs for ever when the server dies. Here, over
Streamable HTTP (both eras; our application in process behind an httpx
transport that can fail as a network does, on the autojump clock, so every
bound is exact): a pending call fails at once when the server dies or
half-closes its stream, and at its idle timeout when the server goes silent;
the close returns within ``close_timeout`` whatever the server does. Over stdio
the same faults are real processes (``tests/test_soak_slice.py`` runs them:
``test_a_killed_server_fails_every_pending_call_promptly`` and
``test_stalled_and_half_closed_peers_fail_pending_calls``), and a server that
black-holes and ignores SIGTERM is closed within the close and terminate
graces below.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import httpx
import pytest
import trio
import trio.testing
from lifecycle_helpers import URL, Bridge
from stdio_helpers import CHILD_ENV, PYTHON, reaped

from trio_mcp import (
    MCPError,
    RequestTimeout,
    Server,
    http_app,
    open_http_client,
    open_stdio_client,
)

#: The pending call's idle timeout, and the client's bound on its closing DELETE.
IDLE = 10.0
CLOSE_TIMEOUT = 2.0


def waiting_server(started: trio.Event) -> Server:
    server = Server("waiting", version="1")

    @server.tool()
    async def wait() -> None:
        """Runs until cancelled."""
        started.set()
        await trio.sleep_forever()

    return server


FAULTS = ["black-hole", "dead", "half-closed"]


@pytest.mark.spec("HT-34", "TO-01")
@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_client_bounded_when_the_server_fails_over_http(
    autojump_clock: trio.testing.MockClock, fault: str, era: str
) -> None:
    started = trio.Event()
    app = http_app(waiting_server(started))
    outcome: list[tuple[float, BaseException | None]] = []
    ended = trio.Event()
    async with app.run(), trio.open_nursery() as nursery:
        bridge = Bridge(app, nursery)
        http = httpx.AsyncClient(transport=bridge)
        async with http:
            client_cm = open_http_client(
                URL, http_client=http, era=era, close_timeout=CLOSE_TIMEOUT
            )
            client = await client_cm.__aenter__()
            assert client.era == era

            async def call() -> None:
                try:
                    await client.call_tool("wait", {}, progress_idle_timeout=IDLE)
                except MCPError as exc:
                    outcome.append((trio.current_time(), exc))
                else:  # pragma: no cover - the tool never answers
                    outcome.append((trio.current_time(), None))
                ended.set()

            nursery.start_soon(call)
            await started.wait()
            await trio.testing.wait_all_tasks_blocked()
            failed_at = trio.current_time()
            bridge.set_mode(fault)
            with trio.fail_after(IDLE + 1):
                await ended.wait()
            grace = client.session.cancel_notify_grace
            closing = trio.current_time()
            await client_cm.__aexit__(None, None, None)
            closed = trio.current_time() - closing
        nursery.cancel_scope.cancel()
    ((when, error),) = outcome
    if fault == "black-hole":
        # Silence: the call fails at its idle timeout; the close gives the
        # courtesy cancel its grace and the DELETE (handshake era) its bound.
        assert isinstance(error, RequestTimeout)
        assert when == failed_at + IDLE
        assert closed <= grace + CLOSE_TIMEOUT
    else:
        # Gone or closed: the call fails at once, and so does the close.
        assert isinstance(error, MCPError)
        assert when == failed_at
        assert closed == 0


BLACK_HOLE = """
import signal, time
import trio_mcp

server = trio_mcp.Server("black-hole")

@server.tool()
async def freeze() -> str:
    # The whole process stops: nothing is read or answered any more, end of
    # input goes unnoticed, and SIGTERM is ignored.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(3600)
    return "never"

server.run_stdio()
"""
#: Short graces, so the bounds below are small (real processes, real time).
CLOSE_GRACE = 0.5
TERMINATE_GRACE = 0.5


@pytest.mark.spec("SI-10", "TO-01")
@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_client_bounded_when_the_server_black_holes_over_stdio(
    tmp_path: Path, era: str
) -> None:
    script = tmp_path / "black_hole.py"
    script.write_text(textwrap.dedent(BLACK_HOLE))
    errors: list[BaseException] = []
    with trio.fail_after(30):
        async with open_stdio_client(
            PYTHON,
            [str(script)],
            env=CHILD_ENV,
            era=era,
            stderr=None,
            close_grace=CLOSE_GRACE,
            terminate_grace=TERMINATE_GRACE,
        ) as client:
            assert client.era == era
            pid = client.session.transport.pid  # type: ignore[attr-defined]
            try:
                await client.call_tool("freeze", {}, progress_idle_timeout=1.0)
            except RequestTimeout as exc:
                errors.append(exc)
            closing = trio.current_time()
        closed = trio.current_time() - closing
    assert len(errors) == 1
    # stdin closed, then SIGTERM (ignored), then SIGKILL: the graces, plus the reap.
    assert closed < CLOSE_GRACE + TERMINATE_GRACE + 1.0, closed
    assert reaped(pid)
