"""WebSocket, a custom MCP transport (TR-03), on trio-websocket.

The contract (also in ``spec_notes/transports-websocket.md``):

* connection set-up: the client opens a WebSocket to the server's URL offering
  the subprotocol ``mcp``; the server accepts only that subprotocol (a
  handshake without it is rejected with HTTP 400) and validates ``Origin`` and
  ``Host`` exactly as the HTTP transports do (403 / 421 before accepting; a
  browser applies no CORS to WebSockets);
* framing: one JSON-RPC message per *text* frame, UTF-8 (TR-01); a binary frame
  closes the connection with 1003, invalid UTF-8 with 1007, a message over
  ``max_message_size`` (16 MiB + 1 KiB of room over the codec's bound by
  default; a message is buffered whole up to it, so it is the memory one frame
  may take): on the server, such a message from the client is kept only by its
  first and last 4 KiB and refused by the session with the id read from them
  (-32600), and the connection goes on; on the client, such a message from the
  server is kept the same way and fails the call whose id it carries
  (``ResponseTooLarge``, as soon as the head names the id), and the connection
  goes on. Either end drains such a message up to 4x the bound (1 MiB at least;
  64 MiB + 4 KiB by default), past which it closes with 1009 and a reason naming
  the sizes, without reading the rest: the session ends as on any disconnect
  (the server's running requests are cancelled, the client's calls fail at
  once). So a message over the bound costs 8 KiB of memory whatever its size,
  and at most the drain limit in bytes read;
* lifecycle and cancellation: as on stdio: the handshake-era lifecycle, and a
  request is cancelled with ``notifications/cancelled``; closing the socket ends
  the session (in-flight requests fail with "connection closed").

Bounds (reliability W-06, W-08): a connection that has not completed its
opening handshake within ``handshake_timeout`` (10 s) is closed; closing waits
at most ``close_timeout`` (5 s) for the peer's answer to our close frame, then
drops the TCP connection, so a peer that stopped reading (or answering) never
holds a session, nor the server's shutdown, open. A dead peer is noticed by the
session's optional keepalive (``keepalive_interval=``, MCP pings). Whatever
fails on one connection ends that connection only (W-07).

Cancellation:
    ``send``/``receive`` are trio-websocket calls (cancellable; a cancelled send
    may have written the frame or not, never part of it). ``aclose`` is
    shielded and bounded by ``close_timeout``.

Spec: TR-01, TR-03.
"""

from __future__ import annotations

import contextlib
import logging
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from contextlib import asynccontextmanager
from typing import Any, NoReturn, cast

import trio
from trio_websocket import (
    CloseReason,
    ConnectionClosed,
    ConnectionTimeout,
    HandshakeError,
    WebSocketConnection,
    WebSocketRequest,
)
from trio_websocket._impl import CONN_TIMEOUT, _url_to_host
from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import BytesMessage, CloseConnection, TextMessage

from .._transport import Network
from ..protocol._head import HEAD_SCAN_SIZE, TAIL_SCAN_SIZE, OversizeFrame, scan_frame
from ._bounds import (
    CLOSE_TIMEOUT,
    HANDSHAKE_TIMEOUT,
    WEBSOCKET_DRAIN_FACTOR,
    WEBSOCKET_MAX_MESSAGE_SIZE,
    websocket_drain_limit,
)
from ._http._common import OriginPolicy, is_loopback_host

logger = logging.getLogger("trio_mcp.websocket")

#: The WebSocket subprotocol both sides must agree on.
SUBPROTOCOL = "mcp"


