"""What is not JSON fails whoever made it, never the writer (reliability H-07, J-22).

Before: a tool that logged ``{"v": nan}`` (or a lone surrogate, or an object)
made the session's writer raise, which ended the session, and over HTTP every
session with it. Now everything we send is serialized when it is made, so the
error reaches the code that made it, and the writer drops (and logs) anything
that still fails instead of dying.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import trio
import trio.testing
from helpers import Recorder, open_client_with_raw_server, open_pair

from trio_mcp import Context, Server
from trio_mcp import types as t
from trio_mcp.lowlevel import RequestState
from trio_mcp.protocol import (
    Direction,
    FrameDirection,
    LocalProtocolError,
    Notification,
    NotJSON,
)

NOT_JSON: list[Any] = [float("nan"), float("inf"), "a\ud800b", object()]


def _server() -> Server:
    server = Server("emitter")

    @server.tool()
    async def log(ctx: Context, which: int) -> str:
        await ctx.info({"value": NOT_JSON[which]})
        return "logged"

    @server.tool()
    async def progress(ctx: Context, which: int) -> str:
        if which == 0:
            await ctx.report_progress(float("nan"), 10)
        else:
            await ctx.report_progress(1, 10, message="step \udc00")
        return "reported"

    @server.tool()
    async def echo(text: str) -> str:
        return text

    return server


def _frames_are_json(recorder: Recorder) -> None:
    for direction, data, _ in recorder.frames:
        if direction is FrameDirection.OUT:
            orjson.loads(data)  # every frame written parses


@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize("which", range(len(NOT_JSON)))
async def test_a_log_that_is_not_json_fails_the_tool_and_the_session_goes_on(
    which: int, era: str, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = Recorder()
    options = {"observer": recorder}
    async with open_pair(_server(), server_options=options, era=era) as (client, session):
        # 2026-07-28 sends log messages only for requests that ask (LG-06).
        await client.set_logging_level("debug")
        result = await client.call_tool("log", {"which": which})
        assert result.is_error
        assert result.content == [t.TextContent(text="Tool log failed")]
        assert "not valid" in caplog.text or "cannot encode" in caplog.text
        # The writer is alive: the next call is answered.
        assert (await client.call_tool("echo", {"text": "after"})).content == [
            t.TextContent(text="after")
        ]
        assert not session.closed
    _frames_are_json(recorder)


@pytest.mark.parametrize("which", [0, 1])
async def test_progress_that_is_not_json_fails_the_tool_and_the_session_goes_on(
    which: int,
) -> None:
    seen: list[Any] = []
    async with open_pair(_server()) as (client, session):
        result = await client.call_tool("progress", {"which": which}, on_progress=seen.append)
        assert result.is_error
        assert seen == []  # nothing unencodable went out
        assert (await client.call_tool("echo", {"text": "after"})).content == [
            t.TextContent(text="after")
        ]
        assert not session.closed


async def test_a_request_that_is_not_json_fails_its_caller_before_anything_is_spent() -> None:
    async with open_pair(_server()) as (client, _):
        before = client.session.protocol.requests()
        with pytest.raises(NotJSON):
            await client.session.request(
                "tools/call", {"name": "echo", "arguments": {"text": float("nan")}}
            )
        # No record, and the next request takes the id the failed one did not use.
        assert client.session.protocol.requests() == before
        assert (await client.call_tool("echo", {"text": "ok"})).content == [
            t.TextContent(text="ok")
        ]


async def test_a_frame_that_still_fails_in_the_writer_is_dropped_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with open_pair(_server(), era="legacy") as (client, _):
        # Bypass the checks that normally stop this at creation time.
        await client.session._writer.queue(
            Notification("notifications/roots/list_changed", {"x": 1e999})
        )
        await client.session.request("ping")  # written after it: the writer lives
    assert "dropped a frame that cannot be written" in caplog.text


@pytest.mark.parametrize(
    ("reason", "sent"), [("the user left", "the user left"), ("the user left \ud800", None)]
)
async def test_a_cancel_reason_that_is_not_json_is_left_out(
    reason: str, sent: str | None, autojump_clock: trio.testing.MockClock
) -> None:
    async with open_client_with_raw_server() as (peer, client):
        with trio.CancelScope() as scope:

            async def cancel_once_written() -> None:
                await peer.wait_method("ping")
                scope.cancel(reason=reason)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(cancel_once_written)
                await client.session.request("ping")
        note = await peer.wait_method("notifications/cancelled")
        assert note["params"].get("reason") == sent
        [record] = [
            r
            for r in client.session.requests()
            if r.method == "ping" and r.direction is Direction.OUTBOUND
        ]
        assert record.state is RequestState.CANCELLED
        # The session goes on.
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.session.request, "ping")
            again = await peer.wait_for(
                lambda f: f.get("method") == "ping" and f["id"] != record.id
            )
            await peer.send({"jsonrpc": "2.0", "id": again["id"], "result": {}})


def test_not_json_is_a_local_protocol_error() -> None:
    # Code that catches LocalProtocolError for "not allowed now" must let this
    # one through explicitly (as Server.send_log does).
    assert issubclass(NotJSON, LocalProtocolError)
