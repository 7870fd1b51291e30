"""Handler faults of the robustness catalogue (reliability §3.6): what the
peer sees of a failing handler, and what the server's log keeps."""

from __future__ import annotations

import logging
from typing import Any

import orjson
import pytest
import trio
import trio.testing
from helpers import FnDispatcher, open_raw_server

from trio_mcp.lowlevel import RequestContext

CANARY = "canary-7f3a /etc/shadow token=hunter2"


class CustomFailure(Exception):
    pass


@pytest.mark.parametrize("exc_type", [ValueError, KeyError, CustomFailure])
async def test_a_failing_handler_is_a_generic_internal_error_and_its_traceback_is_logged(
    exc_type: type[Exception],
    caplog: pytest.LogCaptureFixture,
    autojump_clock: trio.testing.MockClock,
) -> None:
    """H-01: the peer gets -32603 "Internal error" and none of the canary the
    exception carries; the server's log has the whole traceback; the session
    survives."""

    async def boom(ctx: RequestContext) -> Any:
        raise exc_type(CANARY)

    caplog.set_level(logging.DEBUG)
    async with open_raw_server(FnDispatcher(boom=boom)) as (peer, _):
        await peer.call_tool("boom", request_id=1)
        reply = await peer.receive()
        assert reply == {
            "jsonrpc": "2.0",
            "id": 1,
            "error": {"code": -32603, "message": "Internal error"},
        }
        await peer.ping()
    assert b"canary-7f3a" not in orjson.dumps(peer.frames)
    logged = [r for r in caplog.records if r.exc_info and isinstance(r.exc_info[1], exc_type)]
    assert len(logged) == 1
    assert logged[0].levelno >= logging.ERROR
    text = caplog.text
    assert "canary-7f3a" in text  # the operator sees what the peer does not
    assert "Traceback" in text
    assert "in boom" in text


async def test_a_handler_that_ignores_its_shutdown_cancel_is_named_in_the_log(
    caplog: pytest.LogCaptureFixture,
    autojump_clock: trio.testing.MockClock,
) -> None:
    """T-07: a handler that shields itself holds up the session's exit; when
    the shutdown grace runs out the server logs which handler it is waiting
    for (and nothing for handlers that stopped)."""

    async def stubborn(ctx: RequestContext) -> Any:
        with trio.CancelScope(shield=True):
            await trio.sleep(10)
        return {"content": []}

    async def polite(ctx: RequestContext) -> Any:
        await trio.sleep(10)
        return {"content": []}

    caplog.set_level(logging.WARNING)
    async with open_raw_server(
        FnDispatcher(stubborn=stubborn, polite=polite), shutdown_grace=2, cancel_notify_grace=0.5
    ) as (peer, _):
        await peer.call_tool("stubborn", request_id="stuck-1")
        await peer.call_tool("polite", request_id="polite-2")
        await trio.testing.wait_all_tasks_blocked()
    stuck = [r.getMessage() for r in caplog.records if "still runs" in r.getMessage()]
    assert stuck == [
        "handler for tools/call (id 'stuck-1') still runs after its cancellation at shutdown;"
        " the session's exit waits for it"
    ]
    assert trio.current_time() == 10  # the exit waited for it, as documented
