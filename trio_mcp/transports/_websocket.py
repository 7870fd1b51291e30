"""WebSocket, a custom MCP transport (TR-03), on trio-websocket.

The contract (also in ``spec_notes/transports-websocket.md``):

* connection set-up: the client opens a WebSocket to the server's URL offering
  the subprotocol ``mcp``; the server accepts only that subprotocol (a
  handshake without it is rejected with HTTP 400) and validates ``Origin`` and
  ``Host`` exactly as the HTTP transports do (403 / 421 before accepting; a
  browser applies no CORS to WebSockets);
* framing: one JSON-RPC message per *text* frame, UTF-8 (TR-01); a binary frame
  closes the connection with 1003, invalid UTF-8 with 1007 (wsproto), a message
  over ``max_message_size`` with 1009;
* lifecycle and cancellation: as on stdio: the handshake-era lifecycle, and a
  request is cancelled with ``notifications/cancelled``; closing the socket ends
  the session (in-flight requests fail with "connection closed").

Cancellation:
    ``send``/``receive`` are trio-websocket calls (cancellable; a cancelled send
    may have written the frame or not, never part of it). ``aclose`` is bounded
    by trio-websocket's disconnect timeout.

Spec: TR-01, TR-03.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import trio
from trio_websocket import (
    ConnectionClosed,
    WebSocketConnection,
    WebSocketRequest,
    open_websocket_url,
)
from trio_websocket import serve_websocket as _serve_websocket

from ..protocol import DEFAULT_MAX_MESSAGE_SIZE
from ._http_common import OriginPolicy

if TYPE_CHECKING:
    from .._server import Server

#: The WebSocket subprotocol both sides must agree on.
SUBPROTOCOL = "mcp"
#: trio-websocket's limit is per message; leave room over the codec's own limit.
MAX_MESSAGE_SIZE = DEFAULT_MAX_MESSAGE_SIZE + 1024


class WebSocketTransport(trio.abc.Channel[bytes]):
    """A :data:`~trio_mcp.Transport` over one WebSocket connection (text frames)."""

    def __init__(self, ws: WebSocketConnection) -> None:
        self.ws = ws
        self._closed = False

    async def send(self, value: bytes) -> None:
        if self._closed:
            raise trio.ClosedResourceError("transport closed")
        try:
            await self.ws.send_message(bytes(value).decode("utf-8"))
        except ConnectionClosed as exc:
            raise trio.BrokenResourceError(f"WebSocket closed: {exc.reason}") from exc

    async def receive(self) -> bytes:
        if self._closed:
            raise trio.ClosedResourceError("transport closed")
        try:
            message = await self.ws.get_message()
        except ConnectionClosed as exc:
            reason = exc.reason
            if reason is None or reason.code in (1000, 1001):
                raise trio.EndOfChannel from exc
            raise trio.BrokenResourceError(f"WebSocket closed: {reason}") from exc
        if isinstance(message, bytes):
            # One JSON-RPC message per *text* frame: a binary frame breaks the
            # contract (1003 = unsupported data).
            await self.ws.aclose(1003, "MCP messages are text frames")
            raise trio.BrokenResourceError("peer sent a binary WebSocket frame")
        return message.encode("utf-8")

    async def aclose(self) -> None:
        if self._closed:
            await trio.lowlevel.checkpoint()
            return
        self._closed = True
        with trio.CancelScope(shield=True):
            await self.ws.aclose()
            # trio-websocket 0.12 leaves the TCP stream open when the peer closed
            # first (found by check_transport: a leaked socket); close it here.
            stream = getattr(self.ws, "_stream", None)
            if stream is not None:
                await stream.aclose()


async def serve_websocket(
    server: Server,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    allowed_hosts: Collection[str] | None = None,
    allowed_origins: Collection[str] | None = None,
    max_message_size: int = MAX_MESSAGE_SIZE,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
    **session_options: Any,
) -> None:
    """Serve *server* over WebSocket; ``task_status.started`` gets ``ws://host:port``.

    Each connection is one session. Handshakes with a refused Origin/Host or
    without the ``mcp`` subprotocol are rejected before any session exists.

    Cancellation: runs until cancelled; open sessions are then cancelled.
    """
    from .._server import serve_session

    policy = OriginPolicy(allowed_hosts=allowed_hosts, allowed_origins=allowed_origins)
    bound: list[tuple[str, int]] = []

    async def handler(request: WebSocketRequest) -> None:
        # wsproto keeps Host out of the extra headers: put it back for the check.
        event = request._event
        headers = [(b"host", event.host.encode("latin-1")), *request.headers]
        refusal = policy.check(headers, bound[0] if bound else None)
        if refusal is not None:
            await request.reject(refusal[0], body=refusal[1].encode())
            return
        if SUBPROTOCOL not in request.proposed_subprotocols:
            await request.reject(400, body=b"the 'mcp' WebSocket subprotocol is required")
            return
        ws = await request.accept(subprotocol=SUBPROTOCOL)
        await serve_session(server, WebSocketTransport(ws), **session_options)

    async def run(*, task_status: trio.TaskStatus[Any]) -> None:
        await _serve_websocket(
            handler,
            host,
            port,
            None,
            max_message_size=max_message_size,
            task_status=task_status,
        )

    async with trio.open_nursery() as nursery:
        ws_server = await nursery.start(run)
        actual = ws_server.port
        bound.append((host, actual))
        shown = f"[{host}]" if ":" in host else host
        task_status.started(f"ws://{shown}:{actual}")


@asynccontextmanager
async def open_websocket_transport(
    url: str,
    *,
    headers: dict[str, str] | None = None,
    max_message_size: int = MAX_MESSAGE_SIZE,
) -> AsyncIterator[WebSocketTransport]:
    """Open a WebSocket to *url* with the ``mcp`` subprotocol; yield the transport."""
    extra = [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    async with open_websocket_url(
        url, subprotocols=[SUBPROTOCOL], extra_headers=extra, max_message_size=max_message_size
    ) as ws:
        if ws.subprotocol != SUBPROTOCOL:
            await ws.aclose(1002, "the server did not accept the 'mcp' subprotocol")
            raise ConnectionError("the server did not accept the 'mcp' WebSocket subprotocol")
        transport = WebSocketTransport(ws)
        try:
            yield transport
        finally:
            await transport.aclose()


@asynccontextmanager
async def open_websocket_client(
    url: str, *, headers: dict[str, str] | None = None, **client_options: Any
) -> AsyncIterator[Any]:
    """Connect to an MCP WebSocket server, run the handshake, yield a :class:`~trio_mcp.Client`.

    Cancellation: as :func:`~trio_mcp.open_client`; the socket is closed on exit.
    """
    from .._client import open_client

    async with (
        open_websocket_transport(url, headers=headers) as transport,
        open_client(transport, **client_options) as client,
    ):
        yield client
