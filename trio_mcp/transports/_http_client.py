"""Streamable HTTP, client side: :func:`open_http_client` on httpx (Trio backend).

:class:`HttpClientTransport` is a :data:`~trio_mcp.Transport`: every frame the
session writes becomes a POST (HT-05); requests are POSTed from their own task,
so many can be in flight, and their answers (``application/json`` or an SSE
stream, HT-09) are read into the session's inbound queue. After the handshake
the standalone GET stream is opened when the server offers it (HT-18).

Faults become answers, never hangs: a non-2xx status fails the pending request
with an error naming the status; a 404 on a session fails the calls in flight
on it with "session expired" and then either ends the transport or, with
``reinitialize=True``, starts a new session (HT-33, see below); a broken SSE
stream that carried an event id is resumed with a GET and ``Last-Event-ID``
after the server's ``retry`` delay (HT-12, HT-25), a bounded number of times.
Redirects are followed only within the endpoint's origin.

Closing sends ``notifications/cancelled`` for requests still unanswered (unless
the session already did) and then DELETE (HT-34), bounded by ``close_timeout``
and shielded, so both also happen when the close is caused by an outer cancel.

When the server refuses the ``initialize`` POST with 400, 404 or 405, the
transport falls back to the 2024-11-05 HTTP+SSE transport (SS-08).

Re-initializing (HT-33, opt-in): on a 404 for the current session the transport
fails every call in flight on that session ("session expired"), holds back new
messages, and runs the handshake again by itself: the ``initialize`` the session
sent first (same capabilities and client info, offering the revision already
negotiated) is POSTed without ``Mcp-Session-Id`` and ``MCP-Protocol-Version``,
the new session id is taken from the answer, ``notifications/initialized`` is
POSTed and the GET stream reopened. Then the held messages go out on the new
session. The :class:`~trio_mcp.Client` above sees only the failed calls; its
negotiated revision stays valid because the new session must agree to it (any
other answer ends the transport as without the option). What the old session
held on the server (subscriptions, logging level) is gone: an application that
depends on it re-establishes it (``reinitializations`` counts new sessions).
Notifications and responses meant for the old session are dropped.

Spec: HT-05, HT-06, HT-09, HT-12, HT-18, HT-25, HT-30, HT-33, HT-34, HT-35, SS-04, SS-08.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing, asynccontextmanager, suppress
from typing import Any, cast
from urllib.parse import urljoin, urlsplit

import httpx
import orjson
import trio

from ._http_common import id_key
from ._sse import SSEParser

logger = logging.getLogger("trio_mcp.http.client")

#: Error code of the errors this transport answers failed requests with.
HTTP_ERROR = -32000
_ACCEPT_BOTH = "application/json, text/event-stream"


class SessionExpired(Exception):
    """The server answered 404 for our session (it ended or expired)."""


#: The error message of calls lost with their session.
EXPIRED = "Session expired (HTTP 404)"


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


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


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
        #: Set once the GET stream's first answer (or failure) is known.
        self._get_answered = trio.Event()
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
                await self._post_request(data, call)  # the session id comes with it
            else:
                self._spawn(self._post_request, data, call)
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
            self._spawn(self._get_stream, self._get_answered)
            # Wait (bounded) until the server has answered the GET, so that a
            # server-initiated request sent right after the handshake finds the
            # stream open instead of being dropped by the server (seen with the
            # conformance harness's elicitation scenario).
            with trio.move_on_after(self.close_timeout):
                await self._get_answered.wait()

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
                    await self._quiet(self._delete())
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

    def _expire(self) -> None:
        """The session is gone for good: fail what is pending and end the inbound side."""
        self.session_expired = True
        for call in list(self._calls.values()):
            self._fail(call, f"{EXPIRED}: open a new client to re-initialize")
        self._in_send.close()

    def _lost(self, generation: int) -> None:
        """404 for the session of *generation* (HT-33).

        Only the first 404 of the current session counts: every call sent on it
        and not answered fails (and its POST is abandoned; it may have run, so it
        is never sent again); then the transport ends or (``reinitialize``)
        starts a new session.
        """
        if generation != self._generation or self.session_expired or self._closed:
            return  # an older session's 404: its calls have already failed
        self._generation += 1
        if not self.reinitialize or self._init_frame is None:
            self._expire()
            return
        for call in list(self._calls.values()):
            if call.generation == generation:
                self._fail(call, f"{EXPIRED}: the call was lost with its session")
                call.scope.cancel(reason="its session is gone")
        self.session_id = None
        self._ready = trio.Event()
        self._spawn(self._start_new_session)

    async def _start_new_session(self) -> None:
        """Run initialize / initialized again, without a session id (HT-33).

        Cancellation: cancelled with the transport; ``send`` callers waiting
        for the new session are then released and get ``ClosedResourceError``.
        """
        ok = False
        try:
            ok = await self._handshake_again()
        except (httpx.HTTPError, orjson.JSONDecodeError) as exc:
            logger.warning("could not start a new session: %r", exc)
        finally:
            if not ok:
                self._expire()
            self._ready.set()
        if ok and self.open_get_stream:
            # As after the first handshake: wait (bounded) for the GET stream.
            self._get_answered = trio.Event()
            self._spawn(self._get_stream, self._get_answered)
            with trio.move_on_after(self.close_timeout):
                await self._get_answered.wait()

    async def _handshake_again(self) -> bool:
        assert self._init_frame is not None
        message = orjson.loads(self._init_frame)
        request_id = f"trio_mcp-reinitialize-{self.reinitializations + 1}"
        message["id"] = request_id
        if self.protocol_version is not None:
            message["params"]["protocolVersion"] = self.protocol_version
        # A fresh start: neither Mcp-Session-Id nor MCP-Protocol-Version.
        headers = {**self.headers, "accept": _ACCEPT_BOTH, "content-type": "application/json"}
        answers: list[Any] = []
        async with self.control.stream(
            "POST", self.url, content=orjson.dumps(message), headers=headers
        ) as response:
            if response.status_code != 200:
                logger.warning("new session refused: HTTP %s", response.status_code)
                return False
            session_id = response.headers.get("mcp-session-id")
            ctype = response.headers.get("content-type", "")
            if ctype.startswith("application/json"):
                answers.append(orjson.loads(await response.aread()))
            elif ctype.startswith("text/event-stream"):
                parser = SSEParser()
                async with aclosing(
                    cast(AsyncGenerator[bytes, None], response.aiter_raw())
                ) as chunks:
                    async for chunk in chunks:
                        for event in parser.feed(chunk):
                            if event.event == "message" and event.data:
                                answers.append(orjson.loads(event.data))
        answer = next(
            (a for a in answers if isinstance(a, dict) and a.get("id") == request_id), None
        )
        for other in answers:
            if other is not answer:  # e.g. a ping from the new session
                self._push(orjson.dumps(other))
        result = answer.get("result") if answer is not None else None
        if not isinstance(result, dict) or result.get("protocolVersion") != self.protocol_version:
            logger.warning("the new session did not agree to %s: %r", self.protocol_version, answer)
            return False
        self.session_id = session_id
        note = self._initialized_frame or orjson.dumps(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}
        )
        response = await self.control.post(
            self.url,
            content=note,
            headers={**self._headers(_ACCEPT_BOTH), "content-type": "application/json"},
        )
        if not 200 <= response.status_code < 300:
            logger.warning("new session refused initialized: HTTP %s", response.status_code)
            return False
        self.reinitializations += 1
        logger.info("started a new session after HTTP 404 (%d so far)", self.reinitializations)
        return True

    async def _post_simple(self, data: bytes, url: str) -> None:
        if not self._ready.is_set():
            await self._ready.wait()  # e.g. a cancel racing a new session
        generation = self._generation
        had_session = self.session_id is not None
        try:
            response = await self.control.post(
                url,
                content=data,
                headers={**self._headers(_ACCEPT_BOTH), "content-type": "application/json"},
            )
        except httpx.HTTPError as exc:
            raise trio.BrokenResourceError(f"HTTP POST failed: {exc!r}") from exc
        if response.status_code == 404 and had_session:
            self._lost(generation)
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

    async def _post_request(self, data: bytes, call: _Call) -> None:
        """POST a request and read its answer into the inbound queue.

        A 404 fails the call even with ``reinitialize``: the server also answers
        404 to a request that was running when its session ended, so the call
        may have run and is never sent again (HT-33).
        """
        key = id_key(call.request_id)
        try:
            with call.scope:
                await self._post_once(data, call, None)
        except httpx.HTTPError as exc:
            self._fail(call, f"HTTP request failed: {exc!r}")
        finally:
            call.started.set()
            if not call.answered and not call.detached:
                self._fail(call, "The server ended the response without answering")
            self._calls.pop(key, None)

    async def _post_once(self, data: bytes, call: _Call, url: str | None) -> None:
        """One POST of a request (and one more after a same-origin redirect)."""
        key = id_key(call.request_id)
        target = url or self.url
        if not self._ready.is_set():
            await self._ready.wait()
            if self.session_expired or self._closed:
                self._fail(call, f"{EXPIRED}: no new session could be started")
                return
        call.generation = generation = self._generation
        had_session = self.session_id is not None
        try:
            async with self.http.stream(
                "POST",
                target,
                content=data,
                headers={**self._headers(_ACCEPT_BOTH), "content-type": "application/json"},
            ) as response:
                call.started.set()
                status = response.status_code
                if status in (307, 308) and url is None:
                    location = urljoin(target, response.headers.get("location", ""))
                    if _origin(location) != _origin(self.url):
                        self._fail(call, f"Refused a cross-origin redirect (HTTP {status})")
                        return
                    self.url = location
                    await self._post_once(data, call, location)
                    return
                if (
                    key == self._initialize_key
                    and self.legacy_fallback
                    and self.session_id is None
                    and status in (400, 404, 405)
                ):
                    await self._fall_back(data, call)
                    return
                if status == 404 and had_session:
                    self._lost(generation)
                    self._fail(call, f"{EXPIRED}: the call was lost with its session")
                    return
                if not 200 <= status < 300:
                    body = await response.aread()
                    self._fail(call, f"HTTP {status}: {body[:200].decode('utf-8', 'replace')}")
                    return
                sid = response.headers.get("mcp-session-id")
                if sid is not None and self.session_id is None:
                    self.session_id = sid
                ctype = response.headers.get("content-type", "")
                if ctype.startswith("application/json"):
                    body = await response.aread()
                    self._push_json(body)
                elif ctype.startswith("text/event-stream"):
                    last_id, retry = await self._read_sse(response, call)
                    if not call.answered and last_id is not None:
                        await self._resume(call, last_id, retry)
                else:
                    self._fail(call, f"Unexpected response content type {ctype!r} (HTTP {status})")
                    return
        finally:
            call.started.set()
        if not call.answered and had_session and not call.cancel_sent:
            # The stream ended without an answer (and not because we cancelled):
            # if it is because the session ended, say so (and start a new one
            # when allowed).
            if generation == self._generation:
                await self._probe_session(generation)
            if generation != self._generation:
                self._fail(call, f"{EXPIRED}: the call was lost with its session")

    async def _probe_session(self, generation: int) -> None:
        """Ask whether the session still exists (a ping): 404 means it is gone.

        Cancellation: an ordinary request; cancelling it leaves things as they were.
        """
        self._probes += 1
        ping = orjson.dumps(
            {"jsonrpc": "2.0", "id": f"trio_mcp-probe-{self._probes}", "method": "ping"}
        )
        try:
            response = await self.control.post(
                self.url,
                content=ping,
                headers={**self._headers(_ACCEPT_BOTH), "content-type": "application/json"},
            )
        except httpx.HTTPError as exc:
            logger.debug("session probe failed: %r", exc)
            return
        if response.status_code == 404:
            self._lost(generation)

    def _push_json(self, body: bytes) -> None:
        try:
            parsed = orjson.loads(body)
        except orjson.JSONDecodeError:
            self._push(body)  # the session answers the parse error
            return
        if isinstance(parsed, list):
            for item in parsed:
                self._push(orjson.dumps(item))
        else:
            self._push(body)

    async def _read_sse(
        self, response: httpx.Response, call: _Call | None
    ) -> tuple[str | None, float | None]:
        """Push every ``message`` event; return the last event id and retry (s).

        Reads until the server ends the stream (it does after the response,
        HT-16): leaving httpx's generators early leaves inner ones unclosed.
        """
        parser = SSEParser()
        retry: float | None = None
        try:
            # aclosing: leaving early must close httpx's generator now, not at GC.
            async with aclosing(cast(AsyncGenerator[bytes, None], response.aiter_raw())) as chunks:
                async for chunk in chunks:
                    for event in parser.feed(chunk):
                        if event.retry is not None:
                            retry = event.retry / 1000
                        if event.event == "message" and event.data:
                            self._push(event.data.encode())
        except httpx.HTTPError as exc:
            logger.debug("SSE stream broke: %r", exc)
        return parser.last_event_id, retry

    async def _resume(self, call: _Call, last_id: str, retry: float | None) -> None:
        """Reconnect with GET + Last-Event-ID until the call is answered (HT-25)."""
        attempts = 0
        generation = call.generation
        while not call.answered and attempts < self.max_reconnects:
            attempts += 1
            await trio.sleep(retry if retry is not None else self.reconnect_delay)
            if generation != self._generation:
                self._fail(call, f"{EXPIRED}: the call was lost with its session")
                return
            headers = self._headers("text/event-stream")
            headers["last-event-id"] = last_id
            try:
                async with self.http.stream("GET", self.url, headers=headers) as response:
                    if response.status_code == 404 and generation is not None:
                        self._lost(generation)
                        self._fail(call, f"{EXPIRED}: the call was lost with its session")
                        return
                    if response.status_code != 200:
                        self._fail(call, f"Resuming the stream failed: HTTP {response.status_code}")
                        return
                    new_id, new_retry = await self._read_sse(response, call)
                    if new_id is not None and new_id != last_id:
                        last_id, attempts = new_id, 0
                    retry = new_retry if new_retry is not None else retry
            except httpx.HTTPError as exc:
                logger.debug("resume failed: %r", exc)

    async def _get_stream(self, answered: trio.Event) -> None:
        """The standalone GET stream, reconnected with Last-Event-ID (HT-18, HT-21)."""
        try:
            await self._get_stream_loop(answered)
        finally:
            answered.set()  # nobody waits forever for a GET that failed

    async def _get_stream_loop(self, answered: trio.Event) -> None:
        last_id: str | None = None
        retry: float | None = None
        failures = 0
        generation = self._generation
        while (
            not self._closed and failures <= self.max_reconnects and generation == self._generation
        ):
            headers = self._headers("text/event-stream")
            if last_id is not None:
                headers["last-event-id"] = last_id
            try:
                async with self.control.stream("GET", self.url, headers=headers) as response:
                    status = response.status_code
                    answered.set()
                    if status == 404 and self.session_id is not None:
                        self._lost(generation)
                        return
                    if status != 200:
                        # 405: no GET stream offered; 404 without a session: the
                        # server keeps no session, so it has no stream for us.
                        logger.debug("no GET stream: HTTP %s", status)
                        return
                    new_id, new_retry = await self._read_sse(response, None)
                    failures = 0 if new_id != last_id else failures + 1
                    last_id = new_id or last_id
                    retry = new_retry if new_retry is not None else retry
            except httpx.HTTPError as exc:
                failures += 1
                logger.debug("GET stream failed: %r", exc)
            await trio.sleep(retry if retry is not None else self.reconnect_delay)

    async def _delete(self) -> None:
        response = await self.control.delete(self.url, headers=self._headers(_ACCEPT_BOTH))
        if response.status_code not in (200, 202, 204, 404, 405):
            logger.debug("DELETE answered HTTP %s", response.status_code)

    # --------------------------------------------------------------- legacy

    async def _fall_back(self, data: bytes, call: _Call) -> None:
        """The server is a 2024-11-05 HTTP+SSE server: GET its stream, then POST
        to the endpoint it names (SS-08)."""
        endpoint: str | None = await self._nursery.start(self._legacy_stream)
        if endpoint is None:
            self._fail(call, "The server refused initialize and offers no HTTP+SSE endpoint")
            return
        self.legacy_endpoint = endpoint
        call.detached = True
        try:
            await self._post_simple(data, endpoint)
        except trio.BrokenResourceError as exc:
            self._fail(call, str(exc))

    async def _legacy_stream(self, *, task_status: trio.TaskStatus[str | None]) -> None:
        with trio.CancelScope() as scope:
            self._scopes.add(scope)
            started = False
            try:
                headers = {**self.headers, "accept": "text/event-stream"}
                async with self.control.stream("GET", self.url, headers=headers) as response:
                    if response.status_code != 200:
                        task_status.started(None)
                        return
                    parser = SSEParser()
                    async with aclosing(
                        cast(AsyncGenerator[bytes, None], response.aiter_raw())
                    ) as chunks:
                        async for chunk in chunks:
                            for event in parser.feed(chunk):
                                if event.event == "endpoint" and not started:
                                    endpoint = urljoin(self.url, event.data.strip())
                                    if _origin(endpoint) != _origin(self.url):
                                        logger.warning("refused a cross-origin legacy endpoint")
                                        task_status.started(None)
                                        return
                                    started = True
                                    task_status.started(endpoint)
                                elif event.event == "message" and event.data:
                                    self._push(event.data.encode())
            except httpx.HTTPError as exc:
                logger.debug("legacy SSE stream failed: %r", exc)
            finally:
                self._scopes.discard(scope)
                if not started:
                    task_status.started(None)
                else:
                    self._in_send.close()  # the stream is the session


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
    from .._client import open_client

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