class WebSocketTransport(trio.abc.Channel[bytes]):
    """A :data:`~trio_mcp.lowlevel.Transport` over one WebSocket connection (text frames).

    *close_timeout* bounds the closing handshake: after that long without the
    peer's close frame, the TCP connection is dropped.

    Cancellation:
        As the transport contract: ``send`` cancelled while it writes may leave
        part of a WebSocket frame on the wire, after which the connection is
        broken; ``aclose`` is shielded and bounded by *close_timeout*.
    """

    def __init__(self, ws: WebSocketConnection, *, close_timeout: float = CLOSE_TIMEOUT) -> None:
        self.ws = ws
        self.close_timeout = close_timeout
        self._closed = False

    @property
    def network(self) -> Network:
        """TCP and WebSocket (:class:`~trio_mcp.lowlevel.NetworkTransport`)."""
        return Network("tcp", "websocket")

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
        if type(message) is OversizeFrame:
            return message  # a text message over the bound, refused by the session
        if isinstance(message, bytes):
            # One JSON-RPC message per *text* frame: a binary frame breaks the
            # contract (1003 = unsupported data).
            await self._close(1003, "MCP messages are text frames")
            raise trio.BrokenResourceError("peer sent a binary WebSocket frame")
        return message.encode("utf-8")

    async def aclose(self) -> None:
        if self._closed:
            await trio.lowlevel.checkpoint()
            return
        self._closed = True
        await self._close(1000, None)

    async def _close(self, code: int, reason: str | None) -> None:
        """Close frame, the peer's answer (bounded), then the TCP stream; shielded.

        trio-websocket's ``aclose`` waits for the peer's close frame without a
        bound: a peer that stopped reading would hold it (and, shielded, the
        session's and the server's shutdown) forever (reliability W-06).
        Cancelled by the bound, it closes its stream itself.
        """
        with trio.CancelScope(shield=True):
            with trio.move_on_after(self.close_timeout):
                await self.ws.aclose(code, reason)
            # trio-websocket 0.12 leaves the TCP stream open when the peer closed
            # first (found by check_transport: a leaked socket); close it here.
            stream = getattr(self.ws, "_stream", None)
            if stream is not None:
                await stream.aclose()


class _OversizeConnection(WebSocketConnection):
    """trio-websocket's connection, refusing an oversize text message without
    buffering it and without closing the connection.

    A text message over ``max_message_size`` (counted as trio-websocket counts,
    in characters) is not buffered whole, nor does it close the connection with
    1009 as trio-websocket would: only the first and last 4 KiB of it are kept
    while the rest of its fragments arrive, and it is handed on as an
    :class:`~trio_mcp.protocol._head.OversizeFrame`, which the session refuses by
    size with the id read from those ends; the connection goes on.

    ``_early``: hand the marker on as soon as the head names the id (the call it
    answers fails at once, the client's way, as ``read_json`` does over HTTP),
    then drop the rest of the message. *drain_limit*: a message still going
    past this many bytes (UTF-8) closes the connection with 1009, unread past
    that (a peer could otherwise stream one endless message at us).
    Memory either way: 8 KiB per connection, whatever the message's size.
    """

    _oversize: _Oversize | None = None
    _early: bool = False

    def __init__(self, *args: Any, drain_limit: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._drain_limit = drain_limit

    async def _handle_message_event(self, event: BytesMessage | TextMessage) -> None:
        over = self._oversize
        if isinstance(event, TextMessage) and (
            over is not None or self._message_size + len(event.data) > self._max_message_size
        ):
            if over is None:
                over = self._oversize = _Oversize()
                # Part by part, not joined: no second copy of what was buffered.
                parts = cast("list[str]", self._message_parts)
                self._message_parts = []
                self._message_size = 0
                for part in parts:
                    over.keep(part.encode("utf-8", "surrogatepass"))
                del parts
            over.keep(event.data.encode("utf-8", "surrogatepass"))
            if over.size > self._drain_limit:
                await self._too_big(over.size)
                return
            marker: OversizeFrame | None = None
            if event.message_finished:
                self._oversize = None
                if not over.handed:
                    marker = over.frame(self._max_message_size)
            elif self._early and not over.handed and len(over.head) > over.scanned:
                # Scanned again only while the head grows (it is at most 4 KiB).
                over.scanned = len(over.head)
                if scan_frame(bytes(over.head), b"", over.size + 1) is not None:
                    # Only the head: "at least" this size, the rest is dropped unread.
                    marker = OversizeFrame(bytes(over.head), over.size, self._max_message_size)
            if marker is not None:
                over.handed = True
                with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError):
                    await self._send_channel.send(marker)
            return
        await super()._handle_message_event(event)

    async def _too_big(self, size: int) -> None:
        """Close with 1009 as trio-websocket does for a message over its bound:
        close frame, no more messages (``get_message`` raises ``ConnectionClosed``
        with this reason), the reader stops.

        Raises ``ConnectionClosed``, which ends the reader's loop at once: the
        events wsproto already parsed from the last read are not handled (else
        they would be buffered as a new message after the close).
        """
        self._oversize = None
        reason = (
            f"Message of over {size} bytes exceeds the drain limit of {self._drain_limit} bytes"
            f" ({WEBSOCKET_DRAIN_FACTOR}x the bound of {self._max_message_size})"
        )[:123]  # a close reason's limit; ~110 ASCII bytes with 12-digit sizes
        self._close_reason = CloseReason(1009, reason)
        with contextlib.suppress(ConnectionClosed):
            await self._send(CloseConnection(code=1009, reason=reason))
        await self._recv_channel.aclose()
        self._reader_running = False
        raise ConnectionClosed(self._close_reason)


