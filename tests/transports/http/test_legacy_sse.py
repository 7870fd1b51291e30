"""The 2024-11-05 HTTP+SSE transport over real loopback sockets (port 0).

Our client (falling back from Streamable HTTP) against our legacy server: the
transport checker passes both ways; an ended, unknown or missing session id is
refused; the session ends with its SSE stream.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import orjson
import pytest
import trio
from http_helpers import LATEST, init_body, legacy_sse_stream, make_server, raw_client, running

import trio_mcp
from trio_mcp import http_app, open_http_client
from trio_mcp.lowlevel import Identity
from trio_mcp.testing import check_transport
from trio_mcp.transports._http.client._transport import HttpClientTransport
from trio_mcp.transports._http.server._app import StreamableHTTPApp
from trio_mcp.transports._http.server._transport import HttpServerTransport


@asynccontextmanager
async def legacy_transport_pair(*, client_first: bool = True) -> AsyncIterator[tuple[Any, Any]]:
    """A connected (client, server) pair over the legacy transport, for check_transport.

    The client POSTs ``initialize`` to the SSE URL, is refused (405) and falls
    back (SS-08): GET, ``endpoint`` event, POST to the endpoint. The server end
    is the raw :class:`HttpServerTransport` of the legacy session.
    """
    handed: trio.MemorySendChannel[HttpServerTransport]
    handed, receive_handed = trio.open_memory_channel[HttpServerTransport](1)

    async def handler(transport: HttpServerTransport, *, identity: Identity) -> None:
        await handed.send(transport)
        await transport.wait_closed()

    app = StreamableHTTPApp(transport_handler=handler)
    async with running(app) as (url, _), trio.open_nursery() as nursery:
        http = httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None))
        client = HttpClientTransport(url + "/sse", http, nursery)
        await client.send(init_body())
        server = await receive_handed.receive()
        assert orjson.loads(await server.receive())["method"] == "initialize"
        assert client.legacy_endpoint is not None
        assert client.legacy_endpoint.startswith(url + "/messages/?session_id=")
        try:
            yield (client, server) if client_first else (server, client)
        finally:
            await client.aclose()
            await server.aclose()
            await http.aclose()
            nursery.cancel_scope.cancel()


@pytest.mark.spec("SS-02")
@pytest.mark.spec("SS-04")
@pytest.mark.spec("SS-05")
@pytest.mark.parametrize("client_first", [True, False])
async def test_legacy_sse_passes_check_transport(client_first: bool) -> None:
    await check_transport(functools.partial(legacy_transport_pair, client_first=client_first))


@pytest.mark.spec("SS-03")
@pytest.mark.spec("SEC-07")
async def test_ended_unknown_and_missing_legacy_sessions_are_refused() -> None:
    json_type = {"content-type": "application/json"}
    async with running(make_server()) as (url, app), raw_client(url) as http:
        async with legacy_sse_stream(url) as (stream, endpoint, seen):
            assert seen.startswith(b"HTTP/1.1 200")
            assert b"content-type: text/event-stream" in seen.lower()
            assert endpoint.startswith("/messages/?session_id=")
            (server_end,) = app.sessions().values()
            # The session works: initialize is answered on the stream.
            answer = await http.post(endpoint, content=init_body(), headers=json_type)
            assert answer.status_code == 202
            with trio.fail_after(10):
                while b"protocolVersion" not in seen:
                    seen += await stream.receive_some()
            assert b"event: message" in seen
            assert f'"protocolVersion":"{LATEST}"'.encode() in seen
        # The client went away: the session ends with its stream, and its id
        # is refused from then on.
        with trio.fail_after(10):
            await server_end.wait_closed()
        note = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
        ended = await http.post(endpoint, content=note, headers=json_type)
        assert ended.status_code == 404
        assert ended.json()["error"]["code"] == -32600
        assert app.session_count == 0
        unknown = await http.post("/messages/?session_id=nope", content=note, headers=json_type)
        assert unknown.status_code == 404
        missing = await http.post("/messages/", content=note, headers=json_type)
        assert missing.status_code == 400
        # Refusals allocated nothing.
        assert app.session_count == 0


async def test_legacy_session_ended_by_the_server_ends_the_client() -> None:
    app = http_app(make_server(), path="/other")
    async with running(app) as (url, _):
        async with open_http_client(url + "/sse") as client:
            assert (await client.call_tool("add", {"a": 1, "b": 2})).structured_content == {
                "result": 3
            }
            (server_end,) = app.sessions().values()
            server_end.peer_closed()
            with trio.fail_after(10):
                await client.session.wait_closed()
            with pytest.raises(trio_mcp.SessionClosed, match=r"(?i)closed"):
                await client.call_tool("add", {"a": 1, "b": 2})
        assert app.session_count == 0
