"""Streamable HTTP, server side: an ASGI application and :func:`serve_http_app`.

:class:`StreamableHTTPApp` is a plain ASGI 3 application, so it mounts in any
ASGI framework that runs on Trio; :func:`serve_http_app` runs it on hypercorn's
Trio worker. The application is a server of channels: each MCP session is an
:class:`HttpServerTransport` handed to the application's *transport handler*
(``trio_mcp.http_app`` makes one that serves a ``Server``), run in a nursery
owned by the application: opened by the ASGI lifespan, by :meth:`run`, or by
:func:`serve_http_app`.

Every request is checked *before* anything is allocated for it, in this order:
path (404), Host (421) and Origin (403) against the DNS-rebinding policy,
with ``auth`` the bearer token (401, 403, 400, 503: ``trio_mcp._auth._resource``),
method (405), ``Content-Type`` (415) and ``Accept`` (406), the
``MCP-Protocol-Version`` header (400), body size (413) and time (408), JSON
(400, -32700) and envelope (400, -32600), then the session: missing id (400),
unknown, ended or another principal's (404); only an ``initialize`` without a
session id creates one, and only below ``max_sessions`` (503). So a flood of
refused requests allocates no session and no task (reliability D-06). A session
that fails is logged and closed alone (``StreamableHTTPApp._run_session``).

Layout: this module holds the application (the session table, the sessions'
lifetime, routing and the checks every path shares) and the ways to run it.
The application owns one ``_http_endpoint.Endpoint`` (the POST, GET and DELETE
handlers, with the checks after the path and the writing of the answer) and one
``_legacy_sse.LegacyEndpoint``; both are handed the application as their
``SessionHost`` (the session table), never the class.

Spec: HT-01..HT-37 (server side), SS-01..SS-05 and SS-07 (legacy endpoints, in
``_legacy_sse``), SEC-01, SEC-07.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Collection,
    Hashable,
)
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, cast

import orjson
import trio

from ...._auth._resource import Refusal
from ...._transport import ANONYMOUS, Caller, Identity
from ....protocol import ALL_VERSIONS, DEFAULT_MAX_MESSAGE_SIZE, HANDSHAKE_VERSIONS, MODERN_VERSIONS
from ..._bounds import HEADER_TIMEOUT, LISTEN_BACKLOG
from .._common import OriginPolicy, is_loopback_host, new_session_id
from ._asgi import JSON, JsonPostReader, Receive, Scope, Send, refuse, refuse_with, respond
from ._drain import Drain, drain_on_sigterm
from ._endpoint import Endpoint
from ._event_store import EventStore
from ._legacy_sse import LegacyEndpoint
from ._modern import (
    MODERN_HEAD_DEFERRAL,
    MODERN_KEEPALIVE,
    FrameSink,
    ModernPost,
    OpenStateless,
    ToolHeaders,
)
from ._transport import HttpServerTransport

if TYPE_CHECKING:
    from hypercorn.config import Config as HypercornConfig

    from ...._auth._resource import ResourceServer
    from ...._auth._token import AccessToken

logger = logging.getLogger("trio_mcp.http")


class TransportHandler(Protocol):
    """Runs one session over its transport, until the session ends; *identity*
    is who its requests come from (open the session with it:
    ``open_session(..., identity=identity)``), which the application
    refreshes when a later request of the same principal presents a new
    token."""

    def __call__(
        self, transport: HttpServerTransport, *, identity: Identity
    ) -> Awaitable[None]: ...


#: Who is asking (e.g. from an auth middleware's scope entries); None: anonymous.
PrincipalOf = Callable[[Scope], Hashable | None]

#: The OAuth scopes a request needs, from its method and params (raw JSON):
#: ``Server.required_scopes``.
ScopesFor = Callable[[str, Any], frozenset[str]]

#: The ASGI scope key a request's verified ``AccessToken`` is kept under
#: (``StreamableHTTPApp(auth=...)``); never the raw token.
ACCESS_TOKEN_KEY = "trio_mcp.access_token"


class _Entry:
    __slots__ = ("identity", "transport")

    def __init__(self, transport: HttpServerTransport, identity: Identity) -> None:
        self.transport = transport
        #: Who the session's requests come from; the session reads it.
        self.identity = identity


class StreamableHTTPApp:
    """The MCP endpoint (and, optionally, the legacy HTTP+SSE endpoints) as ASGI.

    Args:
        transport_handler: serves one session over its transport, given
            the session's :class:`~trio_mcp.lowlevel.Identity` (who its
            requests come from, refreshed as tokens are; see
            :class:`TransportHandler`). For a ``Server``,
            ``trio_mcp.http_app`` builds the application with one.
        stateless_session: opens the one-request session of a stateless POST
            (an async context manager, entered in the POST's own task), given
            the revision the POST declares (or the default HTTP revision; None:
            a 2026-07-28 POST whose connection decides from the request); see
            ``OpenStateless``. None: *transport_handler* serves those too, in a
            task of its own.
        path: the MCP endpoint (POST, GET, DELETE).
        json_response: answer requests with one ``application/json`` body
            instead of an SSE stream (no resumability, no related messages).
        stateless: no sessions: every POST is self-contained (no GET, no DELETE).
        event_store: makes streams resumable (``Last-Event-ID``); e.g.
            :class:`MemoryEventStore`, whose bounds are its options: per session
            ``max_events_per_stream`` (1024), ``max_streams_per_session`` (256),
            ``max_bytes_per_session`` (8 MiB) and ``max_age`` (off); a resume
            from a dropped event gets 400. None: not resumable.
        retry_interval: milliseconds sent as the SSE ``retry`` field with priming
            events.
        allowed_hosts, allowed_origins: see :class:`OriginPolicy` (the default
            protects loopback binds).
        principal_of: identifies the authenticated principal of a request; a
            session answers only its creator's requests (404 otherwise).
        auth: makes the endpoint an OAuth 2.1 protected resource
            (:class:`~trio_mcp.auth.ResourceServer`): every request to the MCP
            endpoint and the legacy endpoints needs a valid bearer token (401,
            403, 503 otherwise, before any other check but path, Host and
            Origin); the protected resource metadata is served, without auth,
            at its well-known paths. A request's principal is then its token's
            ``(issuer, subject)``, which sessions and tasks are bound to, and
            handlers see the verified token as ``ctx.auth``. Not with
            *principal_of*.
        scopes_for: the OAuth scopes a request needs, from its method and params
            (``http_app`` gives ``Server.required_scopes``): with *auth*, a POST whose
            token lacks one is answered 403 ``insufficient_scope`` with the scopes to
            ask for, before the body reaches a session.
        max_sessions: live sessions at most; more ``initialize`` get 503.
        session_idle_timeout: seconds without any request or open stream after
            which a session ends (None: never).
        max_body_size: bytes per POST body, 16 MiB by default (413 beyond, its
            JSON-RPC error naming the request's id when the body's first 4 KiB
            show it). A body is buffered whole before it is dispatched, so each
            POST in flight may hold this much memory.
        body_timeout: seconds to receive a whole POST body, counted from when its head
            was read; a slower body is answered 408 and its connection closed (a
            trickling or stalled body would otherwise hold a connection and a task
            forever). None: no deadline. The default, 30 s, asks at least 140 KB/s of a
            client sending the largest body.
        allow_delete: let clients end sessions with DELETE (405 otherwise).
        enable_get: offer the standalone GET stream (405 otherwise).
        legacy_sse: also serve the 2024-11-05 HTTP+SSE endpoints at *sse_path* and
            *messages_path*.
        sse_path: the legacy SSE endpoint's path (default ``/sse``).
        messages_path: the legacy endpoint POSTs go to (default ``/messages/``).
        keepalive: seconds between SSE comment lines on an idle stream (None: off).
        versions: the protocol revisions served (None: every one). With a 2026-07-28-era
            revision, a POST naming that era (its ``MCP-Protocol-Version`` header or its
            ``_meta``) is served statelessly, in a one-request session of its own (see
            ``_http_modern``); without a handshake-era one the endpoint is modern-only:
            GET and DELETE get 405, ``Mcp-Session-Id`` and ``Last-Event-ID`` are
            ignored, no legacy HTTP+SSE endpoints.
        tool_headers: the ``x-mcp-header`` annotations of a tool by name, for the
            ``Mcp-Param-*`` checks of a 2026-07-28 ``tools/call``; None: no parameter is
            mirrored.
        modern_head_deferral: seconds a 2026-07-28 response head waits for the
            request's first message: a request answered by then gets one JSON
            body with the status its error calls for (400, 404: §27), a slower
            one an SSE stream (an error found later travels on it, status 200).
        modern_keepalive: seconds between SSE comments on a quiet 2026-07-28
            stream (``subscriptions/listen`` streams stay open); None: off.
        background: an async context manager factory entered around the
            sessions' nursery for as long as the application runs
            (``http_app`` gives the server's task runner, whose tasks outlive
            the POSTs that started them).
        health_path, ready_path: the load balancer's probes, answered 200
            ``ok`` before the Origin and authorization checks: health while the
            process serves, readiness until it begins to drain (then 503
            ``draining``); None: not served. See
            :class:`~trio_mcp.transports.Drain`.
        on_drain: called when a drain begins, after readiness went false
            (``http_app`` gives the server's, which completes its listen streams).

    Cancellation:
        Sessions live in the nursery of :meth:`run` (or of the ASGI lifespan);
        leaving it shuts them down (each bounded, as any session).

    Spec: HT-12, AU-12, SS-07, HM-31, HM-28.
    """

    def __init__(
        self,
        transport_handler: TransportHandler,
        *,
        stateless_session: OpenStateless | None = None,
        path: str = "/mcp",
        json_response: bool = False,
        stateless: bool = False,
        event_store: EventStore | None = None,
        retry_interval: int | None = None,
        allowed_hosts: Collection[str] | None = None,
        allowed_origins: Collection[str] | None = None,
        principal_of: PrincipalOf | None = None,
        max_sessions: int = 10_000,
        session_idle_timeout: float | None = 1800.0,
        max_body_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        body_timeout: float | None = 30.0,
        allow_delete: bool = True,
        enable_get: bool = True,
        legacy_sse: bool = True,
        sse_path: str = "/sse",
        messages_path: str = "/messages/",
        keepalive: float | None = None,
        versions: Collection[str] | None = None,
        tool_headers: ToolHeaders | None = None,
        modern_head_deferral: float = MODERN_HEAD_DEFERRAL,
        modern_keepalive: float | None = MODERN_KEEPALIVE,
        background: Callable[[], AbstractAsyncContextManager[object]] | None = None,
        auth: ResourceServer | None = None,
        scopes_for: ScopesFor | None = None,
        health_path: str | None = "/healthz",
        ready_path: str | None = "/readyz",
        on_drain: Callable[[], None] | None = None,
    ) -> None:
        if auth is not None and principal_of is not None:
            raise ValueError(
                "auth and principal_of both name the principal: with auth, it is the token's"
            )
        served = ALL_VERSIONS if versions is None else tuple(versions)
        unknown = [v for v in served if v not in ALL_VERSIONS]
        if unknown or not served:
            raise ValueError(f"versions must name known protocol revisions, not {served!r}")
        #: The 2026-07-28-era revisions served, newest first (empty: none).
        self.modern_versions = tuple(v for v in MODERN_VERSIONS if v in served)
        #: Whether handshake-era sessions are served.
        self.handshake = any(v in HANDSHAKE_VERSIONS for v in served)
        self.path = path.rstrip("/") or "/"
        self.json_response = json_response
        self.stateless = stateless
        self.event_store = None if stateless else event_store
        self.retry_interval = retry_interval
        self.policy = OriginPolicy(allowed_hosts=allowed_hosts, allowed_origins=allowed_origins)
        self.principal_of = principal_of
        self.auth = auth
        self.scopes_for = scopes_for
        self._well_known = frozenset(auth.well_known_paths()) if auth is not None else frozenset()
        self.max_sessions = max_sessions
        self.session_idle_timeout = session_idle_timeout
        self.max_body_size = max_body_size
        self.body_timeout = body_timeout
        self.allow_delete = allow_delete
        self.enable_get = enable_get
        self.legacy_sse = legacy_sse and not stateless and self.handshake
        self.sse_path = sse_path
        self.messages_path = messages_path
        self.keepalive = keepalive
        self._handler = transport_handler
        self._stateless_session = stateless_session
        self._background = background
        self.health_path = health_path
        self.ready_path = ready_path
        self.on_drain = on_drain
        #: False once a drain began: the readiness probe answers 503.
        self.ready = True
        #: POSTs being answered now (what a drain waits for).
        self.in_flight = 0
        self._idle = trio.Event()
        self._sessions: dict[str, _Entry] = {}
        self._nursery: trio.Nursery | None = None
        reader = JsonPostReader(max_body_size, body_timeout)
        self._mcp = Endpoint(
            self,
            open_stateless=self._open_stateless,
            reader=reader,
            json_response=json_response,
            stateless=stateless,
            enable_get=enable_get,
            allow_delete=allow_delete,
            retry_interval=retry_interval,
            keepalive=keepalive,
            modern=ModernPost(
                self._open_stateless,
                tool_headers=tool_headers,
                json_response=json_response,
                head_deferral=modern_head_deferral,
                keepalive=modern_keepalive,
            )
            if self.modern_versions
            else None,
            modern_versions=self.modern_versions,
            handshake=self.handshake,
        )
        self._legacy = LegacyEndpoint(
            self, reader=reader, messages_path=messages_path, keepalive=keepalive
        )

    # ------------------------------------------------------------- lifetime

    @asynccontextmanager
    async def run(self) -> AsyncIterator[StreamableHTTPApp]:
        """Own the nursery sessions live in (for hosts without ASGI lifespan).

        Cancellation: leaving the block cancels every session (bounded shutdown).
        """
        if self._nursery is not None:
            raise RuntimeError("the application is already running")
        background = self._background() if self._background is not None else nullcontext()
        async with background, trio.open_nursery() as nursery:
            self._nursery = nursery
            if self.session_idle_timeout is not None and not self.stateless:
                nursery.start_soon(self._reap_idle, name="trio_mcp http reaper")
            try:
                yield self
            finally:
                self._nursery = None
                for entry in list(self._sessions.values()):
                    entry.transport.peer_closed()
                nursery.cancel_scope.cancel(reason="HTTP application stopped")

    @property
    def session_count(self) -> int:
        """Live sessions (for statistics and tests)."""
        return len(self._sessions)

    def sessions(self) -> dict[str, HttpServerTransport]:
        """Live sessions by id (a copy)."""
        return {sid: e.transport for sid, e in self._sessions.items()}

    async def _reap_idle(self) -> None:
        timeout = self.session_idle_timeout
        assert timeout is not None
        while True:
            await trio.sleep(max(timeout / 4, 0.01))
            now = trio.current_time()
            for sid, entry in list(self._sessions.items()):
                transport = entry.transport
                if transport.idle and now - transport.last_activity >= timeout:
                    logger.info("session expired after %ss idle", timeout)
                    self._sessions.pop(sid, None)
                    transport.peer_closed()

    def _open_stateless(
        self, transport: HttpServerTransport, version: str | None, *, fed: bool, identity: Identity
    ) -> AbstractAsyncContextManager[FrameSink | None]:
        """The one-request session of a stateless POST (see ``run_one_request``,
        which contains its failure): ``stateless_session``'s, or the transport
        handler's in a task of its own (which reads the transport: no sink)."""
        if self._stateless_session is not None:
            return self._stateless_session(transport, version, fed=fed, identity=identity)
        return self._handler_in_task(transport, identity)

    @asynccontextmanager
    async def _handler_in_task(
        self, transport: HttpServerTransport, identity: Identity
    ) -> AsyncIterator[None]:
        """Run the transport handler beside the body (a session over *transport*).

        Cancellation: leaving waits for the handler, which ends once the body
        has ended the client side (``peer_closed``).
        """
        async with trio.open_nursery() as nursery:
            nursery.start_soon(partial(self._handler, transport, identity=identity))
            yield

    async def _run_session(
        self, sid: str, transport: HttpServerTransport, identity: Identity
    ) -> None:
        """Run one session's handler until it ends, then forget the session.

        One session's failure (a bug in a handler or a dispatcher, a frame its
        writer cannot encode) must end that session only, never the server nor
        the other sessions, which share the application's nursery: an
        unexpected exception is logged, not raised, and the transport is closed
        afterwards, which ends the session's open responses. (In this frame,
        not a helper's: each idle session holds its frames.)

        Cancellation: ``Cancelled`` (and ``KeyboardInterrupt``, ``SystemExit``)
        propagate unchanged; only ``Exception`` is contained.
        """
        try:
            await self._handler(transport, identity=identity)
        except* Exception as failure:
            logger.error("an HTTP session failed and was closed; serving goes on", exc_info=failure)
        finally:
            transport.close()
            entry = self._sessions.get(sid)
            if entry is not None and entry.transport is transport:
                del self._sessions[sid]
            if self.event_store is not None:
                with trio.CancelScope(shield=True), trio.move_on_after(1):
                    await self.event_store.forget_session(sid)

    def new_session(
        self, caller: Caller, *, single_stream: bool = False
    ) -> HttpServerTransport | None:
        """Create and start a session opened by *caller* (its principal owns
        it); None when the table is full or not running."""
        if self._nursery is None or len(self._sessions) >= self.max_sessions:
            return None
        sid = new_session_id()
        transport = HttpServerTransport(
            sid,
            event_store=None if single_stream else self.event_store,
            single_stream=single_stream,
        )
        identity = Identity(caller)
        self._sessions[sid] = _Entry(transport, identity)
        self._nursery.start_soon(
            self._run_session, sid, transport, identity, name="trio_mcp HTTP session"
        )
        return transport

    def lookup(self, sid: str, scope: Scope) -> HttpServerTransport | None:
        """The live session *sid* if *scope*'s principal owns it (else None: 404)."""
        entry = self._sessions.get(sid)
        if entry is None or entry.transport.closed:
            return None
        if entry.identity.caller.principal != self.principal_for(scope):
            return None
        return entry.transport

    def admit(self, transport: HttpServerTransport, scope: Scope) -> None:
        """*scope*'s request passed every check and is delivered to the
        session over *transport* next: with ``auth``, its token becomes the
        session's (the same principal, perhaps other scopes or a later
        expiry), so the requests it carries see it as ``ctx.auth``. Called
        only once a request is admitted, so a refused token never becomes the
        caller of anything that runs; requests already received keep the
        token they arrived with."""
        if self.auth is None or transport.session_id is None:
            return
        entry = self._sessions.get(transport.session_id)
        if entry is not None and entry.transport is transport:
            entry.identity.refresh(self.caller_of(scope))

    def caller_of(self, scope: Scope) -> Caller:
        """Who is asking: the request's principal and verified access token."""
        if self.auth is None and self.principal_of is None:
            return ANONYMOUS
        return Caller(self.principal_for(scope), self.access_token_for(scope))

    def principal_for(self, scope: Scope) -> Hashable | None:
        """Who is asking: the token's ``(issuer, subject)`` with ``auth``, else
        ``principal_of``'s answer; None: anonymous."""
        if self.auth is not None:
            token = self.access_token_for(scope)
            return None if token is None else token.principal
        return None if self.principal_of is None else self.principal_of(scope)

    def access_token_for(self, scope: Scope) -> AccessToken | None:
        """The request's verified access token (None: no ``auth``)."""
        token: AccessToken | None = scope.get(ACCESS_TOKEN_KEY)
        return token

    def scope_refusal(self, scope: Scope, parsed: Any) -> Refusal | None:
        """403 ``insufficient_scope`` (the step-up challenge) when the request's
        token lacks a scope that a request of the POSTed body *parsed* needs
        (``scopes_for``: the registered ``scopes=`` of the tool, resource or
        prompt it uses); None without ``auth``, without ``scopes_for``, or when
        every needed scope is granted. A batch is refused whole.

        Spec: AU-12.
        """
        if self.auth is None or self.scopes_for is None:
            return None
        token = self.access_token_for(scope)
        if token is None:
            return None
        needed: dict[str, None] = {}
        for message in parsed if isinstance(parsed, list) else (parsed,):
            if not isinstance(message, dict) or "id" not in message:
                continue  # notifications and responses use nothing
            method = message.get("method")
            if isinstance(method, str):
                needed.update(dict.fromkeys(sorted(self.scopes_for(method, message.get("params")))))
        return self.auth.step_up(token, needed) if needed else None

    def end_session(self, transport: HttpServerTransport) -> None:
        """Forget the session and end it (its client left or asked).

        Spec: HT-34.
        """
        if transport.session_id is not None:
            self._sessions.pop(transport.session_id, None)
        transport.peer_closed()

    # ------------------------------------------------------------------ ASGI

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        if kind != "http":
            if kind == "websocket":
                await send({"type": "websocket.close", "code": 1008})
            return
        path = scope.get("path", "")
        if path == self.health_path or path == self.ready_path:
            ok = path == self.health_path or self.ready
            body = b"ok\n" if ok else b"draining\n"
            await respond(send, 200 if ok else 503, body, content_type=b"text/plain")
            return
        if path in self._well_known:
            await self._metadata(scope, send)
            return
        if path.rstrip("/") == self.path.rstrip("/") or (path == "/" and self.path == "/"):
            handler = self._mcp.handle
        elif self.legacy_sse and path == self.sse_path:
            handler = self._legacy.get
        elif self.legacy_sse and path == self.messages_path:
            handler = self._legacy.post
        else:
            await refuse(send, 404, "Not found")
            return
        refusal = self.check_origin(scope)
        if refusal is not None:
            await refuse(send, *refusal)
            return
        if self.auth is not None:
            verdict = await self.auth.authenticate(scope)
            if isinstance(verdict, Refusal):
                await refuse_with(send, verdict)
                return
            # A copy: the server's scope is not the application's to change.
            scope = {**scope, ACCESS_TOKEN_KEY: verdict}
        if scope.get("method") != "POST":
            await handler(scope, receive, send)
            return
        # Counted: a drain lets the POSTs in flight finish (GET streams are
        # closed by the drain instead).
        self.in_flight += 1
        try:
            await handler(scope, receive, send)
        finally:
            self.in_flight -= 1
            if not self.in_flight:
                self._idle.set()

    async def wait_idle(self) -> None:
        """Return once no POST is being answered. Cancellation: a plain wait."""
        while self.in_flight:
            self._idle = trio.Event()
            await self._idle.wait()
        await trio.lowlevel.checkpoint()

    def close_sessions(self) -> None:
        """End every handshake-era session's streams (their clients see the
        end, and a new request of theirs gets 404, so they initialize again)."""
        for entry in list(self._sessions.values()):
            entry.transport.peer_closed()

    async def _metadata(self, scope: Scope, send: Send) -> None:
        """The protected resource metadata (RFC 9728), public: no token needed."""
        assert self.auth is not None
        refusal = self.check_origin(scope)
        if refusal is not None:
            await refuse(send, *refusal)
            return
        if scope["method"] not in ("GET", "HEAD"):
            await refuse(send, 405, "Method not allowed", headers=[(b"allow", b"GET, HEAD")])
            return
        body = orjson.dumps(self.auth.metadata())
        await respond(send, 200, body, content_type=JSON)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        if self._nursery is not None:  # serve_http (or the embedder) runs it already
            await send({"type": "lifespan.startup.complete"})
            await receive()
            await send({"type": "lifespan.shutdown.complete"})
            return
        async with self.run():
            await send({"type": "lifespan.startup.complete"})
            await receive()
        await send({"type": "lifespan.shutdown.complete"})

    def check_origin(self, scope: Scope) -> tuple[int, str] | None:
        server = scope.get("server")
        return self.policy.check(scope["headers"], tuple(server) if server else None)


def hypercorn_config(
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    header_timeout: float = HEADER_TIMEOUT,
    read_timeout: float | None = None,
) -> HypercornConfig:
    """The hypercorn configuration :func:`serve_http_app` runs with.

    Args:
        header_timeout: seconds a connection may go without a complete request
            head, both when it opens and between keep-alive requests. Hypercorn
            has one timer for both: it runs from the accept (or the end of the
            previous response) until the head is parsed, and bytes trickling in
            do not restart it. So heads sent one byte at a time (slowloris, D-01)
            and idle keep-alive connections (D-03) are closed after it. Default
            10 s (httpx clients close idle connections after 5 s first).
        read_timeout: seconds hypercorn waits for each read from the client;
            None (the default) disables it. It is no defence against a slow
            body (a trickle never trips it; the application's ``body_timeout``
            is) and it applies while a response streams: an SSE stream the
            client only reads would be cut after this long, so set it only
            well above the longest request and GET stream you expect.

    The listen queue is ``LISTEN_BACKLOG`` (1024; hypercorn's 100 dropped the
    connects of a burst of clients, each then retried a second or more later).
    No connection cap: hypercorn (0.18) has no setting for one (``backlog`` is
    only the listen queue). Idle and half-sent connections are bounded in time
    by *header_timeout*; sessions by ``max_sessions``; request bodies by
    ``body_timeout`` and ``max_body_size``.

    Spec: HT-03.
    """
    from hypercorn.config import Config, Sockets

    class ClosingConfig(Config):
        """hypercorn's configuration, but the TCP socket of ``host:port`` is
        bound here: hypercorn leaves the socket of a failed bind open (a
        ResourceWarning, and a descriptor held until collected), where this
        closes it and raises the ``OSError`` alone. Every other bind
        (``fd://N`` of a worker, TLS) is hypercorn's own."""

        def create_sockets(self) -> Sockets:
            if self.bind != [address] or self.ssl_enabled:
                return super().create_sockets()
            return Sockets(
                secure_sockets=[], insecure_sockets=[_listen(host, port)], quic_sockets=[]
            )

    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    config = ClosingConfig()
    config.bind = [address]
    config.accesslog = None
    config.errorlog = logging.getLogger("trio_mcp.http.hypercorn")
    config.graceful_timeout = 1.0
    config.keep_alive_timeout = header_timeout
    config.backlog = LISTEN_BACKLOG
    # hypercorn types it int but uses it as trio.fail_after's seconds.
    config.read_timeout = cast(Any, read_timeout)
    return config


async def serve_http_app(
    app: StreamableHTTPApp,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    header_timeout: float = HEADER_TIMEOUT,
    read_timeout: float | None = None,
    drain: Drain | None = None,
    drain_on_signal: bool = False,
    sock: socket.socket | None = None,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run *app* on hypercorn's Trio worker, with the nursery its sessions live in.

    ``task_status.started`` receives the base URL (``http://127.0.0.1:PORT``);
    port 0 picks a free port. *header_timeout* (10 s) and *read_timeout* (off)
    are hypercorn's: see :func:`hypercorn_config`. A warning is logged when
    binding a non-loopback address without an explicit ``allowed_hosts``.

    *sock*, a bound TCP socket (e.g. inherited from the process that started
    this one), is served instead of binding *host* and *port*, which must
    then be left at their defaults. It stays the caller's: served through a
    duplicate of its descriptor, it is still open, and still listening, when
    this returns, so connections made until it is served again (a restarted
    instance on the same socket) wait in its queue.

    With a *drain* (:class:`~trio_mcp.transports.Drain`), starting it takes the
    instance out of service in order and then returns (see its module);
    *drain_on_signal* starts it on SIGTERM (main thread only).

    Cancellation:
        Runs until cancelled (or drained); then the listener closes and every
        session shuts down (bounded).

    Spec: HT-01, HT-03.
    """
    from hypercorn.trio import serve

    if sock is not None:
        if (host, port) != ("127.0.0.1", 0):
            raise ValueError("give either a socket or a host and port to serve on, not both")
        host = str(sock.getsockname()[0])
    if not is_loopback_host(host) and app.policy.allowed_hosts is None:
        logger.warning("binding %s without allowed_hosts: Host is not validated", host)
    config = hypercorn_config(host, port, header_timeout=header_timeout, read_timeout=read_timeout)
    if sock is not None:
        # hypercorn adopts (and at the end closes) the descriptor it is given:
        # a duplicate, so the caller's socket outlives this server.
        config.bind = [f"fd://{os.dup(sock.fileno())}"]
    stop_accepting = trio.Event()
    if drain is not None:
        # The drain decides when connections are cut, not hypercorn's grace.
        config.graceful_timeout = drain.delay + drain.grace + 5.0

    async def started(*, task_status: trio.TaskStatus[list[str]]) -> None:
        # Without a drain, serving ends by cancellation alone.
        trigger = {} if drain is None else {"shutdown_trigger": stop_accepting.wait}
        await serve(cast(Any, app), config, task_status=task_status, mode="asgi", **trigger)

    async with app.run(), trio.open_nursery() as nursery:
        binds = await nursery.start(started)
        if drain is not None:
            nursery.start_soon(drain.run, app, stop_accepting, nursery.cancel_scope)
            if drain_on_signal:
                await nursery.start(drain_on_sigterm, drain)
        task_status.started(binds[0])
        await trio.sleep_forever()


def _listen(host: str, port: int) -> socket.socket:
    """A TCP socket bound to *host*:*port* as hypercorn binds one (no delay,
    address reuse, non-blocking, inheritable); hypercorn listens on it.

    Raises:
        OSError: the address cannot be bound (the socket is closed first).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.setblocking(False)
        sock.set_inheritable(True)
    except BaseException:
        sock.close()
        raise
    return sock
