"""``Server(lifespan=..., session_lifespan=...)``: entered once per process and
once per session, in order with the task runner, their values in handlers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from trio_mcp import Context, Server
from trio_mcp._server._lifespan import NotServing
from trio_mcp.testing import open_memory_client


def recording_server(events: list[str]) -> Server:
    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[dict[str, Any]]:
        events.append(f"enter {server.name}")
        try:
            yield {"pool": "db"}
        finally:
            events.append("exit")

    @asynccontextmanager
    async def session_lifespan(session: Any) -> AsyncIterator[str]:
        events.append("session enter")
        try:
            yield f"session of {id(session)}"
        finally:
            events.append("session exit")

    server = Server("life", lifespan=lifespan, session_lifespan=session_lifespan)

    @server.tool()
    async def state(ctx: Context) -> list[Any]:
        return [ctx.lifespan["pool"], ctx.session_state.startswith("session of ")]

    return server


async def test_the_lifespan_is_entered_once_for_many_sessions() -> None:
    events: list[str] = []
    server = recording_server(events)
    async with server.running():
        assert server.lifespan_state == {"pool": "db"}
        for _ in range(2):
            async with open_memory_client(server, protocol_version="2025-11-25") as client:
                result = await client.call_tool("state", {})
                assert result.structured_content == {"result": ["db", True]}
    assert events == [
        "enter life",
        *["session enter", "session exit"] * 2,
        "exit",
    ]
    with pytest.raises(NotServing, match="not entered"):
        _ = server.lifespan_state


async def test_a_session_served_on_its_own_enters_the_lifespan() -> None:
    events: list[str] = []
    server = recording_server(events)
    async with open_memory_client(server, protocol_version="2026-07-28") as client:
        result = await client.call_tool("state", {})
        assert result.structured_content == {"result": ["db", True]}
    assert events == ["enter life", "session enter", "session exit", "exit"]


async def test_tasks_are_cancelled_before_the_lifespan_is_left() -> None:
    """A task still working when the server stops ends while the lifespan's
    value (a pool it uses) is still open."""
    events: list[str] = []
    server = recording_server(events)
    started = trio.Event()

    @server.tool(task_support="optional")
    async def forever(ctx: Context) -> None:
        started.set()
        try:
            await trio.sleep_forever()
        finally:
            events.append(f"task ends with the pool {ctx.lifespan['pool']}")

    async with (
        server.running(),
        open_memory_client(server, protocol_version="2025-11-25") as client,
    ):
        await client.call_tool("forever", {}, as_task=True)
        with trio.fail_after(5):
            await started.wait()
    assert events[-2:] == ["task ends with the pool db", "exit"]


async def test_running_twice_is_refused() -> None:
    server = Server("once")
    async with server.running():
        with pytest.raises(RuntimeError, match="already running"):
            async with server.running():
                pass
        async with server.serving():  # an inner entry point shares it
            assert server.lifespan_state is None