class _Oversize:
    """The kept ends of one oversize message, and its size so far (UTF-8 bytes)."""

    __slots__ = ("handed", "head", "scanned", "size", "tail")

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.size = 0
        self.handed = False  # its marker went to the session already
        self.scanned = 0  # bytes of the head scan_frame has seen

    def keep(self, piece: bytes) -> None:
        """Count *piece* and keep the message's first and last 4 KiB."""
        self.size += len(piece)
        if self.handed:
            return  # the rest of a message refused by its head
        if len(self.head) < HEAD_SCAN_SIZE:
            self.head += piece[: HEAD_SCAN_SIZE - len(self.head)]
        self.tail += piece[-TAIL_SCAN_SIZE:]
        del self.tail[: max(0, len(self.tail) - TAIL_SCAN_SIZE)]

    def frame(self, limit: int) -> OversizeFrame:
        return OversizeFrame(bytes(self.head), self.size, limit, bytes(self.tail))


class _ServerConnection(_OversizeConnection):
    """trio-websocket's server connection, telling the peer why a frame was refused,
    and refusing an oversize message without closing the connection
    (:class:`_OversizeConnection`, the marker when the message ends), up to the
    drain limit, past which it closes with 1009 as the client does.

    wsproto turns a frame it refuses (invalid UTF-8 in a text frame: 1007, a
    protocol violation: 1002) into a close event as if the peer had sent one;
    trio-websocket 0.12 then drops the TCP connection without a close frame, so
    the peer saw only an abnormal closure (1006). Here the close frame with
    wsproto's code goes out first (reliability W-05).
    """

    async def _handle_close_connection_event(self, event: CloseConnection) -> None:
        # A close frame from the peer moved wsproto out of OPEN before this
        # event was made; still OPEN means wsproto made the event itself.
        if self._wsproto.state is ConnectionState.OPEN:
            with contextlib.suppress(ConnectionClosed):
                await self._send(CloseConnection(code=event.code, reason=event.reason))
        await super()._handle_close_connection_event(event)


class _ClientConnection(_OversizeConnection):
    """trio-websocket's client connection, failing the call an oversize response
    answers at once and going on, as the stdio and HTTP clients do.

    trio-websocket's client closes with 1009 at its ``max_message_size``; here that size
    is the session's bound, over which a message is kept only by its ends
    (:class:`_OversizeConnection`, ``_early``). A message still going past four times
    the bound (1 MiB at least) is not drained further: 1009 closes the connection, and
    the session's calls fail with that reason.
    """

    _early = True


#: Runs one session over an accepted WebSocket, until the session ends.
WebSocketHandler = Callable[[WebSocketTransport], Awaitable[None]]


