"""Streamable HTTP, client side: :class:`SessionKeeper`, the session's life after it starts.

The keeper owns what the client knows about the session it talks to: the
endpoint URL, the ``Mcp-Session-Id`` and negotiated revision (so it builds every
request's headers), the generation counter, and whether the session is usable,
being replaced or gone. It answers the questions every POST asks (headers,
"wait until a session is ready") and does the work that belongs to the session
rather than to one request: a 404 for the session (:meth:`SessionKeeper.lost`),
re-initializing, asking whether the session still exists
(:meth:`SessionKeeper.probe`), the standalone GET stream, ending the session
with DELETE (HT-34), and falling back to the HTTP+SSE transport (SS-08).

It never sees the transport: it is handed the control ``httpx`` client and four
callables (push an inbound frame, fail the calls of a generation, end the
inbound side, run a task in the transport's nursery).

Re-initializing (HT-33, opt-in): on a 404 for the current session the keeper
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

Falling back (SS-08): when the server refuses the ``initialize`` POST with 400,
404 or 405, the keeper GETs the same URL expecting an ``endpoint`` event, and
from then on every message is POSTed to that endpoint (same origin only); that
SSE stream carries the server's messages and is the session: when it ends, the
inbound side ends. A GET answered otherwise, a stream without an ``endpoint``
event, or an endpoint on another origin is a refused handshake
(:class:`~trio_mcp.HandshakeRefused`, raised by the caller with what it tried).

Spec: HT-12, HT-18, HT-21, HT-33, HT-34, SS-04, SS-08.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from typing import Any, cast
from urllib.parse import urljoin, urlsplit

import httpx
import orjson
import trio

from ....protocol._codec import DEFAULT_MAX_MESSAGE_SIZE
from ....protocol._head import HEAD_SCAN_SIZE, TAIL_SCAN_SIZE, OversizeFrame, scan_frame
from .._sse import SSEParser

logger = logging.getLogger("trio_mcp.http.client")

#: The error message of calls lost with their session.
EXPIRED = "Session expired (HTTP 404)"
#: Error code of the errors the HTTP client transport answers failed requests with.
HTTP_ERROR = -32000
#: The ``data`` of an error the transport makes up itself (a refused
#: connection, a stream that ended without the answer): nothing of it was
#: received, and a trace or a command line says so instead of showing it as
#: the server's answer or its JSON-RPC code.
LOCAL_ERROR_DATA = {"local": True}
#: The Accept header of every POST and DELETE (HT-06).
ACCEPT_BOTH = "application/json, text/event-stream"

#: Pushes one inbound frame to the session.
Push = Callable[[bytes], None]
#: Runs a task in the transport's nursery, cancelled when the transport closes.
Spawn = Callable[[Callable[[], Awaitable[None]]], None]


def origin(url: str) -> tuple[str, str]:
    """Scheme and authority of *url*: redirects and endpoints must keep the endpoint's."""
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


async def read_sse(
    response: httpx.Response, push: Push, max_size: int = DEFAULT_MAX_MESSAGE_SIZE
) -> tuple[str | None, float | None]:
    """Push every ``message`` event of *response*; return the last event id and retry (s).

    Reads until the server ends the stream (it does after the response,
    HT-16): leaving httpx's generators early leaves inner ones unclosed. A
    broken stream ends the read (the caller decides whether to resume). An
    event whose data is over *max_size* bytes is pushed as the
    :class:`~trio_mcp.protocol._head.OversizeFrame` of its head and tail (never
    buffered whole): the session fails the call it answers.

    Cancellation: a plain read; cancelling it closes the response's generator.
    """
    parser = SSEParser(max_event_size=max_size)
    retry: float | None = None
    try:
        # aclosing: leaving early must close httpx's generator now, not at GC.
        async with aclosing(cast(AsyncGenerator[bytes, None], response.aiter_raw())) as chunks:
            async for chunk in chunks:
                for event in parser.feed(chunk):
                    if event.retry is not None:
                        retry = event.retry / 1000
                    if event.event != "message":
                        continue
                    if event.oversize is not None:
                        push(event.oversize)
                    elif event.data:
                        push(event.data.encode())
    except httpx.HTTPError as exc:
        logger.debug("SSE stream broke: %r", exc)
    return parser.last_event_id, retry


