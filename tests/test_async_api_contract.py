"""Every public async call is a checkpoint, and the session boundary unwraps groups.

Trio's conventions: an async function is a cancel point and a schedule point; a
library must not hand its user an exception group that holds a single real error.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio
import trio.testing

import trio_mcp
import trio_mcp.lowlevel
from trio_mcp.protocol import Connection, Role
from trio_mcp.testing import memory_transport_pair, open_memory_client

server = trio_mcp.Server("contract", version="1.0")


@server.tool()
async def echo(text: str) -> str:
    return text


async def test_public_calls_are_checkpoints() -> None:
    async with open_memory_client(server) as client:
        with trio.testing.assert_checkpoints():
            await client.ping()
        with trio.testing.assert_checkpoints():
            await client.call_tool("echo", {"text": "x"})
        with trio.testing.assert_checkpoints():
            await client.session.request("ping")


@asynccontextmanager
async def _logging_server_session() -> AsyncIterator[tuple[trio_mcp.lowlevel.Session, list[bytes]]]:
    """A server session that declares logging, after a real handshake, plus the
    frames its client end received."""
    client_end, server_end = memory_transport_pair()
    protocol = Connection(Role.SERVER, capabilities={"logging": {}})
    seen: list[bytes] = []

    class Recorder(trio_mcp.lowlevel.RequestObserver):
        def on_frame(
            self, direction: trio_mcp.lowlevel.FrameDirection, data: bytes, at: float
        ) -> None:
            if direction is trio_mcp.lowlevel.FrameDirection.IN:
                seen.append(data)

    async with (
        trio_mcp.lowlevel.open_session(server_end, protocol, server) as session,
        trio_mcp.open_client(client_end, observer=Recorder()) as client,
    ):
        await client.ping()  # the server has seen notifications/initialized by now
        yield session, seen


async def test_notify_is_a_checkpoint_and_sends_nothing_when_already_cancelled() -> None:
    async with _logging_server_session() as (session, seen):
        with trio.testing.assert_checkpoints():
            await session.notify("notifications/message", {"level": "info", "data": "sent"})
        with trio.CancelScope() as scope:
            scope.cancel()
            await session.notify("notifications/message", {"level": "info", "data": "never"})
        await session.request("ping")  # everything queued before it has been delivered
        assert any(b'"sent"' in frame for frame in seen)
        assert not any(b'"never"' in frame for frame in seen)


async def test_an_error_in_the_body_is_not_wrapped_in_a_group() -> None:
    a, _b = memory_transport_pair()
    with pytest.raises(ZeroDivisionError):
        async with trio_mcp.lowlevel.open_session(a, server.make_protocol(), server):
            1 / 0  # noqa: B018 - the error under test


async def test_a_cancelled_body_stays_cancelled(autojump_clock: trio.abc.Clock) -> None:
    a, _b = memory_transport_pair()
    with trio.move_on_after(1) as scope:
        async with trio_mcp.lowlevel.open_session(a, server.make_protocol(), server):
            await trio.sleep_forever()
    assert scope.cancelled_caught


@pytest.mark.spec("PG-03")
async def test_report_progress_is_a_checkpoint_with_or_without_a_token() -> None:
    checked: list[bool] = []
    progress_server = trio_mcp.Server("progress", version="1.0")

    @progress_server.tool()
    async def report(ctx: trio_mcp.Context) -> str:
        # With a token the notification goes through the queue's no-yield fast
        # path; the call must still be a cancel point and a schedule point.
        with trio.testing.assert_checkpoints():
            await ctx.report_progress(1, 2)
        checked.append(True)
        return "ok"

    async with open_memory_client(progress_server) as client:
        await client.call_tool("report", on_progress=lambda p: None)  # with a token
        await client.call_tool("report")  # without one
    assert checked == [True, True]


async def test_a_loop_that_only_reports_progress_can_be_cancelled() -> None:
    looped: list[int] = []
    sessions: list[trio_mcp.lowlevel.Session] = []
    busy_server = trio_mcp.Server("busy", version="1.0")

    @busy_server.tool()
    async def spin(ctx: trio_mcp.Context) -> str:
        sessions.append(ctx.session)
        step = 0
        while True:  # no await but report_progress: it must let the cancel in
            step += 1
            looped.append(step)
            await ctx.report_progress(step)

    async with open_memory_client(busy_server) as client:
        with trio.CancelScope() as scope:

            def stop_after_three(progress: trio_mcp.lowlevel.Progress) -> None:
                if progress.progress >= 3:
                    scope.cancel()

            with trio.fail_after(10):
                await client.call_tool("spin", on_progress=stop_after_three)
        assert scope.cancelled_caught
        with trio.fail_after(10):
            # The peer's cancel reached the spinning handler: it stops, and the
            # server is still responsive.
            await sessions[0].wait_inbound_settled()
            await client.ping()
        (record,) = [r for r in sessions[0].requests() if r.method == "tools/call"]
        assert record.state is trio_mcp.lowlevel.RequestState.CANCELLED
        assert record.cancel_origin is trio_mcp.lowlevel.CancelOrigin.PEER
    assert len(looped) >= 3
