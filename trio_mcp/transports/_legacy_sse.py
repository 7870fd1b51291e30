"""The 2024-11-05 HTTP+SSE transport, server side, for old clients.

A client GETs the SSE endpoint; the first event is ``endpoint``, whose data is
the URL to POST messages to (with the session id in its query); every message
from the server is a ``message`` event on that one stream. POSTs are answered
``202 Accepted``. The session ends when the SSE connection closes. The same
DNS-rebinding, content-type, body-size and session checks as for Streamable HTTP
apply (SS-01), and refused requests allocate nothing.

Spec: SS-01, SS-02, SS-03, SS-05, SS-07.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import parse_qs

import orjson
import trio

from ._asgi import (
    BodyTimeout,
    BodyTooLarge,
    Disconnected,
    Receive,
    Scope,
    Send,
    read_body,
    refuse,
    refuse_slow_body,
    respond,
)
from ._http_common import accepts, is_json_content_type, one_header, sniff
from ._sse import format_event

if TYPE_CHECKING:
    from ._http_server import StreamableHTTPApp


async def handle_get(app: StreamableHTTPApp, scope: Scope, receive: Receive, send: Send) -> None:
    """Open a legacy session: the SSE stream with its ``endpoint`` event.

    Cancellation: the session ends with the stream (client gone or cancelled).
    """
    refusal = app.check_origin(scope)
    if refusal is not None:
        await refuse(send, *refusal)
        return
    if scope["method"] != "GET":
        await refuse(send, 405, "Method not allowed", headers=[(b"allow", b"GET")])
        return
    accept = ", ".join(v.decode("latin-1") for k, v in scope["headers"] if k == b"accept")
    if accept and not accepts(accept, "text/event-stream"):
        await refuse(send, 406, "Not Acceptable: Accept must list text/event-stream")
        return
    transport = app.new_session(app._principal(scope), single_stream=True)
    if transport is None:
        await refuse(send, 503, "Too many open sessions", code=-32000)
        return
    assert transport.session_id is not None
    endpoint = f"{scope.get('root_path', '')}{app.messages_path}?session_id={transport.session_id}"
    from ._asgi import stream_sse

    stream = transport.get_stream
    conn = transport.attach(stream)
    try:
        await stream_sse(
            receive,
            send,
            transport,
            stream,
            conn,
            event="message",
            first=format_event(endpoint, event="endpoint"),
            keepalive=app.keepalive,
        )
    finally:
        # The stream is the session: it ends when the client goes away.
        app._sessions.pop(transport.session_id, None)
        transport.peer_closed()


async def handle_post(app: StreamableHTTPApp, scope: Scope, receive: Receive, send: Send) -> None:
    """Deliver one POSTed message to its legacy session (202 Accepted)."""
    refusal = app.check_origin(scope)
    if refusal is not None:
        await refuse(send, *refusal)
        return
    if scope["method"] != "POST":
        await refuse(send, 405, "Method not allowed", headers=[(b"allow", b"POST")])
        return
    try:
        content_type = one_header(scope["headers"], b"content-type")
        declared = one_header(scope["headers"], b"content-length")
    except ValueError as exc:
        await refuse(send, 400, str(exc))
        return
    if not is_json_content_type(content_type):
        await refuse(send, 415, "Unsupported Media Type: Content-Type must be application/json")
        return
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    ids = query.get("session_id", [])
    if len(ids) != 1:
        await refuse(send, 400, "session_id is required")
        return
    transport = app.lookup(ids[0], scope)
    if transport is None or not transport.single_stream:
        await refuse(send, 404, "Session not found")
        return
    try:
        body = await read_body(receive, app.max_body_size, declared, app.body_timeout)
    except BodyTooLarge:
        await refuse(send, 413, f"Request body larger than {app.max_body_size} bytes")
        return
    except BodyTimeout:
        await refuse_slow_body(send, app.body_timeout)
        return
    except Disconnected:
        return
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        await refuse(send, 400, "Parse error", code=-32700)
        return
    sniffed = sniff(parsed)
    if sniffed.problem is not None:
        await refuse(send, 400, f"Invalid Request: {sniffed.problem}")
        return
    transport.touch()
    try:
        await transport.deliver(body)
    except trio.ClosedResourceError:
        await refuse(send, 404, "Session not found")
        return
    await respond(send, 202, b"Accepted", content_type=b"text/plain; charset=utf-8")