def oversize_answer_key(data: bytes) -> dict[str, Any] | None:
    """For an :class:`~trio_mcp.protocol._head.OversizeFrame` that is a response
    whose id its head or tail names, ``{"id": id}`` (what the transport needs to
    mark that call answered); else None."""
    if type(data) is not OversizeFrame:
        return None
    scan = scan_frame(data, data.tail, data.size)
    if scan is None or scan.is_request:
        return {}
    return {"id": scan.id}


#: An oversize JSON body whose head names no id is read on for its tail up to
#: this many times the bound, 1 MiB at least (as the server drains a POST).
DRAIN_FACTOR = 4


async def read_json(response: httpx.Response, max_size: int) -> bytes:
    """The JSON body of *response*, or, when it is over *max_size* bytes, the
    :class:`~trio_mcp.protocol._head.OversizeFrame` of its head and tail (the
    body is never buffered whole; the session fails the call it answers).

    An oversize body whose head names the id is left unread from there (the
    call fails at once); else it is read on for its tail, up to
    :data:`DRAIN_FACTOR` times the bound. Memory: the bound plus 8 KiB.

    Cancellation: a plain read; cancelling it closes the response's generator.
    """
    chunks: list[bytes] = []
    size = 0
    head = b""
    tail = bytearray()
    early: OversizeFrame | None = None
    # Cancelled rather than left: the cancel runs through httpx's nested
    # generators and ends each of them now, not at GC.
    with trio.CancelScope() as reading:
        async for chunk in response.aiter_bytes():
            if early is not None:
                continue  # cancelled: the next read ends the generators
            size += len(chunk)
            if not head:
                chunks.append(chunk)
                if size <= max_size:
                    continue
                joined = b"".join(chunks)
                chunks.clear()
                head = joined[:HEAD_SCAN_SIZE] or b" "
                tail += joined[-TAIL_SCAN_SIZE:]
                if scan_frame(head, b"", size + 1) is not None:
                    early = OversizeFrame(head, size, max_size)  # the call fails now
                    reading.cancel()
                continue
            tail += chunk[-TAIL_SCAN_SIZE:]
            del tail[: max(0, len(tail) - TAIL_SCAN_SIZE)]
            if size > max(DRAIN_FACTOR * max_size, 1 << 20):
                early = OversizeFrame(head, size, max_size)
                reading.cancel()
    if early is not None:
        return early
    if head:
        return OversizeFrame(head, size, max_size, bytes(tail))
    return b"".join(chunks)


class LegacyOutcome:
    """The outcome of looking for an HTTP+SSE endpoint: the URL, or why there is none."""

    __slots__ = ("found", "problem", "url")

    def __init__(self) -> None:
        self.found = trio.Event()
        self.url: str | None = None
        self.problem = "the stream ended without an endpoint event"

    def accept(self, url: str) -> None:
        self.url = url
        self.found.set()

    def refuse(self, problem: str) -> None:
        self.problem = problem
        self.found.set()


