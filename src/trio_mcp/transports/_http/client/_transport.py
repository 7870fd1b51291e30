"""Streamable HTTP, client side: :func:`open_http_transport` on httpx (Trio backend).

:class:`HttpClientTransport` is a :data:`~trio_mcp.lowlevel.Transport`: every frame the
session writes becomes a POST (HT-05); requests are POSTed from their own task,
so many can be in flight, and their answers (``application/json`` or an SSE
stream, HT-09) are read into the session's inbound queue. After the handshake
the standalone GET stream is opened when the server offers it (HT-18).

Faults become answers, never hangs: a non-2xx status fails the pending request
with an error naming the status; a 404 on a session fails the calls in flight
on it with "session expired" and then starts a new session (HT-33), or with
``reinitialize=False`` ends the transport; a broken SSE stream that
carried an event id is resumed with a GET and ``Last-Event-ID`` after the
server's ``retry`` delay (HT-12, HT-25), a bounded number of times.
Redirects are followed only within the endpoint's origin. A server that
refuses the handshake ends the ``send`` of ``initialize`` with
:class:`~trio_mcp.HandshakeRefused`, saying what it answered and what was tried.

A cancel never holds up the session's other messages, and never overtakes its
request's POST: when the cancelled call's POST has no response head yet, the
``notifications/cancelled`` waits for it (bounded by ``close_timeout``) in a
task of its own. On a server without sessions (no ``Mcp-Session-Id``) the
POST's response stream is the request, so cancelling the call also closes it.

Closing sends ``notifications/cancelled`` for requests still unanswered (unless
the session already did) and then DELETE (HT-34), bounded by ``close_timeout``
and shielded, so both also happen when the close is caused by an outer cancel.
A DELETE left unanswered at that bound is a WARNING naming the session by its
fingerprint (never its id, HT-29): unless the DELETE still reaches the server,
the session stays there until its idle timeout. The DELETE goes on the last
call's connection when the requests' pool has one to spare (one the server has
already accepted), else on the control client.

When the server refuses the ``initialize`` POST with 400, 404 or 405, the
transport falls back to the 2024-11-05 HTTP+SSE transport (SS-08).

Both eras ride one transport, told apart by each request's body: a request
whose ``_meta`` names a protocol version is a 2026-07-28 one and is a
:class:`~trio_mcp.transports._http.client._modern.ModernExchange` of its own,
with no session header and its metadata headers (HM-04, HM-15, HM-19, HM-25);
cancelling it closes its response stream instead of sending
``notifications/cancelled`` (HM-13, CN-13). The ``x-mcp-header`` annotations
of the tools come from :attr:`HttpClientTransport.tool_headers`, the rules
given at its construction (an empty table by default), which the client fills
from the tools it lists. Which era a server speaks is the client's business (``server/discover``
first, then the handshake: ``trio_mcp._client._era``); a refusal of the
discover POST reaches it as the call's error (HM-32).

Layout: the transport holds the Channel API, the calls in flight and the
inbound queue; each request is an
:class:`~trio_mcp.transports._http.client._exchange.Exchange` (its POST, its
answer, resuming its stream); what concerns the session (its id and headers,
loss, re-initialization, the GET stream, DELETE, the HTTP+SSE fallback) is the
:class:`~trio_mcp.transports._http.client._keeper.SessionKeeper`. Both are
handed callables, never the transport.

Spec: HT-05, HT-06, HT-09, HT-12, HT-18, HT-25, HT-30, HT-33, HT-34, HT-35, SS-04, SS-08,
HM-04, HM-13, HM-32, CN-13.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any

import httpx
import orjson
import trio

from ...._tls import default_tls_context
from ...._transport import Network
from ...._util import unwrapping
from ....protocol._codec import DEFAULT_MAX_MESSAGE_SIZE
from ....protocol._headers import ToolHeaderRules
from .._common import id_key
from ._exchange import Exchange
from ._httpx import OwnHttpClient
from ._keeper import SessionKeeper, oversize_answer_key
from ._lanes import LanePool, default_lane
from ._modern import ModernExchange, is_modern_request

logger = logging.getLogger("trio_mcp.http.client")

#: Connections a client's own pool opens to its server: the calls it can have
#: in flight at once (each holds one until answered); more wait for one.
MAX_CONNECTIONS = 100

_CLOSED_ERRORS = (httpx.HTTPError, trio.BrokenResourceError, trio.ClosedResourceError)


def session_fingerprint(session_id: str) -> str:
    """A name for session *session_id* fit for logs: the first 12 hex digits of
    its SHA-256. The id is a credential (HT-29); this names the same session
    in every record without disclosing it (compute it from the id to match)."""
    return hashlib.sha256(session_id.encode()).hexdigest()[:12]


class HttpClientTransport(trio.abc.Channel[bytes]):
    """The client end of a Streamable HTTP session (see the module docstring).

    Cancellation:
        ``send`` of a notification or response waits for its POST to be
        accepted, except a cancel whose request's POST has no answer head yet
        (it goes out from its own task once the head arrives); ``send`` of a
        request only starts it, except ``initialize``, which waits for the
        answer. ``aclose`` is shielded and bounded by ``close_timeout``.
    """

    #: :class:`~trio_mcp._transport.EraHints`: both eras; and every request
    #: gets an answer (each POST ends in a status), so the era probe is decided
    #: by that answer, never by a timer.
    handshake_only = False
    answers_every_request = True

    def __init__(
        self,
        url: str,
        http: httpx.AsyncClient,
        nursery: trio.Nursery,
        *,
        headers: dict[str, str] | None = None,
        legacy_fallback: bool = True,
        terminate_on_close: bool = True,
        reconnect_delay: float = 1.0,
        max_reconnects: int = 5,
        close_timeout: float = 2.0,
        open_get_stream: bool = True,
        control: httpx.AsyncClient | None = None,
        reinitialize: bool = True,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        tool_headers: ToolHeaderRules | None = None,
    ) -> None:
        self.http = http
        #: Carries everything but request POSTs (notifications, responses, the
        #: GET stream, DELETE), so they never queue behind requests for a
        #: pooled connection: a cancel must not wait for the call it cancels.
        self.control = control or http
        self._nursery = nursery
        self.headers = dict(headers or {})
        self.legacy_fallback = legacy_fallback
        self.terminate_on_close = terminate_on_close
        self.close_timeout = close_timeout
        self._in_send, self._in_receive = trio.open_memory_channel[bytes](256)
        self._calls: dict[tuple[bool, Any], Exchange] = {}
        #: 2026-07-28 requests in flight, each its own POST (HM-04).
        self._modern: dict[tuple[bool, Any], ModernExchange] = {}
        #: A 2026-07-28 request went out: a cancel naming no call in flight is dropped.
        self._sent_modern = False
        self._tool_headers = tool_headers if tool_headers is not None else ToolHeaderRules()
        self._scopes: set[trio.CancelScope] = set()
        self._closed = False
        self._initialize_key: tuple[bool, Any] | None = None
        #: Server requests awaiting our answer -> their generation (reinitialize only).
        self._server_requests: dict[tuple[bool, Any], int] = {}
        self._keeper = SessionKeeper(
            url,
            self.control,
            headers=self.headers,
            push=self._push,
            fail_calls=self._fail_calls,
            end_inbound=self._in_send.close,
            spawn=self._spawn,
            reinitialize=reinitialize,
            open_get_stream=open_get_stream,
            reconnect_delay=reconnect_delay,
            max_reconnects=max_reconnects,
            close_timeout=close_timeout,
        )
        self.set_max_message_size(max_message_size)

    @property
    def max_message_size(self) -> int:
        """The bound on one inbound frame, in bytes: a JSON body or an SSE event's
        data over it is never buffered whole, only its head and tail go on, so the
        session fails the call it answers (:class:`~trio_mcp.ResponseTooLarge`).
        The session sets it to its own bound (``max_message_size``)."""
        return self._keeper.max_message_size

    def set_max_message_size(self, size: int) -> None:
        """Bound inbound frames to *size* bytes (positive) from now on
        (:class:`~trio_mcp.lowlevel.BoundedTransport`)."""
        if size < 1:
            raise ValueError("max_message_size must be positive")
        self._keeper.max_message_size = size

    @property
    def tool_headers(self) -> ToolHeaderRules:
        """The ``x-mcp-header`` annotations of the tools, by name, for the
        ``Mcp-Param-*`` headers of a 2026-07-28 ``tools/call``: the rules given at
        construction, which the client fills from the tools it lists.

        Spec: HM-25.
        """
        return self._tool_headers

    def __repr__(self) -> str:
        # The session id is a credential (HT-29): never shown.
        return f"<HttpClientTransport {self.url} legacy={self.legacy_endpoint is not None}>"

    # ----------------------------------------------------- what is known

    @property
    def url(self) -> str:
        """The MCP endpoint (changed by a same-origin redirect)."""
        return self._keeper.url

    @property
    def network(self) -> Network:
        """TCP, HTTP, the endpoint's host and port, and the current session id
        (:class:`~trio_mcp.lowlevel.NetworkTransport`)."""
        url = httpx.URL(self.url)
        port = url.port or (443 if url.scheme == "https" else 80)
        peer = (url.host, port) if url.host else None
        return Network("tcp", "http", peer=peer, session_id=self.session_id)

    @property
    def session_id(self) -> str | None:
        """The current ``Mcp-Session-Id`` (None: none yet, or the server keeps none)."""
        return self._keeper.session_id

    @property
    def protocol_version(self) -> str | None:
        """The revision negotiated by ``initialize`` (sent as ``MCP-Protocol-Version``)."""
        return self._keeper.protocol_version

    @property
    def legacy_endpoint(self) -> str | None:
        """The HTTP+SSE endpoint messages go to after a fallback, else None.

        Spec: SS-08.
        """
        return self._keeper.legacy_endpoint

    @property
    def session_expired(self) -> bool:
        """The session is gone for good (404, no new session started)."""
        return self._keeper.expired

    @property
    def reinitializations(self) -> int:
        """How many new sessions were started after a 404.

        Spec: HT-33.
        """
        return self._keeper.reinitializations

    @property
    def reinitialize(self) -> bool:
        """Start a new session after a 404 instead of ending.

        Spec: HT-33.
        """
        return self._keeper.reinitialize

    @property
    def reconnect_delay(self) -> float:
        """Seconds before reconnecting a stream when the server gave no ``retry``."""
        return self._keeper.reconnect_delay

    @property
    def max_reconnects(self) -> int:
        """Reconnections in a row without a new event before a stream is given up."""
        return self._keeper.max_reconnects

    @property
    def open_get_stream(self) -> bool:
        """Open the standalone GET stream after the handshake.

        Spec: HT-18.
        """
        return self._keeper.open_get_stream

    # ------------------------------------------------------------ Channel API

    async def send(self, value: bytes) -> None:
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._closed:
            raise trio.ClosedResourceError("transport closed")
        keeper = self._keeper
        if not keeper.ready:
            await keeper.wait_ready()  # a new session is being initialized
            if self._closed:
                raise trio.ClosedResourceError("transport closed")
        if keeper.expired:
            raise trio.BrokenResourceError("session expired (HTTP 404)")
        data = bytes(value)
        try:
            msg = orjson.loads(data)
        except orjson.JSONDecodeError:
            msg = None
        if keeper.legacy_endpoint is not None:
            await keeper.post_message(data, keeper.legacy_endpoint)
            return
        if not isinstance(msg, dict):
            await keeper.post_message(data, keeper.url)
            return
        method = msg.get("method")
        if isinstance(method, str) and "id" in msg:
            if is_modern_request(msg):
                await self._start_modern(msg, data)
                return
            await self._start_request(msg["id"], method, data)
            return
        if self._server_requests and method is None:
            generation = self._server_requests.pop(id_key(msg.get("id")), None)
            if generation is not None and generation != keeper.generation:
                logger.debug("dropped an answer to a request of an expired session")
                return
        if method == "notifications/cancelled" and self._cancel_later(msg, data):
            return
        await keeper.post_message(data, keeper.url)
        if method == "notifications/initialized":
            await keeper.note_initialized(data)

    async def _start_request(self, request_id: Any, method: str, data: bytes) -> None:
        key = id_key(request_id)
        initialize = method == "initialize"
        exchange = Exchange(
            request_id,
            data,
            http=self.http,
            keeper=self._keeper,
            push=self._push,
            done=self._forget,
            initialize=initialize,
            legacy_fallback=self.legacy_fallback,
        )
        self._calls[key] = exchange
        if not initialize:
            self._spawn(exchange.run)
            await trio.lowlevel.cancel_shielded_checkpoint()  # send is a checkpoint
            return
        self._initialize_key = key
        self._keeper.note_initialize(data)
        await exchange.run()  # the session id comes with its answer
        if exchange.refusal is not None:
            if self._closed:
                raise trio.ClosedResourceError("transport closed")
            raise exchange.refusal

    async def _start_modern(self, msg: dict[str, Any], data: bytes) -> None:
        """Start a 2026-07-28 request: its own POST, no session (HM-04)."""
        exchange = ModernExchange(
            msg,
            data,
            http=self.http,
            url=self._keeper.url,
            headers=self.headers,
            tool_headers=self._tool_headers.annotations,
            push=self._push,
            done=self._forget,
            max_message_size=self._keeper.max_message_size,
        )
        self._modern[id_key(exchange.request_id)] = exchange
        self._sent_modern = True
        self._spawn(exchange.run)
        await trio.lowlevel.cancel_shielded_checkpoint()  # send is a checkpoint

    def _forget(self, key: tuple[bool, Any]) -> None:
        """A call's exchange is over (answered or failed)."""
        self._calls.pop(key, None)
        self._modern.pop(key, None)

    def _cancel_later(self, msg: dict[str, Any], data: bytes) -> bool:
        """Handle the cancel of a call in flight; True if it is not to be POSTed
        now (sent from its own task, or a 2026-07-28 call whose stream is closed).

        On a server without sessions the POST's response stream is the
        request: closing it is what stops the handler there. A cancel whose
        request's POST has no response head yet waits for it in a task of its
        own, so that it never overtakes the POST and never holds up the
        messages queued behind it.
        """
        params = msg.get("params")
        request_id = params.get("requestId") if isinstance(params, dict) else None
        modern = self._modern.get(id_key(request_id))
        if modern is not None:
            # 2026-07-28: closing the response stream is the cancel (HM-13);
            # no notifications/cancelled goes over HTTP (CN-13).
            modern.scope.cancel(reason="cancelled by the client")
            return True
        exchange = self._calls.get(id_key(request_id))
        if exchange is None:
            # A 2026-07-28 call's exchange ends with its answer, and a cancel
            # queued just before the answer came (a timeout racing it) gets
            # here after it: there is nothing left to cancel, and the modern
            # endpoint takes no notifications/cancelled (CN-13): it answers 400,
            # which would fail the whole transport.
            if self._sent_modern and self._keeper.session_id is None:
                logger.debug("dropped the cancel of an ended call %r", request_id)
                return True
            return False
        exchange.cancel_sent = True
        if self._keeper.session_id is None:
            exchange.scope.cancel(reason="cancelled by the client")
        if exchange.started.is_set():
            return False
        self._spawn(lambda: self._send_after_post(exchange, data))
        return True

    async def _send_after_post(self, exchange: Exchange, data: bytes) -> None:
        with trio.move_on_after(self.close_timeout):
            await exchange.started.wait()
        try:
            await self._keeper.post_message(data, self._keeper.url)
        except _CLOSED_ERRORS as exc:
            logger.debug("a cancel was not delivered: %r", exc)

    async def receive(self) -> bytes:
        if self._closed:
            raise trio.ClosedResourceError("transport closed")
        try:
            return await self._in_receive.receive()
        except trio.ClosedResourceError:
            raise trio.ClosedResourceError("transport closed") from None

    async def aclose(self) -> None:
        """Tell the server: cancels for unanswered requests, then DELETE.

        Shielded and bounded by ``close_timeout`` together. When the bound runs out
        before the DELETE is answered (the server or the network is slow, or this
        process too busy to write it), a WARNING on the ``trio_mcp.http.client`` logger
        says so, naming the bound and the session by :func:`session_fingerprint` (the id
        itself is a credential and is never logged): the server keeps that session until
        its own idle timeout, unless the DELETE, already written, still reaches it
        (closing the connection does not withdraw it). A DELETE that fails (connection
        refused, an error status) is only logged at DEBUG. The DELETE goes on the last
        call's connection when it can (see ``_delete_client``).

        Cancellation: an outer cancel does not cut the cancels and the DELETE
        short (shielded); they end at ``close_timeout`` at the latest.

        Spec: HT-34, HT-29.
        """
        if self._closed:
            await trio.lowlevel.checkpoint()
            return
        self._closed = True
        keeper = self._keeper
        keeper.close()
        session_id = keeper.session_id
        deleting = (
            session_id is not None
            and not keeper.expired
            and self.terminate_on_close
            and keeper.legacy_endpoint is None
        )
        deleted = False
        with trio.CancelScope(shield=True), trio.move_on_after(self.close_timeout) as bound:
            await trio.lowlevel.checkpoint()  # a checkpoint even with nothing to tell
            if session_id is not None and not keeper.expired:
                for call in list(self._calls.values()):
                    if (
                        call.answered
                        or call.cancel_sent
                        or id_key(call.request_id) == (self._initialize_key)
                    ):
                        continue
                    call.cancel_sent = True
                    note = orjson.dumps(
                        {
                            "jsonrpc": "2.0",
                            "method": "notifications/cancelled",
                            "params": {"requestId": call.request_id, "reason": "client closed"},
                        }
                    )
                    await self._quiet(keeper.post_message(note, keeper.url))
                if deleting:
                    await self._quiet(keeper.delete(self._delete_client()))
                    deleted = True
        if deleting and not deleted and bound.cancelled_caught:
            assert session_id is not None
            logger.warning(
                "closing: the DELETE of session %s was not answered within close_timeout"
                " (%ss); unless it still reaches the server, the session stays there"
                " until its idle timeout",
                session_fingerprint(session_id),
                self.close_timeout,
            )
        for scope in list(self._scopes):
            scope.cancel(reason="HTTP transport closed")
        self._in_send.close()
        self._in_receive.close()

    # --------------------------------------------------------------- helpers

    def _delete_client(self) -> httpx.AsyncClient:
        """The client the closing DELETE goes with: the requests' pool while it
        has a connection to spare, else the control client.

        Why: the last call's connection is idle in the requests' pool, and the
        server has long accepted it; the control pool's idle connection has
        usually expired (httpx keeps one 5 s), so a DELETE there opens a new
        one, which waits in the server's accept queue. A busy server accepts
        one connection per pass of its event loop: at 1,000 sessions that wait
        was 1.4 s at the median and 14.7 s at worst, while a request on an
        accepted connection reached its handler in 0.03 s (median), and the
        close gave up at ``close_timeout`` with the session left on the server.
        With every request connection busy, the DELETE must not queue for one.
        """
        in_flight = len(self._calls) + len(self._modern)
        return self.http if in_flight < MAX_CONNECTIONS else self.control

    async def _quiet(self, work: Awaitable[None]) -> None:
        try:
            await work
        except _CLOSED_ERRORS as exc:
            logger.debug("ignored while closing: %r", exc)

    def _spawn(self, work: Callable[[], Awaitable[None]]) -> None:
        """Run *work* in the transport's nursery, cancelled when the transport closes."""

        async def run() -> None:
            with trio.CancelScope() as scope:
                self._scopes.add(scope)
                try:
                    await work()
                finally:
                    self._scopes.discard(scope)

        self._nursery.start_soon(run)

    def _fail_calls(self, generation: int | None, message: str) -> None:
        """Fail the calls sent on *generation* and stop their POSTs; None: every call."""
        for call in list(self._calls.values()):
            if generation is None:
                call.fail(message)
            elif call.generation == generation:
                call.abandon(message)

    def _push(self, data: bytes) -> None:
        msg = oversize_answer_key(data)  # refused by size: only its id counts here
        if msg is None:
            try:
                msg = orjson.loads(data)
            except orjson.JSONDecodeError:
                msg = None
        keeper = self._keeper
        if keeper.reinitialize and isinstance(msg, dict) and "method" in msg and "id" in msg:
            self._server_requests[id_key(msg["id"])] = keeper.generation
        if isinstance(msg, dict) and "method" not in msg:
            key = id_key(msg.get("id"))
            call = self._calls.get(key)
            if call is not None:
                call.answered = True
            if key == self._initialize_key:
                result = msg.get("result")
                if isinstance(result, dict) and isinstance(result.get("protocolVersion"), str):
                    keeper.note_negotiated(result["protocolVersion"])
        try:
            self._in_send.send_nowait(data)
        except trio.WouldBlock:
            self._nursery.start_soon(self._push_later, data)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass

    async def _push_later(self, data: bytes) -> None:
        with suppress(trio.ClosedResourceError, trio.BrokenResourceError):
            await self._in_send.send(data)