class _Acceptor:
    """Serves one accepted connection: the handshake (bounded), checks, the handler.

    Cancellation: cancelling a connection's task closes it (bounded).
    """

    def __init__(
        self,
        handler: WebSocketHandler,
        policy: OriginPolicy,
        bound: tuple[str, int],
        *,
        max_message_size: int,
        handshake_timeout: float,
        close_timeout: float,
    ) -> None:
        self.handler = handler
        self.policy = policy
        self.bound = bound
        self.max_message_size = max_message_size
        self.handshake_timeout = handshake_timeout
        self.close_timeout = close_timeout

    async def __call__(self, stream: trio.abc.Stream) -> None:
        """Serve *stream*; whatever goes wrong ends this connection only.

        A peer that resets while its handshake is answered makes trio-websocket
        raise ``ConnectionClosed``; that, or a failing session, used to escape
        into the listener's nursery and stop the whole server (reliability
        W-07). Logged instead: the peer leaving at DEBUG, anything else at
        ERROR, as the HTTP server does (``StreamableHTTPApp._run_session``).
        """
        try:
            await self._connection(stream)
        except* ConnectionClosed:
            logger.debug("a WebSocket peer left during its handshake")
        except* Exception as failure:
            logger.error(
                "a WebSocket connection failed and was closed; serving goes on", exc_info=failure
            )

    async def _connection(self, stream: trio.abc.Stream) -> None:
        # trio-websocket's own serve loop, with _ServerConnection and our bounds.
        async with trio.open_nursery() as nursery:
            connection = _ServerConnection(
                stream,
                WSConnection(ConnectionType.SERVER),
                max_message_size=self.max_message_size,
                drain_limit=websocket_drain_limit(self.max_message_size),
            )
            nursery.start_soon(connection._reader_task)
            request: WebSocketRequest | None = None
            with trio.move_on_after(self.handshake_timeout):
                request = await connection._get_request()
            try:
                if request is not None:
                    await self._serve(request)
            finally:
                with trio.CancelScope(shield=True):
                    with trio.move_on_after(self.close_timeout):
                        await connection.aclose()
                    await stream.aclose()
                nursery.cancel_scope.cancel()

    async def _serve(self, request: WebSocketRequest) -> None:
        # wsproto keeps Host out of the extra headers: put it back for the check.
        event = request._event
        headers = [(b"host", event.host.encode("latin-1")), *request.headers]
        refusal = self.policy.check(headers, self.bound)
        if refusal is not None:
            await request.reject(refusal[0], body=refusal[1].encode())
            return
        if SUBPROTOCOL not in request.proposed_subprotocols:
            await request.reject(400, body=b"the 'mcp' WebSocket subprotocol is required")
            return
        ws = await request.accept(subprotocol=SUBPROTOCOL)
        transport = WebSocketTransport(ws, close_timeout=self.close_timeout)
        await self.handler(transport)