class SessionKeeper:
    """What the client knows about its session, and the work of its life (see the module).

    Cancellation:
        Its tasks run in the transport's nursery (through ``spawn``) and end with
        it; :meth:`post_message`, :meth:`probe` and :meth:`delete` are ordinary
        requests that leave the state as it was when cancelled.
    """

    def __init__(
        self,
        url: str,
        control: httpx.AsyncClient,
        *,
        headers: dict[str, str],
        push: Push,
        fail_calls: Callable[[int | None, str], None],
        end_inbound: Callable[[], None],
        spawn: Spawn,
        reinitialize: bool,
        open_get_stream: bool,
        reconnect_delay: float,
        max_reconnects: int,
        close_timeout: float,
    ) -> None:
        self.url = url
        self._control = control
        self._base_headers = headers
        self._push = push
        self._fail_calls = fail_calls
        self._end_inbound = end_inbound
        self._spawn = spawn
        self.reinitialize = reinitialize
        self.open_get_stream = open_get_stream
        self.reconnect_delay = reconnect_delay
        self.max_reconnects = max_reconnects
        self.close_timeout = close_timeout
        #: The bound on one inbound frame (the transport's ``max_message_size``).
        self.max_message_size = DEFAULT_MAX_MESSAGE_SIZE
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.legacy_endpoint: str | None = None
        self.expired = False
        self.closed = False
        #: Counts sessions: a 404 for generation N moves to N + 1 (HT-33).
        self.generation = 0
        #: Cleared while a new session is being initialized; senders wait.
        self._ready = trio.Event()
        self._ready.set()
        self.init_frame: bytes | None = None
        self.initialized_frame: bytes | None = None
        #: How many new sessions were started after a 404.
        self.reinitializations = 0
        self._probes = 0
        self._get_started = False

    # ------------------------------------------------------------ requests

    @property
    def ready(self) -> bool:
        """False while a new session is being started (messages wait)."""
        return self._ready.is_set()

    async def wait_ready(self) -> None:
        """Block while a new session is being started (returns at once otherwise)."""
        await self._ready.wait()

    def headers(self, accept: str) -> dict[str, str]:
        """Headers of a request on the current session."""
        headers = dict(self._base_headers)
        headers["accept"] = accept
        if self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
        if self.protocol_version is not None:
            headers["mcp-protocol-version"] = self.protocol_version
        return headers

    def post_headers(self) -> dict[str, str]:
        """Headers of a JSON POST on the current session."""
        return {**self.headers(ACCEPT_BOTH), "content-type": "application/json"}

    async def post_message(self, data: bytes, url: str) -> None:
        """POST a notification or response to *url*; return once it is accepted.

        Raises ``BrokenResourceError`` when the POST fails or is refused (a 404
        for the session is dropped instead when a new session is started).

        Cancellation: an ordinary request; cancelled, the message may or may
        not have reached the server.
        """
        if not self._ready.is_set():
            await self._ready.wait()  # e.g. a cancel racing a new session
        generation = self.generation
        had_session = self.session_id is not None
        try:
            response = await self._control.post(url, content=data, headers=self.post_headers())
        except httpx.HTTPError as exc:
            raise trio.BrokenResourceError(f"HTTP POST failed: {exc!r}") from exc
        if response.status_code == 404 and had_session:
            self.lost(generation)
            if self.reinitialize and not self.expired:
                logger.debug("dropped a message to an expired session")
                return
            raise trio.BrokenResourceError("session expired (HTTP 404)")
        if not 200 <= response.status_code < 300:
            refusal = f"server refused a message: {describe_answer(response, response.content)}"
            logger.warning("%s", refusal)
            raise trio.BrokenResourceError(refusal)
        # A JSON answer to a notification is unusual; pass it on.
        if response.headers.get("content-type", "").startswith("application/json") and (
            response.content
        ):
            self._push(response.content)

    # ---------------------------------------------------------- the session

    def close(self) -> None:
        """The transport is closing: no new session, no more GET stream."""
        self.closed = True

    def redirected(self, url: str) -> None:
        """A same-origin redirect moved the endpoint to *url* (for every later request)."""
        self.url = url

    def note_initialize(self, data: bytes) -> None:
        """Keep the session's ``initialize`` frame: a new session sends it again (HT-33)."""
        self.init_frame = data

    def note_negotiated(self, version: str) -> None:
        """``initialize`` was answered with *version*: sent as ``MCP-Protocol-Version``."""
        self.protocol_version = version

    def adopt(self, session_id: str | None) -> None:
        """Take the session id of the first answer that carries one."""
        if session_id is not None and self.session_id is None:
            self.session_id = session_id

    async def note_initialized(self, data: bytes) -> None:
        """``notifications/initialized`` was accepted: keep it, open the GET stream once.

        Cancellation: the wait for the GET stream's answer is bounded by
        ``close_timeout``; cancelling it leaves the stream to the transport.
        """
        self.initialized_frame = data
        if self.open_get_stream and not self._get_started:
            self._get_started = True
            await self._open_get_stream()

    async def _open_get_stream(self) -> None:
        """Open the standalone GET stream (HT-18) and wait (bounded) for its answer.

        Waiting until the server has answered the GET means that a
        server-initiated request sent right after the handshake finds the
        stream open instead of being dropped by the server.
        """
        answered = trio.Event()  # set once the first answer (or failure) is known

        async def run() -> None:
            try:
                await self._get_stream(answered)
            finally:
                answered.set()  # nobody waits forever for a GET that failed

        self._spawn(run)
        with trio.move_on_after(self.close_timeout):
            await answered.wait()

    def expire(self) -> None:
        """The session is gone for good: fail what is pending and end the inbound side."""
        self.expired = True
        self._fail_calls(None, f"{EXPIRED}: open a new client to re-initialize")
        self._end_inbound()

    def lost(self, generation: int) -> None:
        """404 for the session of *generation* (HT-33).

        Only the first 404 of the current session counts: every call sent on it
        and not answered fails (and its POST is abandoned; it may have run, so it
        is never sent again); then the transport ends or (``reinitialize``)
        starts a new session.
        """
        if generation != self.generation or self.expired or self.closed:
            return  # an older session's 404: its calls have already failed
        self.generation += 1
        if not self.reinitialize or self.init_frame is None:
            self.expire()
            return
        self._fail_calls(generation, f"{EXPIRED}: the call was lost with its session")
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
                self.expire()
            self._ready.set()
        if ok and self.open_get_stream:
            # As after the first handshake: wait (bounded) for the GET stream.
            await self._open_get_stream()

    async def _handshake_again(self) -> bool:
        assert self.init_frame is not None
        message = orjson.loads(self.init_frame)
        request_id = f"trio_mcp-reinitialize-{self.reinitializations + 1}"
        message["id"] = request_id
        if self.protocol_version is not None:
            message["params"]["protocolVersion"] = self.protocol_version
        # A fresh start: neither Mcp-Session-Id nor MCP-Protocol-Version.
        headers = {**self._base_headers, "accept": ACCEPT_BOTH, "content-type": "application/json"}
        answers: list[Any] = []
        frames: list[bytes] = []  # as they came: orjson may not write a parsed one back

        def collect(data: bytes) -> None:
            answers.append(orjson.loads(data))
            frames.append(data)

        async with self._control.stream(
            "POST", self.url, content=orjson.dumps(message), headers=headers
        ) as response:
            if response.status_code != 200:
                logger.warning("new session refused: HTTP %s", response.status_code)
                return False
            session_id = response.headers.get("mcp-session-id")
            ctype = response.headers.get("content-type", "")
            if ctype.startswith("application/json"):
                collect(await response.aread())
            elif ctype.startswith("text/event-stream"):
                await read_sse(response, collect)
        answer = next(
            (a for a in answers if isinstance(a, dict) and a.get("id") == request_id), None
        )
        for other, frame in zip(answers, frames, strict=True):
            if other is not answer:  # e.g. a ping from the new session
                self._push(frame)
        result = answer.get("result") if answer is not None else None
        if not isinstance(result, dict) or result.get("protocolVersion") != self.protocol_version:
            logger.warning("the new session did not agree to %s: %r", self.protocol_version, answer)
            return False
        self.session_id = session_id
        note = self.initialized_frame or orjson.dumps(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}
        )
        response = await self._control.post(self.url, content=note, headers=self.post_headers())
        if not 200 <= response.status_code < 300:
            logger.warning("new session refused initialized: HTTP %s", response.status_code)
            return False
        self.reinitializations += 1
        logger.info("started a new session after HTTP 404 (%d so far)", self.reinitializations)
        return True

    async def probe(self, generation: int) -> None:
        """Ask whether the session still exists (a ping): 404 means it is gone.

        Cancellation: an ordinary request; cancelling it leaves things as they were.
        """
        self._probes += 1
        ping = orjson.dumps(
            {"jsonrpc": "2.0", "id": f"trio_mcp-probe-{self._probes}", "method": "ping"}
        )
        try:
            response = await self._control.post(self.url, content=ping, headers=self.post_headers())
        except httpx.HTTPError as exc:
            logger.debug("session probe failed: %r", exc)
            return
        if response.status_code == 404:
            self.lost(generation)

    async def delete(self, via: httpx.AsyncClient | None = None) -> None:
        """End the session on the server (HT-34); 404 and 405 are fine answers.

        *via*: the client to send it with (None: the control client)."""
        client = self._control if via is None else via
        response = await client.delete(self.url, headers=self.headers(ACCEPT_BOTH))
        if response.status_code not in (200, 202, 204, 404, 405):
            logger.debug("DELETE answered HTTP %s", response.status_code)

    # ---------------------------------------------------------- GET stream

    async def _get_stream(self, answered: trio.Event) -> None:
        """The standalone GET stream, reconnected with Last-Event-ID (HT-18, HT-21).

        Gives up after ``max_reconnects`` reconnections in a row that bring no
        new event, and stops when its session is gone: a 404 there means the
        session was lost (HT-33).
        """
        last_id: str | None = None
        retry: float | None = None
        failures = 0
        generation = self.generation
        while not self.closed and failures <= self.max_reconnects and generation == self.generation:
            headers = self.headers("text/event-stream")
            if last_id is not None:
                headers["last-event-id"] = last_id
            try:
                async with self._control.stream("GET", self.url, headers=headers) as response:
                    status = response.status_code
                    answered.set()
                    if status == 404 and self.session_id is not None:
                        self.lost(generation)
                        return
                    if status != 200:
                        # 405: no GET stream offered; 404 without a session: the
                        # server keeps no session, so it has no stream for us.
                        logger.debug("no GET stream: HTTP %s", status)
                        return
                    new_id, new_retry = await read_sse(response, self._push, self.max_message_size)
                    failures = 0 if new_id != last_id else failures + 1
                    last_id = new_id or last_id
                    retry = new_retry if new_retry is not None else retry
            except httpx.HTTPError as exc:
                failures += 1
                logger.debug("GET stream failed: %r", exc)
            await trio.sleep(retry if retry is not None else self.reconnect_delay)

    # ------------------------------------------------------------- legacy

    async def find_legacy_endpoint(self) -> LegacyOutcome:
        """GET the URL as a 2024-11-05 HTTP+SSE stream and wait for its ``endpoint`` event.

        On success the stream goes on in the transport's nursery, carrying the
        server's messages, and every later message is POSTed to the endpoint
        (:attr:`legacy_endpoint`); when the stream ends, the inbound side ends.
        Otherwise the returned outcome says what the GET got.

        Cancellation: cancelling the wait leaves the stream task to the
        transport's nursery (it ends when the transport closes).
        """
        outcome = LegacyOutcome()
        self._spawn(lambda: self._legacy_stream(outcome))
        await outcome.found.wait()
        if outcome.url is not None:
            self.legacy_endpoint = outcome.url
        return outcome

    async def _legacy_stream(self, outcome: LegacyOutcome) -> None:
        try:
            headers = {**self._base_headers, "accept": "text/event-stream"}
            async with self._control.stream("GET", self.url, headers=headers) as response:
                if response.status_code != 200:
                    body = await head_of_body(response)
                    outcome.refuse(f"answered {describe_answer(response, body)}")
                    return
                parser = SSEParser(max_event_size=self.max_message_size)
                # Cancelled rather than left: the cancel runs through httpx's
                # nested generators and ends each of them now, not at GC.
                with trio.CancelScope() as reading:
                    async for chunk in response.aiter_raw():
                        for event in parser.feed(chunk):
                            if event.event == "endpoint" and not outcome.found.is_set():
                                endpoint = urljoin(self.url, event.data.strip())
                                if origin(endpoint) != origin(self.url):
                                    logger.warning("refused a cross-origin legacy endpoint")
                                    outcome.refuse(
                                        f"named an endpoint on another origin ({endpoint})"
                                    )
                                    reading.cancel()
                                    break
                                outcome.accept(endpoint)
                            elif event.event == "message" and event.oversize is not None:
                                self._push(event.oversize)
                            elif event.event == "message" and event.data:
                                self._push(event.data.encode())
        except httpx.HTTPError as exc:
            logger.debug("legacy SSE stream failed: %r", exc)
            if not outcome.found.is_set():
                outcome.refuse(f"failed: {exc!r}")
        finally:
            if outcome.url is not None:
                self._end_inbound()  # the stream is the session
            elif not outcome.found.is_set():
                outcome.refuse(outcome.problem)


