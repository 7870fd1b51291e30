"""Streamable HTTP, server side: :class:`Endpoint`, the POST, GET and DELETE of the MCP endpoint.

:class:`~trio_mcp.transports.StreamableHTTPApp` owns one endpoint and routes a
request to it after the checks every path shares (path, Host, Origin: see
``_http_server``). The endpoint never sees the application: it is handed a
:class:`SessionHost` (the session table: create, look up, end a session; whose
principal asks) and, for stateless mode, the callable that runs a one-request
session.

:meth:`Endpoint.handle` checks the method (405, with ``Allow``). A POST goes
on checking, in this order: ``Content-Type`` (415), ``Accept`` (406),
``MCP-Protocol-Version`` (400), body size (413) and the time to receive it
(408, ``body_timeout``), JSON (400, -32700), envelope (400, -32600) (the checks
shared with the legacy endpoint are ``_asgi.JsonPostReader``), then the session
(missing id 400; unknown, ended or another principal's 404; only an
``initialize`` without a session id creates one, 503 when the table is full).
Then the body is delivered to the session: notifications and responses only get
202 (HT-08); requests get the stream that carries their answers (409 if a
request id is already in flight, reliability A12), written as SSE
(``_asgi.stream_sse``; primed with an event id and ``retry`` when the session
keeps events and the revision has priming, HT-10, HT-12) or collected into one
JSON body in ``json_response`` mode (HT-09). A client that disconnects cancels
nothing (HT-17). In stateless mode each POST runs a session of its own for the
duration of the request.

Two eras on one endpoint: when the application serves 2026-07-28, a POST whose
``MCP-Protocol-Version`` header or ``_meta`` names that era (or any POST, on a
modern-only endpoint) goes to ``_http_modern.ModernPost`` after the body
checks, and the version header is checked there against the body instead of
here. There a disconnect *is* the cancel (HM-13). A modern-only endpoint
offers neither GET nor DELETE (405, HM-31).

A GET opens the session's standalone GET stream (one at a time, 409 otherwise)
or, with ``Last-Event-ID``, resumes a stream from the event store (HT-25,
HT-26). A DELETE ends the session.

Spec: HT-06..HT-10, HT-12, HT-17, HT-19, HT-25, HT-26, HT-27, HT-31, HT-32, HT-34,
HT-36, HT-37.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import trio

from ...._transport import Caller, Identity
from ....protocol import LATEST_VERSION, REVISIONS, SUPPORTED_VERSIONS
from .._common import (
    DEFAULT_HTTP_VERSION,
    PRIMING_VERSIONS,
    Headers,
    accept_types,
    accepts,
    admits,
    check_version,
    is_visible_ascii,
    one_header,
)
from ._asgi import (
    JSON,
    JsonPostReader,
    PostedMessage,
    Receive,
    Scope,
    Send,
    origin_of,
    refuse,
    refuse_with,
    respond,
    stream_sse,
    wait_for_wake_or_disconnect,
)
from ._event_store import split_event_id
from ._modern import ModernPost, OpenStateless, body_version, run_stateless_session
from ._transport import END, HttpServerTransport, ResponseQueue, Stream

if TYPE_CHECKING:
    from ...._auth._resource import Refusal

#: Seconds a POST's SSE response head waits for the answer (see ``stream_sse``).
HEAD_DEFERRAL = 0.02


class SessionHost(Protocol):
    """What an endpoint needs of the application that keeps the session table."""

    def new_session(
        self, caller: Caller, *, single_stream: bool = False
    ) -> HttpServerTransport | None:
        """Create and start a session opened by *caller*; None when the table
        is full or not running."""
        ...

    def lookup(self, sid: str, scope: Scope) -> HttpServerTransport | None:
        """The live session *sid* if *scope*'s principal owns it (else None: 404)."""
        ...

    def caller_of(self, scope: Scope) -> Caller:
        """Who is asking: the request's principal and verified access token."""
        ...

    def admit(self, transport: HttpServerTransport, scope: Scope) -> None:
        """*scope*'s request was admitted to the session over *transport*: its
        caller (perhaps a refreshed token) is the caller of what it delivers."""
        ...

    def end_session(self, transport: HttpServerTransport) -> None:
        """Forget the session and end it (its client left or asked)."""
        ...

    def scope_refusal(self, scope: Scope, parsed: Any) -> Refusal | None:
        """How to refuse the POSTed body *parsed* because the request's token
        lacks a scope one of its requests needs (403, step-up); None: go on."""
        ...


