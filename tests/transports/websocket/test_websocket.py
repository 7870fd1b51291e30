"""WebSocket custom transport: checker, handshake refusals, a real client."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import trio
import trio.testing
from http_helpers import make_server
from trio_websocket import serve_websocket

from trio_mcp import open_websocket_client
from trio_mcp import serve_websocket as serve_mcp_websocket
from trio_mcp.testing import check_transport
from trio_mcp.transports._bounds import WEBSOCKET_MAX_MESSAGE_SIZE as MAX_MESSAGE_SIZE
from trio_mcp.transports._websocket import (
    WebSocketTransport,
    open_websocket_transport,
)


@asynccontextmanager
async def ws_pair() -> AsyncIterator[tuple[Any, Any]]:
    handed, receive = trio.open_memory_channel[WebSocketTransport](1)
    done = trio.Event()

    async def handler(request: Any) -> None:
        ws = await request.accept(subprotocol="mcp")
        await handed.send(WebSocketTransport(ws))
        await done.wait()

    async with trio.open_nursery() as nursery:
        server = await nursery.start(
            functools.partial(
                serve_websocket, handler, "127.0.0.1", 0, None, max_message_size=MAX_MESSAGE_SIZE
            )
        )
        async with open_websocket_transport(f"ws://127.0.0.1:{server.port}") as client:
            server_end = await receive.receive()
            yield client, server_end
            await server_end.aclose()
        done.set()
        # Let trio-websocket close the server's socket before the listener goes.
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()


@pytest.mark.spec("TR-03")
@pytest.mark.spec("TR-01")
async def test_websocket_transport_passes_check_transport() -> None:
    await check_transport(ws_pair)


@pytest.mark.spec("TR-03")
async def test_websocket_client_and_server() -> None:
    async with trio.open_nursery() as nursery:
        url = await nursery.start(
            lambda task_status: serve_mcp_websocket(make_server(), task_status=task_status)
        )
        async with open_websocket_client(url) as client:
            result = await client.call_tool("add", {"a": 20, "b": 22})
            assert result.structured_content == {"result": 42}
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize(
    ("subprotocol", "origin", "status"),
    [
        ("mcp", "http://evil.example", 403),
        ("mcp", "null", 403),
        ("other", None, 400),
    ],
)
async def test_websocket_handshake_refusals(
    subprotocol: str, origin: str | None, status: int
) -> None:
    # A raw upgrade request (trio-websocket's own client leaks its socket when
    # rejected, which the test's warning filter would report).
    async with trio.open_nursery() as nursery:
        url = await nursery.start(
            lambda task_status: serve_mcp_websocket(make_server(), task_status=task_status)
        )
        headers = {
            "connection": "Upgrade",
            "upgrade": "websocket",
            "sec-websocket-version": "13",
            "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
            "sec-websocket-protocol": subprotocol,
        }
        if origin is not None:
            headers["origin"] = origin
        async with httpx.AsyncClient() as http:
            response = await http.get(url.replace("ws://", "http://"), headers=headers)
        assert response.status_code == status
        nursery.cancel_scope.cancel()