#: Bytes of a refusing answer read to describe it.
DESCRIBED_BYTES = 4096


async def head_of_body(response: httpx.Response) -> bytes:
    """The first :data:`DESCRIBED_BYTES` of *response*'s body (enough to describe it).

    Cancellation: a plain read; the rest of the body is left unread.
    """
    head = b""
    # Cancelled rather than left: the cancel runs through httpx's nested
    # generators and ends each of them now, not at GC.
    with trio.CancelScope() as reading:
        async for chunk in response.aiter_bytes():
            head += chunk
            if len(head) >= DESCRIBED_BYTES:
                reading.cancel()
    return head[:DESCRIBED_BYTES]


def describe_answer(response: httpx.Response, body: bytes) -> str:
    """What a refusing server answered, in words: status, then a JSON-RPC error,
    an HTML page, an empty body or the start of the text."""
    status = f"HTTP {response.status_code}"
    text = body.strip()
    if not text:
        return f"{status} with an empty body"
    ctype = response.headers.get("content-type", "")
    error = rpc_error(body)
    if error is not None:
        return f"{status} with JSON-RPC error {error.get('code')}: {error.get('message')}"
    if ctype.startswith("text/html") or text[:1] == b"<":
        return f"{status} with an HTML page"
    return f"{status} ({ctype or 'no content type'}): {text[:200].decode('utf-8', 'replace')}"


def rpc_error(body: bytes) -> dict[str, Any] | None:
    """The ``error`` member of *body* if it is a JSON-RPC error response, else None."""
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    error = parsed.get("error") if isinstance(parsed, dict) else None
    return error if isinstance(error, dict) else None
