"""logging/setLevel + notifications/message, and pagination of every list method."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from helpers import settle
from server_helpers import error_code, everything, open_raw

from trio_mcp import Context, Server
from trio_mcp.testing import open_memory_client


def _logging_server() -> Server:
    server = Server("logs")

    @server.tool()
    async def shout(ctx: Context) -> str:
        for level in ("debug", "info", "warning", "error"):
            await ctx.log(level, {"level": level, "n": [1, 2]}, logger="app.db")
        return "ok"

    return server


@pytest.mark.spec("LG-01")
@pytest.mark.spec("LG-02")
@pytest.mark.spec("LG-04")
async def test_log_messages_with_structured_data_and_logger_names() -> None:
    server = _logging_server()
    assert server.capabilities()["logging"] == {}
    async with open_raw(server) as (peer, _):
        await peer.request("tools/call", {"name": "shout"})
        messages = [
            f["params"] for f in peer.unread() if f.get("method") == "notifications/message"
        ]
    # Before any setLevel, everything is sent (LG-04).
    assert messages == [
        {"level": level, "logger": "app.db", "data": {"level": level, "n": [1, 2]}}
        for level in ("debug", "info", "warning", "error")
    ]


@pytest.mark.spec("LG-03")
async def test_set_level_filters_per_session() -> None:
    server = _logging_server()
    async with open_raw(server) as (filtered, _), open_raw(server) as (chatty, _):
        assert (await filtered.request("logging/setLevel", {"level": "warning"}))["result"] == {}
        await filtered.request("tools/call", {"name": "shout"})
        await chatty.request("tools/call", {"name": "shout"})
        levels = [f["params"]["level"] for f in filtered.unread() if f.get("method")]
        assert levels == ["warning", "error"]
        assert len([f for f in chatty.unread() if f.get("method")]) == 4


@pytest.mark.spec("LG-05")
async def test_invalid_level_is_32602_and_no_logging_capability_means_no_messages() -> None:
    async with open_raw(_logging_server()) as (peer, _):
        assert error_code(await peer.request("logging/setLevel", {"level": "loud"})) == -32602
        assert "result" in await peer.request("logging/setLevel", {"level": "error"})
    silent = _logging_server()
    silent.logging = False
    async with open_raw(silent) as (peer, _):
        assert error_code(await peer.request("logging/setLevel", {"level": "info"})) == -32601
        await peer.request("tools/call", {"name": "shout"})
        await settle()
        assert [f for f in peer.unread() if f.get("method")] == []


async def test_our_client_receives_log_messages(autojump_clock: trio.testing.MockClock) -> None:
    received: list[object] = []
    async with open_memory_client(
        everything(), log_handler=lambda params: received.append(params.data)
    ) as client:
        await client.set_logging_level("info")
        await client.call_tool("slow", {"steps": 2})
        await settle()
    assert received == [{"step": 1, "of": 2}, {"step": 2, "of": 2}]


@pytest.mark.spec("PA-01")
@pytest.mark.spec("PA-03")
async def test_every_list_method_paginates() -> None:
    server = everything(page_size=3)
    async with open_raw(server) as (peer, _):
        for method, key in [
            ("tools/list", "tools"),
            ("resources/list", "resources"),
            ("resources/templates/list", "resourceTemplates"),
            ("prompts/list", "prompts"),
        ]:
            items, cursor, pages = [], None, 0
            while True:
                reply = await peer.request(method, {"cursor": cursor} if cursor else None)
                result = reply["result"]
                assert len(result[key]) <= 3
                items += result[key]
                pages += 1
                cursor = result.get("nextCursor")
                if cursor is None:
                    break
            unpaged = everything(page_size=None)
            by_key: dict[str, Any] = {
                "tools": unpaged._tools,
                "resources": unpaged._resources,
                "resourceTemplates": unpaged._templates,
                "prompts": unpaged._prompts,
            }
            expected = by_key[key]
            assert len(items) == len(expected), method
            assert pages == -(-len(expected) // 3)


@pytest.mark.spec("PA-06")
async def test_invalid_cursors_are_32602() -> None:
    async with open_raw(everything(page_size=3)) as (peer, _):
        first = (await peer.request("tools/list"))["result"]["nextCursor"]
        for cursor in ["garbage!", "", first + "x", "dG9vbHM6OTk5"]:  # the last: tools:999
            assert error_code(await peer.request("tools/list", {"cursor": cursor})) == -32602
        # A tools cursor is not a prompts cursor.
        assert error_code(await peer.request("prompts/list", {"cursor": first})) == -32602
        assert "result" in await peer.request("tools/list", {"cursor": first})
