"""Streamable HTTP, client side: :func:`open_http_client` on httpx (Trio backend).

:class:`HttpClientTransport` is a :data:`~trio_mcp.Transport`: every frame the
session writes becomes a POST (HT-05); requests are POSTed from their own task,
so many can be in flight, and their answers (``application/json`` or an SSE
stream, HT-09) are read into the session's inbound queue. After the handshake
the standalone GET stream is opened when the server offers it (HT-18).

Faults become answers, never hangs: a non-2xx status fails the pending request
with an error naming the status; a 404 on a session fails the calls in flight
on it with "session expired" and then either ends the transport or, with
``reinitialize=True``, starts a new session (HT-33); a broken SSE stream that
carried an event id is resumed with a GET and ``Last-Event-ID`` after the
server's ``retry`` delay (HT-12, HT-25), a bounded number of times.
Redirects are followed only within the endpoint's origin.

Closing sends ``notifications/cancelled`` for requests still unanswered (unless
the session already did) and then DELETE (HT-34), bounded by ``close_timeout``
and shielded, so both also happen when the close is caused by an outer cancel.

When the server refuses the ``initialize`` POST with 400, 404 or 405, the
transport falls back to the 2024-11-05 HTTP+SSE transport (SS-08).

Layout: this module holds :class:`HttpClientTransport` (all the state, the
Channel API, the helpers every path uses: headers, pushing inbound frames,
failing a call, POSTing notifications and responses) and
:func:`open_http_client`. The rest of the work is functions of the transport in
three modules:

* ``_http_client_post``: a request's POST and its answer (JSON or SSE), with
  every way it can fail;
* ``_http_client_streams``: reading SSE, resuming a broken stream, the
  standalone GET stream;
* ``_http_client_session``: a 404 for the session and re-initializing
  (described there), the session probe, DELETE, the HTTP+SSE fallback.

Spec: HT-05, HT-06, HT-09, HT-12, HT-18, HT-25, HT-30, HT-33, HT-34, HT-35, SS-04, SS-08.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import httpx
import orjson
import trio

from ._http_client_post import post_request
from ._http_client_session import ACCEPT_BOTH, delete, lost
from ._http_client_streams import get_stream
from ._http_common import id_key

logger = logging.getLogger("trio_mcp.http.client")

#: Error code of the errors this transport answers failed requests with.
HTTP_ERROR = -32000


class _Call:
    __slots__ = (
        "answered",
        "cancel_sent",
        "detached",
        "generation",
        "request_id",
        "scope",
        "started",
    )

    def __init__(self, request_id: Any) -> None:
        self.request_id = request_id
        #: Answered elsewhere (the legacy stream), not by this POST.
        self.detached = False
        self.started = trio.Event()
        self.answered = False
        self.cancel_sent = False
        #: The session generation the POST was sent on (None: not sent yet).
        self.generation: int | None = None
        #: Cancels the POST (and its stream) when its session is gone.
        self.scope = trio.CancelScope()


class HttpClientTransport(trio.abc.Channel[bytes]):
    """The client end of a Streamable HTTP session (see the module docstring).

    Cancellation:
        ``send`` of a notification or response waits for its POST to be
        accepted; ``send`` of a request only starts it. ``aclose`` is shielded
        and bounded by ``close_timeout``.
    """

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
        reinitialize: bool = False,
    ) -> None:
        self.url = url
        self.http = http
        #: Carries everything but request POSTs (notifications, responses, the
        #: GET stream, DELETE), so they never queue behind requests for a
        #: pooled connection: a cancel must not wait for the call it cancels.
        self.control = control or http
        self._nursery = nursery
        self.headers = dict(headers or {})
        self.legacy_fallback = legacy_fallback
        self.terminate_on_close = terminate_on_close
        self.reconnect_delay = reconnect_delay
        self.max_reconnects = max_reconnects
        self.close_timeout = close_timeout
        self.open_get_stream = open_get_stream
        self.reinitialize = reinitialize
        self._in_send, self._in_receive = trio.open_memory_channel[bytes](256)
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.legacy_endpoint: str | None = None
        self._calls: dict[tuple[bool, Any], _Call] = {}
        self._scopes: set[trio.CancelScope] = set()
        self._closed = False
        self._get_started = False
        self._initialize_key: tuple[bool, Any] | None = None
        self.session_expired = False
        #: Counts sessions: a 404 for generation N moves to N + 1 (HT-33).
        self._generation = 0
        #: Cleared while a new session is being initialized; senders wait.
        self._ready = trio.Event()
        self._ready.set()
        self._init_frame: bytes | None = None
        self._initialized_frame: bytes | None = None
        #: Server requests awaiting our answer -> their generation (reinitialize only).
        self._server_requests: dict[tuple[bool, Any], int] = {}
        #: How many new sessions were started after a 404.
        self.reinitializations = 0
        self._probes = 0

    def __repr__(self) -> str:
        # The session id is a credential (HT-29): never shown.
        return f"<HttpClientTransport {self.url} legacy={self.legacy_endpoint is not None}>"

    # ------------------------------------------------------------ Channel API

    async def send(self, value: bytes) -> None:
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._closed:
            raise trio.ClosedResourceError("transport closed")
        if not self._ready.is_set():
            await self._ready.wait()  # a new session is being initialized
            if self._closed:
                raise trio.ClosedResourceError("transport closed")
        if self.session_expired:
            raise trio.BrokenResourceError("session expired (HTTP 404)")
        data = bytes(value)
        try:
            msg = orjson.loads(data)
        except orjson.JSONDecodeError:
            msg = None
        if self.legacy_endpoint is not None:
            await self._post_simple(data, self.legacy_endpoint)
            return
        if isinstance(msg, dict) and isinstance(msg.get("method"), str) and "id" in msg:
            call = _Call(msg["id"])
            key = id_key(msg["id"])
            self._calls[key] = call
            if msg["method"] == "initialize":
                self._initialize_key = key
                self._init_frame = data
                await post_request(self, data, call)  # the session id comes with it
            else:
                self._spawn(post_request, self, data, call)
                await trio.lowlevel.cancel_shielded_checkpoint()
            return
        if self._server_requests and isinstance(msg, dict) and "method" not in msg:
            generation = self._server_requests.pop(id_key(msg.get("id")), None)
            if generation is not None and generation != self._generation:
                logger.debug("dropped an answer to a request of an expired session")
                return
        if isinstance(msg, dict) and msg.get("method") == "notifications/cancelled":
            params = msg.get("params") or {}
            call_or_none = self._calls.get(id_key(params.get("requestId")))
            if call_or_none is not None:
                call_or_none.cancel_sent = True
                # Never let the cancel overtake its request's POST.
                with trio.move_on_after(self.close_timeout):
                    await call_or_none.started.wait()
        await self._post_simple(data, self.url)
        if isinstance(msg, dict) and msg.get("method") == "notifications/initialized":
            self._initialized_frame = data
        if (
            isinstance(msg, dict)
            and msg.get("method") == "notifications/initialized"
            and self.open_get_stream
            and not self._get_started
        ):
            self._get_started = True
            await self._open_get_stream()

    async def receive(self) -> bytes:
        if self._closed:
            raise trio.ClosedResourceError("transport closed")
        try:
            return await self._in_receive.receive()
        except trio.ClosedResourceError:
            raise trio.ClosedResourceError("transport closed") from None

    async def aclose(self) -> None:
        """Tell the server: cancels for unanswered requests, then DELETE (bounded)."""
        if self._closed:
            await trio.lowlevel.checkpoint()
            return
        self._closed = True
        with trio.CancelScope(shield=True), trio.move_on_after(self.close_timeout):
            await trio.lowlevel.checkpoint()  # a checkpoint even with nothing to tell
            if self.session_id is not None and not self.session_expired:
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
                    await self._quiet(self._post_simple(note, self.url))
                if self.terminate_on_close and self.legacy_endpoint is None:
                    await self._quiet(delete(self))
        for scope in list(self._scopes):
            scope.cancel(reason="HTTP transport closed")
        self._in_send.close()
        self._in_receive.close()

    # --------------------------------------------------------------- helpers

    async def _quiet(self, coro: Any) -> None:
        try:
            await coro
        except (httpx.HTTPError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            logger.debug("ignored while closing: %r", exc)

    def _spawn(self, fn: Any, *args: Any) -> None:
        async def run() -> None:
            with trio.CancelScope() as scope:
                self._scopes.add(scope)
                try:
                    await fn(*args)
                finally:
                    self._scopes.discard(scope)

        self._nursery.start_soon(run)

    def _headers(self, accept: str) -> dict[str, str]:
        """Headers of a request on the current session."""
        headers = dict(self.headers)
        headers["accept"] = accept
        if self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
        if self.protocol_version is not None:
            headers["mcp-protocol-version"] = self.protocol_version
        return headers

    def _push(self, data: bytes) -> None:
        try:
            msg = orjson.loads(data)
        except orjson.JSONDecodeError:
            msg = None
        if self.reinitialize and isinstance(msg, dict) and "method" in msg and "id" in msg:
            self._server_requests[id_key(msg["id"])] = self._generation
        if isinstance(msg, dict) and "method" not in msg:
            key = id_key(msg.get("id"))
            call = self._calls.get(key)
            if call is not None:
                call.answered = True
            if key == self._initialize_key:
                result = msg.get("result")
                if isinstance(result, dict) and isinstance(result.get("protocolVersion"), str):
                    self.protocol_version = result["protocolVersion"]
        try:
            self._in_send.send_nowait(data)
        except trio.WouldBlock:
            self._nursery.start_soon(self._push_later, data)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass

    async def _push_later(self, data: bytes) -> None:
        with suppress(trio.ClosedResourceError, trio.BrokenResourceError):
            await self._in_send.send(data)

    def _fail(self, call: _Call, message: str) -> None:
        if call.answered:
            return
        self._push(
            orjson.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": call.request_id,
                    "error": {"code": HTTP_ERROR, "message": message},
                }
            )
        )

    async def _open_get_stream(self) -> None:
        """Open the standalone GET stream (HT-18) and wait (bounded) for its answer.

        Waiting until the server has answered the GET means that a
        server-initiated request sent right after the handshake finds the
        stream open instead of being dropped by the server (seen with the
        conformance harness's elicitation scenario).
        """
        answered = trio.Event()  # set once the first answer (or failure) is known
        self._spawn(get_stream, self, answered)
        with trio.move_on_after(self.close_timeout):
            await answered.wait()

    async def _post_simple(self, data: bytes, url: str) -> None:
        """POST a notification or response to *url*; return once it is accepted."""
        if not self._ready.is_set():
            await self._ready.wait()  # e.g. a cancel racing a new session
        generation = self._generation
        had_session = self.session_id is not None
        try:
            response = await self.control.post(
                url,
                content=data,
                headers={**self._headers(ACCEPT_BOTH), "content-type": "application/json"},
            )
        except httpx.HTTPError as exc:
            raise trio.BrokenResourceError(f"HTTP POST failed: {exc!r}") from exc
        if response.status_code == 404 and had_session:
            lost(self, generation)
            if self.reinitialize and not self.session_expired:
                logger.debug("dropped a message to an expired session")
                return
            raise trio.BrokenResourceError("session expired (HTTP 404)")
        if not 200 <= response.status_code < 300:
            logger.warning("server refused a message: HTTP %s", response.status_code)
            raise trio.BrokenResourceError(f"server refused a message: HTTP {response.status_code}")
        # A JSON answer to a notification is unusual; pass it on.
        if response.headers.get("content-type", "").startswith("application/json") and (
            response.content
        ):
            self._push(response.content)


@asynccontextmanager
async def open_http_client(
    url: str,
    *,
    headers: dict[str, str] | None = None,
    http_client: httpx.AsyncClient | None = None,
    legacy_fallback: bool = True,
    terminate_on_close: bool = True,
    reconnect_delay: float = 1.0,
    close_timeout: float = 2.0,
    reinitialize: bool = False,
    **client_options: Any,
) -> AsyncIterator[Any]:
    """Connect to the MCP endpoint at *url*, run the handshake, yield a :class:`~trio_mcp.Client`.

    Args:
        headers: sent with every request (e.g. ``Authorization``).
        http_client: an ``httpx.AsyncClient`` to use (not closed here); by
            default one is made (no redirects followed except same-origin 307/308,
            no read timeout on streams) and closed on exit.
        legacy_fallback: try the 2024-11-05 HTTP+SSE transport when the server
            refuses the initialize POST with 400, 404 or 405 (SS-08).
        terminate_on_close: send DELETE on exit (HT-34).
        reconnect_delay: seconds before reconnecting a stream when the server
            gave no ``retry``.
        close_timeout: bound on the cancels and DELETE sent on exit.
        reinitialize: when the server answers 404 for the session (it ended or
            expired), start a new session instead of ending the client (HT-33):
            calls in flight on the old session fail with "Session expired (HTTP
            404)", later calls go to the new one. Off by default because what the
            server held for the old session (subscriptions, logging level) is
            lost; an application that relies on it re-establishes it. See
            :class:`HttpClientTransport`.
        client_options: passed to :func:`~trio_mcp.open_client`.

    Cancellation:
        Leaving the block (normally, by an error, or by an outer cancel) sends
        ``notifications/cancelled`` for unanswered requests and DELETE, shielded
        and bounded by *close_timeout*, then closes everything.
    """
    from .._client._client import open_client

    own = http_client is None
    # Requests get a pool of their own, kept small: httpcore's pool does work
    # proportional to connections x waiting requests on every request, so 32
    # calls in flight over 16 kept-alive connections cost far less CPU than
    # over 32 or 100 (and more keep-alive than connections means no churn).
    # A request waits for a free connection as long as it takes (pool=None).
    http = http_client or httpx.AsyncClient(
        timeout=httpx.Timeout(30.0, read=None, pool=None),
        follow_redirects=False,
        limits=httpx.Limits(max_connections=16, max_keepalive_connections=16),
    )
    control = (
        None
        if http_client is not None
        else httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None), follow_redirects=False)
    )
    try:
        async with trio.open_nursery() as nursery:
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
            )
            try:
                async with open_client(transport, **client_options) as client:
                    yield client
            finally:
                await transport.aclose()
                nursery.cancel_scope.cancel(reason="HTTP client closed")
    finally:
        if own:
            with trio.CancelScope(shield=True), trio.move_on_after(close_timeout):
                await http.aclose()
                if control is not None:
                    await control.aclose()