@asynccontextmanager
async def open_http_transport(
    url: str,
    *,
    headers: dict[str, str] | None = None,
    http_client: httpx.AsyncClient | None = None,
    auth: httpx.Auth | None = None,
    legacy_fallback: bool = True,
    terminate_on_close: bool = True,
    reconnect_delay: float = 1.0,
    close_timeout: float = 2.0,
    reinitialize: bool = True,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
) -> AsyncIterator[HttpClientTransport]:
    """Yield the transport to the MCP endpoint at *url* (``trio_mcp.open_http_client``
    runs a client over it).

    Nothing is sent until the first frame: the transport POSTs each frame and
    reads the answers (JSON or SSE), opens the GET stream and keeps the session.

    Args:
        url: the server's MCP endpoint, such as ``http://127.0.0.1:8000/mcp``.
        headers: sent with every request (e.g. ``Authorization``).
        http_client: an ``httpx.AsyncClient`` to use (not closed here); by
            default one is made (no redirects followed except same-origin 307/308,
            no read timeout on streams, up to :data:`MAX_CONNECTIONS` (100)
            connections, so up to 100 calls in flight at once: each holds a
            connection until it is answered, and one past them waits for a
            connection) and closed on exit.
        auth: an ``httpx.Auth`` for every request the transport makes (POST,
            GET and DELETE), e.g. :class:`trio_mcp.auth.OAuthProvider`; with
            an own *http_client*, give the auth to that client instead. An
            authorization that fails raises :class:`~trio_mcp.auth.AuthorizationFailed`
            out of the transport.
        legacy_fallback: try the 2024-11-05 HTTP+SSE transport when the server refuses
            the initialize POST with 400, 404 or 405.
        terminate_on_close: send DELETE on exit.
        reconnect_delay: seconds before reconnecting a stream when the server
            gave no ``retry``.
        close_timeout: bound on the cancels and DELETE sent on exit; a DELETE
            not answered within it is logged as a WARNING (see
            :meth:`HttpClientTransport.aclose`).
        reinitialize: when the server answers 404 for the session (it ended or expired),
            start a new session instead of ending the client: calls in flight on the old
            session fail with "Session expired (HTTP 404)", later calls go to the new
            one. On by default, as the specification requires of a client; what the server
            held for the old session (subscriptions, logging level) is lost, so an
            application that relies on it re-establishes it, or passes False to end the
            client instead. See :class:`HttpClientTransport`.
        max_message_size: the bound on one inbound frame (16 MiB by default):
            a JSON body or SSE event over it is read only for its first and
            last 4 KiB, and the call it answers fails at once with
            :class:`~trio_mcp.ResponseTooLarge`. It is also the memory one frame
            may take. A session over the transport sets its own bound here.

    Cancellation:
        Leaving the block (normally, by an error, or by an outer cancel) sends
        ``notifications/cancelled`` for unanswered requests and DELETE, shielded
        and bounded by *close_timeout*, then closes everything.

    Spec: HT-33, HT-34, SS-08, AU-09.
    """
    own = http_client is None
    if auth is not None and http_client is not None:
        raise TypeError("give auth to your own http_client, not to open_http_transport")
    # Requests get a pool of their own. A call in flight holds its connection
    # until it is answered (HTTP/1.1: one response at a time), so the pool
    # bounds the calls in flight: at 16, a 17th call, even a ping, waited for
    # a long one to end. MAX_CONNECTIONS (httpx's own default) are allowed,
    # all kept alive (as many kept alive as open means no churn); a request
    # past them waits for a free connection (pool=None), and an application
    # that needs more calls in flight passes its own http_client.
    #
    # The pool is a LanePool, not httpx's own (whose cost per request grows
    # with the connections in flight; see _http_lanes): the same bound, each
    # connection still an httpx transport's.
    http: httpx.AsyncClient
    control: httpx.AsyncClient | None
    if http_client is None:
        calls = OwnHttpClient(
            timeout=httpx.Timeout(30.0, read=None, pool=None),
            auth=auth,
            follow_redirects=False,
            transport=LanePool(default_lane(default_tls_context()), max_lanes=MAX_CONNECTIONS),
        )
        # The session's own requests (notifications, the GET stream, DELETE)
        # on a client of their own, the calls' pool left to calls; one jar.
        http, control = (
            calls,
            OwnHttpClient(
                timeout=httpx.Timeout(30.0, read=None),
                verify=default_tls_context(),
                auth=auth,
                follow_redirects=False,
                cookies_of=calls,
            ),
        )
    else:
        http, control = http_client, None
    try:
        async with unwrapping(), trio.open_nursery() as nursery:
            transport = HttpClientTransport(
                url,
                http,
                nursery,
                headers=headers,
                legacy_fallback=legacy_fallback,
                terminate_on_close=terminate_on_close,
                reconnect_delay=reconnect_delay,
                close_timeout=close_timeout,
                control=control,
                reinitialize=reinitialize,
                max_message_size=max_message_size,
            )
            try:
                yield transport
            finally:
                await transport.aclose()
                nursery.cancel_scope.cancel(reason="HTTP client closed")
    finally:
        if own:
            with trio.CancelScope(shield=True), trio.move_on_after(close_timeout):
                await http.aclose()
                if control is not None:
                    await control.aclose()