async def serve_websocket_transports(
    handler: WebSocketHandler,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    allowed_hosts: Collection[str] | None = None,
    allowed_origins: Collection[str] | None = None,
    max_message_size: int = WEBSOCKET_MAX_MESSAGE_SIZE,
    handshake_timeout: float = HANDSHAKE_TIMEOUT,
    close_timeout: float = CLOSE_TIMEOUT,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Accept WebSocket connections; ``task_status.started`` gets ``ws://host:port``.

    Each accepted connection is one :class:`WebSocketTransport`, handed to
    *handler* (``trio_mcp.serve_websocket`` serves a ``Server`` with it) and
    closed when the handler returns. Handshakes with a refused Origin/Host or
    without the ``mcp`` subprotocol are rejected before any session exists; a
    connection that has not sent a complete handshake within
    *handshake_timeout* seconds is closed. *close_timeout*: see
    :class:`WebSocketTransport`. A warning is logged when binding a
    non-loopback address without an explicit ``allowed_hosts``. Whatever a
    handler raises ends its own connection only (logged).

    *max_message_size* (characters, as trio-websocket counts) is the memory one
    connection's incoming message may take: a message up to it is buffered whole
    (16 MiB + 1 KiB by default). A message over it is kept by its first and last 4 KiB only and
    refused with the id they name (-32600), the connection going on; one still going
    past four times the bound (1 MiB at least; 64 MiB + 4 KiB by default) is read no
    further: the connection is closed with 1009 and its session ends as on any
    disconnect (its running requests are cancelled). The other connections go on.

    Cancellation: runs until cancelled; the handlers are then cancelled.
    """
    policy = OriginPolicy(allowed_hosts=allowed_hosts, allowed_origins=allowed_origins)
    if not is_loopback_host(host) and allowed_hosts is None:
        logger.warning("binding %s without allowed_hosts: Host is not validated", host)
    listeners = await trio.open_tcp_listeners(port, host=host)
    actual = listeners[0].socket.getsockname()[1]
    acceptor = _Acceptor(
        handler,
        policy,
        (host, actual),
        max_message_size=max_message_size,
        handshake_timeout=handshake_timeout,
        close_timeout=close_timeout,
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(trio.serve_listeners, acceptor, listeners)
        shown = f"[{host}]" if ":" in host else host
        task_status.started(f"ws://{shown}:{actual}")


@asynccontextmanager
async def open_websocket_transport(
    url: str,
    *,
    headers: dict[str, str] | None = None,
    max_message_size: int = WEBSOCKET_MAX_MESSAGE_SIZE,
) -> AsyncIterator[WebSocketTransport]:
    """Open a WebSocket to *url* with the ``mcp`` subprotocol; yield the transport.

    A message from the server over *max_message_size* is refused by the session with the
    id its ends name (the call it answers fails at once with
    :class:`~trio_mcp.ResponseTooLarge`) and the connection goes on; one going past four
    times that (1 MiB at least) closes it with 1009 (:class:`_ClientConnection`).

    Cancellation:
        Cancelled while connecting, nothing is left open. Leaving the block,
        also by cancellation, closes the transport (shielded, bounded by its
        ``close_timeout``).
    """
    extra = [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    drain_limit = websocket_drain_limit(max_message_size)
    async with _client_connection(url, extra, max_message_size, drain_limit) as ws:
        transport = WebSocketTransport(ws)
        try:
            if ws.subprotocol != SUBPROTOCOL:
                await transport._close(1002, "the server did not accept the 'mcp' subprotocol")
                raise ConnectionError("the server did not accept the 'mcp' WebSocket subprotocol")
            yield transport
        finally:
            await transport.aclose()


@asynccontextmanager
async def _client_connection(
    url: str, extra: list[tuple[bytes, bytes]], max_message_size: int, drain_limit: int
) -> AsyncIterator[_ClientConnection]:
    """trio-websocket's ``open_websocket_url``, with :class:`_ClientConnection`.

    trio-websocket builds its client connection itself, with no way to pass
    another class, so the connect is done here: the TCP (or TLS) stream, the
    reader task, the opening handshake, bounded by ``CONN_TIMEOUT`` (60 s) as
    there (:class:`~trio_websocket.ConnectionTimeout`; a network error is
    :class:`~trio_websocket.HandshakeError`, a refusal
    :class:`~trio_websocket.ConnectionRejected`). Unlike there, the stream is
    closed when the handshake fails, and a server that ends the connection
    during it fails the connect at once (not at the timeout). Errors come out
    unwrapped, as from trio-websocket.

    Cancellation: cancelled while connecting, the stream is closed; the reader
    task ends with the block. The caller closes the connection itself.
    """
    host, port, resource, tls = _url_to_host(url, None)
    host_header = host if port in (80, 443) else f"{host}:{port}"

    try:
        async with trio.open_nursery() as nursery:
            stream: trio.abc.Stream | None = None
            try:
                with trio.fail_after(CONN_TIMEOUT):
                    if tls is False:
                        stream = await trio.open_tcp_stream(host, port)
                    else:
                        context = ssl.create_default_context() if tls is True else tls
                        stream = await trio.open_ssl_over_tcp_stream(
                            host, port, ssl_context=context, https_compatible=True
                        )
                    connection = _ClientConnection(
                        stream,
                        WSConnection(ConnectionType.CLIENT),
                        host=host_header,
                        path=resource,
                        client_subprotocols=[SUBPROTOCOL],
                        client_extra_headers=extra,
                        max_message_size=max_message_size,
                        drain_limit=drain_limit,
                    )

                    async def read(connection: _ClientConnection = connection) -> None:
                        await connection._reader_task()
                        # Ended without an answer (the peer closed): stop waiting.
                        connection._open_handshake.set()

                    nursery.start_soon(read)
                    await connection._open_handshake.wait()
                    if connection.closed is not None:
                        raise HandshakeError(
                            "the server closed the connection during the handshake"
                        )
            except BaseException as exc:
                if stream is not None:
                    with trio.CancelScope(shield=True):
                        await stream.aclose()
                if isinstance(exc, trio.TooSlowError):
                    raise ConnectionTimeout from None
                if isinstance(exc, OSError):
                    raise HandshakeError from exc
                raise
            yield connection
            nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        if len(group.exceptions) != 1:
            raise
        _reraise(group.exceptions[0])


def _reraise(exc: BaseException) -> NoReturn:
    """Raise *exc* out of its group, keeping its own context (as trio-websocket does)."""
    context = exc.__context__
    try:
        raise exc
    finally:
        exc.__context__ = context
        del exc, context
