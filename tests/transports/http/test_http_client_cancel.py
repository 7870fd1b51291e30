"""A cancel never stalls the HTTP client's other traffic (issue 19, part 2).

The server is our ASGI application, run in-process behind an httpx transport
that streams both ways and, as Node's ``http`` module does, holds a response's
head back until its first body byte: a POST's headers arrive only with its
answer. No sockets, so the autojump clock is exact: "no virtual time passes"
means nothing waited on a timer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest
import trio
import trio.testing
from http_helpers import http_transport_of, start_asgi

from trio_mcp import Server, http_app, open_http_client
from trio_mcp.lowlevel import Identity, open_session
from trio_mcp.protocol import Connection
from trio_mcp.transports._http.server._app import StreamableHTTPApp
from trio_mcp.transports._http.server._asgi import ASGIApp, Message
from trio_mcp.transports._http.server._transport import HttpServerTransport

URL = "http://127.0.0.1:8000/mcp"
#: open_http_client's default bound on waiting for a cancelled call's POST head.
CLOSE_TIMEOUT = 2.0


class _Body(httpx.AsyncByteStream):
    """The body of one bridged response; closing it is the client leaving."""

    def __init__(self, first: Message | None, messages: trio.MemoryReceiveChannel[Message]) -> None:
        self.first = first
        self.messages = messages
        self.closed = trio.Event()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        message = self.first
        self.first = None
        while True:
            if message is None:
                try:
                    message = await self.messages.receive()
                except trio.EndOfChannel:
                    return
            if message["type"] == "http.response.body":
                if message.get("body"):
                    yield message["body"]
                if not message.get("more_body", False):
                    return
            message = None

    async def aclose(self) -> None:
        self.closed.set()
        await trio.lowlevel.checkpoint()


class HeadHoldingBridge(httpx.AsyncBaseTransport):
    """httpx requests answered by an ASGI app in this process, streamed, with each
    response head held back until the response's first body byte (or its end)."""

    def __init__(self, app: ASGIApp, nursery: trio.Nursery) -> None:
        self.app = app
        self.nursery = nursery
        #: When each request's connection closed (the client left or was done).
        self.disconnects: list[float] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        content = await request.aread()
        out_receive, gone = start_asgi(self.app, self.nursery, request, content)
        try:
            start = await out_receive.receive()
            first: Message | None = None
            while first is None:  # hold the head until the first body byte
                message = await out_receive.receive()
                if message.get("body") or not message.get("more_body", False):
                    first = message
        except BaseException:
            self._leave(gone)
            raise
        body = _Body(first, out_receive)
        self.nursery.start_soon(self._watch, body, gone)
        headers = [(k, v) for k, v in start.get("headers", [])]
        return httpx.Response(start["status"], headers=headers, stream=body)

    async def _watch(self, body: _Body, gone: trio.Event) -> None:
        await body.closed.wait()
        self._leave(gone)

    def _leave(self, gone: trio.Event) -> None:
        if not gone.is_set():
            self.disconnects.append(trio.current_time())
            gone.set()


def slow_server(started: trio.Event, stopped: list[float], halted: trio.Event) -> Server:
    server = Server("slow", version="1.0")

    @server.tool()
    async def slow() -> str:
        """Run until cancelled."""
        started.set()
        try:
            await halted.wait()  # only the handler's own cancel sets it
        finally:
            stopped.append(trio.current_time())
            halted.set()
        return "never"

    return server


class _Replayed(trio.abc.Channel[bytes]):
    """A transport whose first frame was already read: it is received again first."""

    def __init__(self, first: bytes, transport: HttpServerTransport) -> None:
        self.first: bytes | None = first
        self.transport = transport

    async def send(self, value: bytes) -> None:
        await self.transport.send(value)

    async def receive(self) -> bytes:
        if self.first is None:
            return await self.transport.receive()
        first, self.first = self.first, None
        await trio.lowlevel.checkpoint()
        return first

    async def aclose(self) -> None:
        await self.transport.aclose()


def sessionless_app(server: Server) -> StreamableHTTPApp:
    """A stateless server as other SDKs serve one: every POST is a fresh server
    instance, and a POST of ``initialize`` is answered like any request (no
    ``Mcp-Session-Id``), so a handshake-era client can connect."""

    async def handler(transport: HttpServerTransport, *, identity: Identity) -> None:
        first = await transport.receive()

        def protocol(**settings: Any) -> Connection:
            connection = server.make_protocol(**settings)
            if orjson.loads(first).get("method") != "initialize":
                connection.start_stateless("2025-11-25")
            return connection

        async with open_session(
            _Replayed(first, transport), protocol, server, identity=identity
        ) as session:
            await session.wait_closed()

    return StreamableHTTPApp(transport_handler=handler, stateless=True)


async def cancel_then_ping(stateless: bool) -> tuple[float, float, list[float], list[float]]:
    """Cancel a running call, then ping: (time of the cancel, time of the pong,
    when the handler stopped, when connections closed after the cancel)."""
    started = trio.Event()
    stopped: list[float] = []
    halted = trio.Event()
    server = slow_server(started, stopped, halted)
    app = sessionless_app(server) if stateless else http_app(server)
    async with app.run(), trio.open_nursery() as nursery:
        bridge = HeadHoldingBridge(app, nursery)
        http = httpx.AsyncClient(transport=bridge)
        async with http, open_http_client(URL, http_client=http, era="legacy") as client:
            assert (http_transport_of(client).session_id is None) == stateless
            call_scope = trio.CancelScope()
            nursery.start_soon(_call, client, call_scope)
            await started.wait()
            before = len(bridge.disconnects)
            cancelled_at = trio.current_time()
            call_scope.cancel()
            # The session has sent the cancel (the transport holds it, or it
            # holds up the session's writer) before the ping is queued.
            await trio.testing.wait_all_tasks_blocked()
            await client.ping()
            ponged_at = trio.current_time()
            closed = bridge.disconnects[before:]
            with trio.fail_after(CLOSE_TIMEOUT + 1):
                await halted.wait()
        nursery.cancel_scope.cancel()
    return cancelled_at, ponged_at, stopped, closed


async def _call(client: Any, scope: trio.CancelScope) -> None:
    with scope:
        await client.call_tool("slow", {})


@pytest.mark.spec("HT-05")
async def test_a_cancel_does_not_hold_up_the_next_message(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """With sessions: the cancelled call's POST has no head yet (the server
    holds it until the answer), and the ping behind the cancel is answered
    without any time passing. The cancel itself waits for that head, so as
    never to overtake its request, at most ``close_timeout``: then the
    server's handler stops."""
    cancelled_at, ponged_at, stopped, _ = await cancel_then_ping(stateless=False)
    assert ponged_at == cancelled_at
    assert stopped == [cancelled_at + CLOSE_TIMEOUT]


@pytest.mark.spec("HT-05")
async def test_on_a_server_without_sessions_a_cancel_closes_the_call_stream(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Without sessions the POST's response stream is the request: cancelling
    closes it at once, which stops the handler there in the same instant."""
    cancelled_at, ponged_at, stopped, closed = await cancel_then_ping(stateless=True)
    assert ponged_at == cancelled_at
    assert closed
    assert closed[0] == cancelled_at
    assert stopped == [cancelled_at]