class Endpoint:
    """The MCP endpoint's handlers (see the module docstring).

    Cancellation:
        Every handler is cancelled with its HTTP request (the client left);
        what was delivered to a session runs on, and streams outlive their
        connection (HT-17).
    """

    __slots__ = (
        "_host",
        "_modern",
        "_open_stateless",
        "_reader",
        "allow_delete",
        "enable_get",
        "handshake",
        "json_response",
        "keepalive",
        "modern_versions",
        "retry_interval",
        "stateless",
    )

    def __init__(
        self,
        host: SessionHost,
        *,
        open_stateless: OpenStateless,
        reader: JsonPostReader,
        json_response: bool,
        stateless: bool,
        enable_get: bool,
        allow_delete: bool,
        retry_interval: int | None,
        keepalive: float | None,
        modern: ModernPost | None = None,
        modern_versions: tuple[str, ...] = (),
        handshake: bool = True,
    ) -> None:
        self._host = host
        self._open_stateless = open_stateless
        self._reader = reader
        if (modern is None) != (not modern_versions):
            raise ValueError("a modern handler goes with the modern revisions it serves")
        self._modern = modern
        #: The 2026-07-28-era revisions served (empty: the handshake era only).
        self.modern_versions = modern_versions
        #: Whether the handshake era is served (False: modern only, HM-31).
        self.handshake = handshake
        self.json_response = json_response
        self.stateless = stateless
        sessions = handshake and not stateless
        self.enable_get = enable_get and sessions
        self.allow_delete = allow_delete and sessions
        self.retry_interval = retry_interval
        self.keepalive = keepalive

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Route by method: POST, GET and DELETE when offered, else 405 with ``Allow``."""
        method = scope["method"]
        if method == "POST":
            await self.post(scope, receive, send)
        elif method == "GET" and self.enable_get:
            await self.get(scope, receive, send)
        elif method == "DELETE" and self.allow_delete:
            await self.delete(scope, send)
        else:
            allow = ["POST"]
            if self.enable_get:
                allow.append("GET")
            if self.allow_delete:
                allow.append("DELETE")
            await refuse(
                send, 405, "Method not allowed", headers=[(b"allow", ", ".join(allow).encode())]
            )

    # ------------------------------------------------------------------ POST

    async def post(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A POST: checks in order, the session it belongs to (or a new one), dispatch."""
        headers = scope["headers"]
        try:
            content_type = one_header(headers, b"content-type")
            accept = ", ".join(v.decode("latin-1") for k, v in headers if k == b"accept")
            version = one_header(headers, b"mcp-protocol-version")
            declared = one_header(headers, b"content-length")
        except ValueError as exc:
            await refuse(send, 400, str(exc))
            return
        if await self._reader.refuses_content_type(send, content_type):
            return
        accepted = accept_types(accept)
        if not admits(accepted, "application/json") or (
            not self.json_response and not admits(accepted, "text/event-stream")
        ):
            await refuse(
                send, 406, "Not Acceptable: Accept must list application/json and text/event-stream"
            )
            return
        if not self.modern_versions:
            # Handshake era only: a bad header is refused before the body is read.
            problem = check_version(version)
            if problem is not None:
                await refuse(send, 400, problem)
                return
        posted = await self._reader.read(receive, send, declared, initialize_in_batch=False)
        if posted is None:
            return
        posted.origin = origin_of(scope)
        # Before the body reaches a session (so before any SSE head, in
        # either era): a request the token has no scope for is a 403 with the
        # step-up challenge (AU-12). The body decides, not the Mcp-Name header.
        denied = self._host.scope_refusal(scope, posted.parsed)
        if denied is not None:
            await refuse_with(send, denied)
            return
        if self._modern is not None:
            opening = self._modern_opening(version, posted)
            if opening is not None:
                await self._modern.handle(
                    receive,
                    send,
                    headers,
                    posted,
                    opening or None,
                    caller=self._host.caller_of(scope),
                )
                return
            problem = check_version(version)
            if problem is not None:
                await refuse(send, 400, problem)
                return
        if self.stateless:
            await self._post_stateless(
                receive,
                send,
                posted,
                version or DEFAULT_HTTP_VERSION,
                self._host.caller_of(scope),
            )
            return
        transport: HttpServerTransport | None
        if posted.sniffed.has_initialize and one_header(headers, b"mcp-session-id") is None:
            transport = self._host.new_session(self._host.caller_of(scope))
            if transport is None:
                await refuse(send, 503, "Too many open sessions", code=-32000)
                return
            parsed = posted.parsed
            requested = parsed.get("params", {}) if isinstance(parsed, dict) else {}
            asked = requested.get("protocolVersion") if isinstance(requested, dict) else None
            stream_version = asked if asked in SUPPORTED_VERSIONS else LATEST_VERSION
        else:
            transport, refusal = self._session_of(scope)
            if transport is None:
                assert refusal is not None
                await refuse(send, *refusal)
                return
            # Past the scope check: what this POST delivers comes from its
            # caller (the same principal, perhaps with a refreshed token).
            self._host.admit(transport, scope)
            # An unsupported version was refused above (400, HT-31). A supported
            # one that differs from the negotiated one is accepted: the spec asks
            # for 400 only for invalid or unsupported versions, and real clients
            # (the conformance harness 0.1.16 among them) send such headers.
            negotiated = transport.protocol_version
            stream_version = negotiated or version or DEFAULT_HTTP_VERSION
        transport.touch()
        await self._dispatch(receive, send, transport, posted, stream_version)

    def _modern_opening(self, header: str | None, posted: PostedMessage) -> str | None:
        """The revision a modern POST's session opens in; None: a handshake-era POST.

        A POST is modern when its ``MCP-Protocol-Version`` header or its body's
        ``_meta`` names a revision of that era (the body wins, being the source
        of truth), or always on a modern-only endpoint. There, a legacy
        ``initialize`` (no modern version anywhere) opens as the connection
        decides (the empty string), which refuses it with -32022 naming our
        versions (VR-13).
        """
        named = body_version(posted.parsed)
        if named is None and header in self.modern_versions:
            named = header
        if named is not None:
            return named if named in self.modern_versions else self.modern_versions[0]
        if self.handshake:
            return None
        if posted.sniffed.has_initialize:
            return ""
        return self.modern_versions[0]

    async def _post_stateless(
        self,
        receive: Receive,
        send: Send,
        posted: PostedMessage,
        version: str,
        caller: Caller,
    ) -> None:
        transport = HttpServerTransport(None, origin=posted.origin)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                run_stateless_session,
                self._open_stateless,
                transport,
                version,
                Identity(caller),
            )
            try:
                await self._dispatch(receive, send, transport, posted, version)
            finally:
                transport.peer_closed()

    async def _dispatch(
        self,
        receive: Receive,
        send: Send,
        transport: HttpServerTransport,
        posted: PostedMessage,
        version: str,
    ) -> None:
        sniffed = posted.sniffed
        if isinstance(posted.parsed, list) and not _has_batches(version):
            # Only 2025-03-26 has batches (BP-18, BP-19). The session would refuse
            # the array with a null id, answering none of its requests, and their
            # stream would wait for answers that never come (reliability J-19).
            await refuse(send, 400, f"Invalid Request: revision {version} has no batches")
            return
        sid_headers: Headers = (
            [(b"mcp-session-id", transport.session_id.encode())] if transport.session_id else []
        )
        if not sniffed.request_ids:
            try:
                await transport.deliver(posted.body, posted.origin)
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
            json=self.json_response,
            initialize=sniffed.has_initialize,
        )
        if self.json_response:
            await self._answer_json(receive, send, transport, stream, posted, sid_headers)
            return
        conn = transport.attach(stream)
        prime_id = None
        if version in PRIMING_VERSIONS and transport.event_store is not None:
            prime_id = await transport.prime(stream)
        try:
            await transport.deliver(posted.body, posted.origin)
        except trio.ClosedResourceError:
            transport.detach(stream, conn)
            await refuse(send, 404, "Session not found")
            return
        await self._stream(receive, send, transport, stream, conn, prime_id, HEAD_DEFERRAL)

    async def _stream(
        self,
        receive: Receive,
        send: Send,
        transport: HttpServerTransport,
        stream: Stream,
        conn: ResponseQueue,
        prime_id: str | None,
        defer_headers: float = 0.0,
    ) -> None:
        """Write *stream* as SSE, primed with *prime_id* (and ``retry``) when given."""
        await stream_sse(
            receive,
            send,
            transport,
            stream,
            conn,
            prime_id=prime_id,
            retry=self.retry_interval if prime_id is not None else None,
            keepalive=self.keepalive,
            defer_headers=defer_headers,
        )

    async def _answer_json(
        self,
        receive: Receive,
        send: Send,
        transport: HttpServerTransport,
        stream: Stream,
        posted: PostedMessage,
        sid_headers: Headers,
    ) -> None:
        try:
            await transport.deliver(posted.body, posted.origin)
        except trio.ClosedResourceError:
            await refuse(send, 404, "Session not found")
            return
        if not stream.done and not await wait_for_wake_or_disconnect(receive, stream.arm):
            return  # the client left; the request runs on (HT-17), its answer is dropped
        if not stream.collected:
            await refuse(send, 404, "Session ended before answering", code=-32000)
            return
        if len(stream.collected) == 1:
            payload = stream.collected[0]
        else:
            payload = b"[" + b",".join(stream.collected) + b"]"
        await respond(send, 200, payload, content_type=JSON, headers=sid_headers)

    # ------------------------------------------------------------------- GET

    async def get(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A GET: the standalone stream (one per session), or a resumed one with
        ``Last-Event-ID`` when the session keeps events."""
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
        transport, refusal = self._session_of(scope)
        if transport is None:
            assert refusal is not None
            await refuse(send, *refusal)
            return
        transport.touch()
        if last_event_id is not None and transport.event_store is not None:
            await self._resume(receive, send, transport, last_event_id)
            return
        stream = transport.get_stream
        if stream.conn is not None:
            await refuse(send, 409, "Conflict: only one GET stream per session")
            return
        conn = transport.attach(stream)
        prime_id = await transport.prime(stream) if transport.primes else None
        await self._stream(receive, send, transport, stream, conn, prime_id)

    async def _resume(
        self, receive: Receive, send: Send, transport: HttpServerTransport, last_event_id: str
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
            receive, send, transport, stream, conn, replay=found[1], keepalive=self.keepalive
        )

    # ---------------------------------------------------------------- DELETE

    async def delete(self, scope: Scope, send: Send) -> None:
        """A DELETE: the client ends its session (HT-34)."""
        transport, refusal = self._session_of(scope)
        if transport is None:
            assert refusal is not None
            await refuse(send, *refusal)
            return
        assert transport.session_id is not None
        self._host.end_session(transport)
        await respond(send, 200)

    def _session_of(
        self, scope: Scope
    ) -> tuple[HttpServerTransport | None, tuple[int, str] | None]:
        """The session a request names, or the refusal (status, message) to answer."""
        try:
            sid = one_header(scope["headers"], b"mcp-session-id")
        except ValueError:
            return None, (400, "Repeated Mcp-Session-Id header")
        if sid is None:
            return None, (400, "Bad Request: Mcp-Session-Id header is required")
        transport = self._host.lookup(sid, scope)
        if transport is None:
            return None, (404, "Session not found")
        return transport, None


def _has_batches(version: str) -> bool:
    """Does revision *version* accept JSON-RPC batches (BP-18)?"""
    revision = REVISIONS.get(version)
    return revision is not None and revision.batches
