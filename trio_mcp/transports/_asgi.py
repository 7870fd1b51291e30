"""Small ASGI helpers shared by the HTTP server modules (no framework needed).

Cancellation: every helper is a plain sequence of ASGI ``send``/``receive``
calls; cancelling one leaves the HTTP response unfinished and the server closes
the connection.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import trio

from ._http_common import Headers, error_body
from ._http_session import END, Connection, HttpServerTransport, Stream, event_seq
from ._sse import format_comment, format_event

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

JSON = b"application/json"
SSE = b"text/event-stream"


class BodyTooLarge(Exception):
    pass


class Disconnected(Exception):
    pass


async def respond(
    send: Send,
    status: int,
    body: bytes = b"",
    *,
    content_type: bytes | None = None,
    headers: Headers | None = None,
) -> None:
    """Send a complete response."""
    out: Headers = list(headers or [])
    if content_type is not None:
        out.append((b"content-type", content_type))
    out.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": out})
    await send({"type": "http.response.body", "body": body})


async def refuse(
    send: Send, status: int, message: str, *, code: int = -32600, headers: Headers | None = None
) -> None:
    """An HTTP refusal with an id-less JSON-RPC error body (HT-08)."""
    await respond(send, status, error_body(code, message), content_type=JSON, headers=headers)


async def read_body(receive: Receive, limit: int, declared: str | None) -> bytes:
    """Read the request body; raises BodyTooLarge past *limit*, Disconnected on a drop."""
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Disconnected
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def sse_headers(session_id: str | None) -> Headers:
    headers: Headers = [
        (b"content-type", SSE),
        (b"cache-control", b"no-cache, no-transform"),
        (b"x-accel-buffering", b"no"),
    ]
    if session_id is not None:
        headers.append((b"mcp-session-id", session_id.encode()))
    return headers


async def _watch_disconnect(receive: Receive, scope: trio.CancelScope) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            scope.cancel(reason="client disconnected")
            return


async def stream_sse(
    receive: Receive,
    send: Send,
    transport: HttpServerTransport,
    stream: Stream,
    conn: Connection,
    *,
    prime_id: str | None = None,
    retry: int | None = None,
    replay: list[tuple[str, bytes | None]] | None = None,
    event: str | None = None,
    first: bytes | None = None,
    keepalive: float | None = None,
) -> None:
    """Write *stream*'s events to one SSE response until it ends or the client leaves.

    A client disconnect only detaches this connection (the request runs on,
    HT-17); events already replayed are not sent twice (live events with a
    sequence at or below the last replayed one are skipped).

    Cancellation: cancelling the caller ends the response; the stream survives.
    """
    await send(
        {"type": "http.response.start", "status": 200, "headers": sse_headers(transport.session_id)}
    )
    last_seq = -1
    try:
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_watch_disconnect, receive, scope)
                head = first or b""
                if prime_id is not None:
                    head += format_event("", id=prime_id, retry=retry)
                if head:
                    await send({"type": "http.response.body", "body": head, "more_body": True})
                for event_id, data in replay or ():
                    last_seq = max(last_seq, event_seq(event_id))
                    if data is not None:
                        await _send_event(send, data, event_id, event)
                while True:
                    item: Any = END
                    try:
                        if keepalive is None:
                            item = await conn.receive_channel.receive()
                        else:
                            with trio.move_on_after(keepalive) as idle:
                                item = await conn.receive_channel.receive()
                            if idle.cancelled_caught:
                                body = format_comment("keep-alive")
                                await send(
                                    {"type": "http.response.body", "body": body, "more_body": True}
                                )
                                continue
                    except trio.EndOfChannel:
                        # Overflowed (a slow reader) or replaced: end this response.
                        pass
                    if item is END:
                        break
                    event_id, data = item
                    seq = event_seq(event_id)
                    if seq != -1 and seq <= last_seq:
                        continue
                    await _send_event(send, data, event_id, event)
                nursery.cancel_scope.cancel()
        if not scope.cancelled_caught:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        transport.detach(stream, conn)


async def _send_event(send: Send, data: bytes, event_id: str | None, event: str | None) -> None:
    body = format_event(data, id=event_id, event=event or "message")
    await send({"type": "http.response.body", "body": body, "more_body": True})
