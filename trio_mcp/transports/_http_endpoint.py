"""Streamable HTTP, server side: the POST, GET and DELETE handlers of the MCP endpoint.

:class:`~trio_mcp.transports.StreamableHTTPApp` routes a request here after the
checks every method shares (path, Host, Origin, method: see ``_http_server``).
The handlers are functions of the application, as ``_legacy_sse``'s are, so
that the application's module keeps the session table and its lifetime.

:func:`handle_post` goes on checking, in this order: ``Content-Type`` (415),
``Accept`` (406), ``MCP-Protocol-Version`` (400), body size (413) and the time
to receive it (408, ``body_timeout``), JSON (400,
-32700), envelope (400, -32600), then the session (missing id 400; unknown,
ended or another principal's 404; only an ``initialize`` without a session id
creates one, 503 when the table is full). Then the body is delivered to the
session: notifications and responses only get 202 (HT-08); requests get the
stream that carries their answers (409 if a request id is already in flight,
reliability A12), written as SSE (``_asgi.stream_sse``; primed with an event id
and ``retry`` when the session keeps events and the revision has priming,
HT-10, HT-12) or collected into one JSON body in ``json_response`` mode (HT-09).
A client that disconnects cancels nothing (HT-17). In stateless mode each POST
runs a session of its own for the duration of the request.

:func:`handle_get` opens the session's standalone GET stream (one at a time,
409 otherwise) or, with ``Last-Event-ID``, resumes a stream from the event store
(HT-25, HT-26). :func:`handle_delete` ends the session.

Spec: HT-06..HT-10, HT-12, HT-17, HT-19, HT-25, HT-26, HT-27, HT-31, HT-32, HT-34,
HT-36, HT-37.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson
import trio

from ..protocol import LATEST_VERSION, SUPPORTED_VERSIONS
from ._asgi import (
    JSON,
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
    stream_sse,
)
from ._event_store import split_event_id
from ._http_common import (
    DEFAULT_HTTP_VERSION,
    PRIMING_VERSIONS,
    Headers,
    Sniffed,
    accepts,
    check_version,
    is_json_content_type,
    is_visible_ascii,
    one_header,
    sniff,
)
from ._http_session import END, HttpServerTransport, Stream

if TYPE_CHECKING:
    from ._http_server import StreamableHTTPApp

#: Seconds a POST's SSE response head waits for the answer (see ``stream_sse``).
HEAD_DEFERRAL = 0.02


async def handle_post(app: StreamableHTTPApp, scope: Scope, receive: Receive, send: Send) -> None:
    """A POST: checks in order, the session it belongs to (or a new one), dispatch.

    Cancellation: cancelled with the HTTP request (the client left); what was
    delivered to the session runs on (HT-17).
    """
    headers = scope["headers"]
    try:
        content_type = one_header(headers, b"content-type")
        accept = ", ".join(v.decode("latin-1") for k, v in headers if k == b"accept")
        version = one_header(headers, b"mcp-protocol-version")
        declared = one_header(headers, b"content-length")
    except ValueError as exc:
        await refuse(send, 400, str(exc))
        return
    if not is_json_content_type(content_type):
        await refuse(send, 415, "Unsupported Media Type: Content-Type must be application/json")
        return
    if not accepts(accept, "application/json") or (
        not app.json_response and not accepts(accept, "text/event-stream")
    ):
        await refuse(
            send, 406, "Not Acceptable: Accept must list application/json and text/event-stream"
        )
        return
    problem = check_version(version)
    if problem is not None:
        await refuse(send, 400, problem)
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
        return  # nothing was dispatched (S-10)
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        await refuse(send, 400, "Parse error", code=-32700)
        return
    sniffed = sniff(parsed)
    if sniffed.problem is None and sniffed.has_initialize and isinstance(parsed, list):
        sniffed.problem = "initialize must not be part of a batch"
    if sniffed.problem is not None:
        await refuse(send, 400, f"Invalid Request: {sniffed.problem}")
        return
    if app.stateless:
        await _post_stateless(app, scope, receive, send, body, sniffed, version)
        return
    transport: HttpServerTransport | None
    if sniffed.has_initialize and one_header(headers, b"mcp-session-id") is None:
        transport = app.new_session(app._principal(scope))
        if transport is None:
            await refuse(send, 503, "Too many open sessions", code=-32000)
            return
        requested = parsed.get("params", {}) if isinstance(parsed, dict) else {}
        asked = requested.get("protocolVersion") if isinstance(requested, dict) else None
        stream_version = asked if asked in SUPPORTED_VERSIONS else LATEST_VERSION
    else:
        transport, refusal = app._session_for(scope)
        if transport is None:
            assert refusal is not None
            await refuse(send, *refusal)
            return
        # An unsupported version was refused above (400, HT-31). A supported
        # one that differs from the negotiated one is accepted: the spec asks
        # for 400 only for invalid or unsupported versions, and real clients
        # (the conformance harness 0.1.16 among them) send such headers.
        negotiated = transport.protocol_version
        stream_version = negotiated or version or DEFAULT_HTTP_VERSION
    transport.touch()
    await _dispatch(app, receive, send, transport, body, sniffed, stream_version)


async def _post_stateless(
    app: StreamableHTTPApp,
    scope: Scope,
    receive: Receive,
    send: Send,
    body: bytes,
    sniffed: Sniffed,
    version: str | None,
) -> None:
    transport = HttpServerTransport(None)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(app._run_stateless, transport, version or DEFAULT_HTTP_VERSION)
        try:
            await _dispatch(
                app, receive, send, transport, body, sniffed, version or DEFAULT_HTTP_VERSION
            )
        finally:
            transport.peer_closed()


async def _dispatch(
    app: StreamableHTTPApp,
    receive: Receive,
    send: Send,
    transport: HttpServerTransport,
    body: bytes,
    sniffed: Sniffed,
    version: str,
) -> None:
    sid_headers: Headers = (
        [(b"mcp-session-id", transport.session_id.encode())] if transport.session_id else []
    )
    if not sniffed.request_ids:
        try:
            await transport.deliver(body)
        except trio.ClosedResourceError:
            await refuse(send, 404, "Session not found")
            return
        for request_id in sniffed.cancelled_ids:
            transport.forget_request(request_id)
        await respond(send, 202, headers=sid_headers)
        return
    if any(transport.in_flight(rid) for rid in sniffed.request_ids):
        # A second in-flight request with the same id would steal the first
        # one's stream (reliability A12): refuse it, the first runs on.
        await refuse(send, 409, "Conflict: a request with this id is already in flight")
        return
    stream = transport.open_stream(
        sniffed.request_ids,
        sniffed.progress_tokens,
        json=app.json_response,
        initialize=sniffed.has_initialize,
    )
    if app.json_response:
        await _answer_json(receive, send, transport, stream, body, sid_headers)
        return
    conn = transport.attach(stream)
    prime_id = None
    if version in PRIMING_VERSIONS and transport.event_store is not None:
        prime_id = await transport.prime(stream)
    try:
        await transport.deliver(body)
    except trio.ClosedResourceError:
        transport.detach(stream, conn)
        await refuse(send, 404, "Session not found")
        return
    await stream_sse(
        receive,
        send,
        transport,
        stream,
        conn,
        prime_id=prime_id,
        retry=app.retry_interval if prime_id is not None else None,
        keepalive=app.keepalive,
        defer_headers=HEAD_DEFERRAL,
    )


async def _answer_json(
    receive: Receive,
    send: Send,
    transport: HttpServerTransport,
    stream: Stream,
    body: bytes,
    sid_headers: Headers,
) -> None:
    try:
        await transport.deliver(body)
    except trio.ClosedResourceError:
        await refuse(send, 404, "Session not found")
        return
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_cancel_on_disconnect, receive, scope)
            await stream.wait_done()
            nursery.cancel_scope.cancel()
    if scope.cancelled_caught:
        return  # the client left; the request runs on (HT-17), its answer is dropped
    if not stream.collected:
        await refuse(send, 404, "Session ended before answering", code=-32000)
        return
    if len(stream.collected) == 1:
        payload = stream.collected[0]
    else:
        payload = b"[" + b",".join(stream.collected) + b"]"
    await respond(send, 200, payload, content_type=JSON, headers=sid_headers)


async def handle_get(app: StreamableHTTPApp, scope: Scope, receive: Receive, send: Send) -> None:
    """A GET: the standalone stream (one per session), or a resumed one with
    ``Last-Event-ID`` when the session keeps events.

    Cancellation: cancelled with the HTTP request; the stream outlives its
    connection (HT-17).
    """
    headers = scope["headers"]
    try:
        accept = ", ".join(v.decode("latin-1") for k, v in headers if k == b"accept")
        version = one_header(headers, b"mcp-protocol-version")
        last_event_id = one_header(headers, b"last-event-id")
    except ValueError as exc:
        await refuse(send, 400, str(exc))
        return
    if not accepts(accept, "text/event-stream"):
        await refuse(send, 406, "Not Acceptable: Accept must list text/event-stream")
        return
    problem = check_version(version)
    if problem is not None:
        await refuse(send, 400, problem)
        return
    transport, refusal = app._session_for(scope)
    if transport is None:
        assert refusal is not None
        await refuse(send, *refusal)
        return
    transport.touch()
    if last_event_id is not None and transport.event_store is not None:
        await _resume(app, receive, send, transport, last_event_id)
        return
    stream = transport.get_stream
    if stream.conn is not None:
        await refuse(send, 409, "Conflict: only one GET stream per session")
        return
    conn = transport.attach(stream)
    prime_id = await transport.prime(stream) if transport.primes else None
    await stream_sse(
        receive,
        send,
        transport,
        stream,
        conn,
        prime_id=prime_id,
        retry=app.retry_interval if prime_id is not None else None,
        keepalive=app.keepalive,
    )


async def _resume(
    app: StreamableHTTPApp,
    receive: Receive,
    send: Send,
    transport: HttpServerTransport,
    last_event_id: str,
) -> None:
    store = transport.event_store
    assert store is not None
    assert transport.session_id is not None
    parsed = split_event_id(last_event_id) if is_visible_ascii(last_event_id) else None
    if parsed is None or len(last_event_id) > 128:
        await refuse(send, 400, "Malformed Last-Event-ID")
        return
    live = transport.live_stream(parsed[0])
    if live is not None and live.conn is not None:
        await refuse(send, 409, "Conflict: this stream is already connected")
        return
    stream = live if live is not None else Stream(parsed[0])
    conn = transport.attach(stream)
    if live is None:
        conn.push(END)
    found = await store.events_after(transport.session_id, last_event_id)
    if found is None or found[0] != parsed[0]:
        transport.detach(stream, conn)
        await refuse(send, 400, "Unknown or expired Last-Event-ID")
        return
    await stream_sse(
        receive, send, transport, stream, conn, replay=found[1], keepalive=app.keepalive
    )


async def handle_delete(app: StreamableHTTPApp, scope: Scope, send: Send) -> None:
    """A DELETE: the client ends its session (HT-34)."""
    transport, refusal = app._session_for(scope)
    if transport is None:
        assert refusal is not None
        await refuse(send, *refusal)
        return
    assert transport.session_id is not None
    app._sessions.pop(transport.session_id, None)
    transport.peer_closed()
    await respond(send, 200)


async def _cancel_on_disconnect(receive: Receive, scope: trio.CancelScope) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            scope.cancel(reason="client disconnected")
            return
