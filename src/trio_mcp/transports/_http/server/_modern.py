"""Streamable HTTP, server side: a 2026-07-28 POST, served statelessly.

In the modern era every request is its own POST and nothing lives between
requests (HM-01, HM-12, HM-31): :class:`ModernPost` runs each request in a
one-request session of its own (made by the application's stateless handler)
for as long as the POST lasts, in the POST's task, and writes its answer. The
session has no reader task: the POST feeds it the one frame it carries
(``Session.feed``) and tells it when the client side ended (``feed_eof``). What it adds to the
checks every POST gets (path, Host, Origin, ``Content-Type``, ``Accept``,
size, JSON, envelope: see ``_http_endpoint``):

* the body is exactly one request or notification (HM-05; 400 and -32600
  otherwise); a notification is accepted with 202 and no body (HM-06);
* the request-metadata headers agree with the body (HM-15, HM-19, HM-21,
  HM-22, HM-24, HM-28; ``protocol/_headers.header_mismatch``): 400 and
  -32020 with the request's id otherwise. ``Mcp-Param-*`` are checked
  against the called tool's ``x-mcp-header`` annotations, which the
  application asks of *tool_headers*. A body that names no version, under no
  ``MCP-Protocol-Version`` header, is left to the session, which refuses it
  for its missing ``_meta`` (-32602, ME-07);
* ``Mcp-Session-Id`` and ``Last-Event-ID`` are never read (HM-31);
* the answer: the response head waits for the request's first message, up to
  *head_deferral* seconds. A request answered first (the usual quick one, and
  every refusal) gets one ``application/json`` body whose status says what the
  error is (:func:`modern_status`: 404 for -32601, HM-17; 400 for -32020,
  -32021, -32022, -32600 and a -32602 for missing ``_meta``, §27); anything
  else gets an SSE stream (200, ``X-Accel-Buffering: no``, HM-11) of the
  request's notifications, then its response, which ends it (HM-08, HM-10),
  with comment keep-alives every *keepalive* seconds (a ``subscriptions/listen``
  stream stays open until either side ends it, and is SSE even in JSON response
  mode, which could never send its one body). An error found after the head
  went out travels on the stream (status 200).
* **Closing the response is cancellation** (HM-13, CN-13, CN-16): when the
  client disconnects, the session is told its peer is gone, so the request's
  cancel scope is cancelled at once (its record ends CANCELLED, origin
  ``transport``) and nothing more is written for it; the POST returns only
  after the session (and so the handler) has stopped.

Spec: HM-01, HM-05, HM-06, HM-07, HM-08, HM-09, HM-10, HM-11, HM-12, HM-13,
HM-15, HM-17, HM-19, HM-21, HM-22, HM-24, HM-28, HM-31, CN-13, CN-16.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import orjson
import trio

from ...._errors import SessionClosed
from ...._transport import ANONYMOUS, Caller, Identity
from ....protocol._errors import ErrorCode
from ....protocol._headers import HeaderAnnotation, header_mismatch
from .._common import error_body
from .._sse import format_event
from ._asgi import (
    JSON,
    PostedMessage,
    Receive,
    Send,
    TrackedSend,
    refuse,
    respond,
    sse_headers,
    stream_sse,
    wait_for_wake_or_disconnect,
)
from ._transport import END, NOTHING, HttpServerTransport, ResponseQueue, Stream

logger = logging.getLogger("trio_mcp.http")

#: The ``_meta`` key of a request's protocol version (ME-06).
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"

#: Seconds a modern POST's response head waits for the request's first message.
MODERN_HEAD_DEFERRAL = 2.0
#: Seconds between SSE keep-alive comments on a quiet modern stream.
MODERN_KEEPALIVE = 15.0
#: Seconds a listen POST whose server is stopping has to send what its
#: session wrote last (the final result) to a client that may not be reading.
FINAL_EVENTS_GRACE = 1.0

#: The ``x-mcp-header`` annotations of a tool, by name (empty: none, or no such tool).
ToolHeaders = Callable[[str], Sequence[HeaderAnnotation]]
#: What :meth:`ModernPost._first_message` returns when no message came within
#: the head deferral, and when the client disconnected first.
_SLOW: Any = object()
_LEFT: Any = object()

#: JSON-RPC errors whose HTTP status is 400 in 2026-07-28 (§27).
_BAD_REQUEST = frozenset(
    {
        int(ErrorCode.HEADER_MISMATCH),
        int(ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY),
        int(ErrorCode.UNSUPPORTED_PROTOCOL_VERSION),
        int(ErrorCode.INVALID_REQUEST),
        int(ErrorCode.PARSE_ERROR),
    }
)


def body_version(parsed: Any) -> str | None:
    """The protocol version a POSTed message names in its ``_meta`` (ME-06)."""
    if not isinstance(parsed, dict):
        return None
    params = parsed.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(VERSION_KEY) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


def modern_status(frame: bytes) -> int:
    """The HTTP status of a modern request answered in one JSON body (§27).

    404 for -32601 (HM-17: the JSON-RPC body tells it from a legacy server's
    404); 400 for HeaderMismatch, MissingRequiredClientCapability,
    UnsupportedProtocolVersion, an invalid request and missing ``_meta``
    (-32602 whose ``data`` names what is missing, ME-07); 200 for a result and
    for every other error (an unknown tool is an answer, not a transport
    failure).
    """
    try:
        message = orjson.loads(frame)
    except orjson.JSONDecodeError:
        return 200
    error = message.get("error") if isinstance(message, dict) else None
    if not isinstance(error, dict):
        return 200
    code = error.get("code")
    if code == ErrorCode.METHOD_NOT_FOUND:
        return 404
    if code in _BAD_REQUEST:
        return 400
    data = error.get("data")
    if code == ErrorCode.INVALID_PARAMS and isinstance(data, dict) and "missing" in data:
        return 400
    return 200


class ModernPost:
    """The handler of a 2026-07-28 POST (see the module docstring).

    Cancellation:
        Cancelling :meth:`handle` (the HTTP request ended) ends the request's
        session, which cancels the request; the POST returns when the session
        has stopped.
    """

    __slots__ = ("_open_stateless", "_tool_headers", "head_deferral", "json_response", "keepalive")

    def __init__(
        self,
        open_stateless: OpenStateless,
        *,
        tool_headers: ToolHeaders | None,
        json_response: bool,
        head_deferral: float = MODERN_HEAD_DEFERRAL,
        keepalive: float | None = MODERN_KEEPALIVE,
    ) -> None:
        self._open_stateless = open_stateless
        self._tool_headers = tool_headers
        self.json_response = json_response
        self.head_deferral = head_deferral
        self.keepalive = keepalive

    async def handle(
        self,
        receive: Receive,
        send: Send,
        headers: Sequence[tuple[bytes, bytes]],
        posted: PostedMessage,
        opening_version: str | None,
        *,
        caller: Caller = ANONYMOUS,
    ) -> None:
        """Serve one modern POST whose body passed the shared checks.

        *caller* is who sent it: its authenticated principal (the server binds
        tasks to it, TK-18) and verified token (``ctx.auth``), if any; the
        POST's one-request session is opened with it.

        *opening_version* is the revision the session opens in (the header's
        or the body's, or our newest; None: the connection decides): each
        request is still checked against its own ``_meta``.
        """
        parsed = posted.parsed
        if not isinstance(parsed, dict) or "method" not in parsed:
            # HM-05: one request or notification, never a batch or a response.
            await refuse(
                send,
                400,
                "Invalid Request: a 2026-07-28 POST carries exactly one request or notification",
            )
            return
        if "id" not in parsed:
            # HM-06: accepted. The core protocol defines no client notification
            # over HTTP in 2026-07-28 (cancellation is closing the stream), so
            # there is no session to hand it to.
            await respond(send, 202)
            return
        request_id = parsed["id"]
        problem = self._header_problem(headers, parsed)
        if problem is not None:
            body = error_body(
                int(ErrorCode.HEADER_MISMATCH), f"Header mismatch: {problem}", request_id
            )
            await respond(send, 400, body, content_type=JSON)
            return
        transport = HttpServerTransport(None, origin=posted.origin)
        sniffed = posted.sniffed
        # subscriptions/listen is answered by a stream that stays open: one JSON
        # body would never come (the POST hung, found by bench/fuzz.py), so it
        # gets SSE even in JSON response mode.
        listen = isinstance(posted.parsed, dict) and (
            posted.parsed.get("method") == "subscriptions/listen"
        )
        stream = transport.open_stream(
            sniffed.request_ids, sniffed.progress_tokens, json=self.json_response and not listen
        )
        # The session runs in this task, and ends when the answer is out or the
        # client left: a request still running is then cancelled (HM-13).
        tracked = TrackedSend(send)
        answered = await run_one_request(
            self._open_stateless,
            transport,
            opening_version,
            lambda deliver, stop: self._answer(
                receive,
                tracked,
                transport,
                stream,
                deliver,
                stop if listen else None,
                posted.body,
                request_id,
            ),
            identity=Identity(caller),
            fed=True,
        )
        if not answered and not tracked.started:
            await self._session_failed(send, request_id)

    def _header_problem(
        self, headers: Sequence[tuple[bytes, bytes]], parsed: dict[str, Any]
    ) -> str | None:
        """Why the headers disagree with the body (a -32020), or None."""
        method = parsed["method"]
        params = parsed.get("params")
        if not isinstance(method, str) or (params is not None and not isinstance(params, dict)):
            return None  # the session refuses the envelope itself
        received = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers]
        if body_version(parsed) is None and not any(
            k.lower() == "mcp-protocol-version" for k, _ in received
        ):
            return None  # no version anywhere: the session names what is missing
        annotations: Sequence[HeaderAnnotation] = ()
        name = params.get("name") if params is not None else None
        if method == "tools/call" and isinstance(name, str) and self._tool_headers is not None:
            annotations = self._tool_headers(name)
        return header_mismatch(received, method, params, annotations)

    async def _answer(
        self,
        receive: Receive,
        send: Send,
        transport: HttpServerTransport,
        stream: Stream,
        deliver: Deliver,
        stop: Stop | None,
        body: bytes,
        request_id: Any,
    ) -> None:
        # The stream is attached before the body is delivered, so no message
        # can race past it (json_response mode collects instead). *deliver* is
        # the session's feed (no reader task) or the transport's deliver.
        conn = None if stream.json else transport.attach(stream)
        try:
            await deliver(body)
        except (trio.ClosedResourceError, SessionClosed):
            if conn is not None:
                transport.detach(stream, conn)
            await self._session_failed(send, request_id)
            return
        if conn is None:
            await self._answer_json(receive, send, stream, request_id)
            return
        first = await self._first_message(receive, conn)
        if first is _LEFT:
            transport.detach(stream, conn)
            return  # the client left: run_one_request cancels the request
        if first is _SLOW:
            # Slow to start: the head goes out now, the messages as they come.
            await self._stream(receive, send, transport, stream, conn, stop)
            return
        if first is END:
            transport.detach(stream, conn)
            await self._session_failed(send, request_id)
            return
        # Whatever else is queued already goes out with the first message.
        ready, ended = conn.take_ready(first)
        events = b"".join(format_event(data, event="message") for _, data in ready)
        if not ended:
            await self._stream(receive, send, transport, stream, conn, stop, first=events)
            return
        transport.detach(stream, conn)
        if len(ready) == 1:
            # Answered before anything else: one JSON body, with the status its
            # error calls for.
            data = ready[0][1]
            await respond(send, modern_status(data), data, content_type=JSON)
        else:
            await respond(send, 200, events, headers=sse_headers(None))

    async def _stream(
        self,
        receive: Receive,
        send: Send,
        transport: HttpServerTransport,
        stream: Stream,
        conn: ResponseQueue,
        stop: Stop | None,
        *,
        first: bytes | None = None,
    ) -> None:
        """The SSE response of a request that did not answer at once; *stop*
        is given for a ``subscriptions/listen`` stream.

        Cancellation: the server is stopping (a client's leaving is no
        cancellation here: it ends the wait). A listen stream's session is
        then shut down while the response is still open, so that the stream
        ends with its final ``complete`` result (SB-09; the session bounds
        that by its ``cancel_notify_grace``), and what the session wrote is
        sent as the body's last chunk, shielded and bounded by
        :data:`FINAL_EVENTS_GRACE`. Then ``Cancelled`` goes on. Any other
        request is simply cancelled with the POST.
        """
        try:
            await stream_sse(
                receive, send, transport, stream, conn, first=first, keepalive=self.keepalive
            )
        except trio.Cancelled:
            if stop is not None:
                await self._final_events(send, transport, stream, stop)
            raise

    @staticmethod
    async def _final_events(
        send: Send, transport: HttpServerTransport, stream: Stream, stop: Stop
    ) -> None:
        """Shut the session down (the owner's cancel: its listen streams end
        with their final result) and send what it wrote to *stream* meanwhile
        as the body's last chunk (see :meth:`_stream`)."""
        conn = transport.attach(stream)
        ready: list[Any] = []
        try:
            await stop()
        finally:
            item = conn.take_nowait()
            if item is not NOTHING:
                ready = conn.take_ready(item)[0]
            transport.detach(stream, conn)
            body = b"".join(format_event(data, event="message") for _, data in ready)
            with trio.CancelScope(shield=True), trio.move_on_after(FINAL_EVENTS_GRACE):
                if isinstance(send, TrackedSend) and not send.started:
                    start = {"type": "http.response.start", "status": 200}
                    await send({**start, "headers": sse_headers(None)})
                await send({"type": "http.response.body", "body": body, "more_body": False})

    async def _first_message(self, receive: Receive, conn: ResponseQueue) -> Any:
        """The stream's first item (``END`` if it ended), waited for up to
        *head_deferral* seconds; ``_SLOW`` if none came by then, ``_LEFT`` if
        the client disconnected first. One task waits for both (see
        ``wait_for_wake_or_disconnect``; the connection's ``on_item`` wakes it).

        Cancellation: cancelling the caller abandons the wait; nothing is taken
        from the connection.
        """
        first = conn.take_nowait()
        if first is not NOTHING:
            return first
        deadline = trio.current_time() + self.head_deferral
        if not await wait_for_wake_or_disconnect(receive, conn.arm, deadline):
            return _LEFT
        first = conn.take_nowait()
        return _SLOW if first is NOTHING else first

    async def _answer_json(
        self, receive: Receive, send: Send, stream: Stream, request_id: Any
    ) -> None:
        """``json_response`` mode: the response alone (notifications have no
        stream to travel on), with its status."""
        if not stream.done and not await wait_for_wake_or_disconnect(receive, stream.arm):
            return
        if not stream.collected:
            await self._session_failed(send, request_id)
            return
        data = stream.collected[-1]
        await respond(send, modern_status(data), data, content_type=JSON)

    async def _session_failed(self, send: Send, request_id: Any) -> None:
        """The session ended without answering (its handler failed: logged)."""
        body = error_body(
            int(ErrorCode.INTERNAL_ERROR),
            "Internal error: the request was not answered",
            request_id,
        )
        await respond(send, 500, body, content_type=JSON)


class FrameSink(Protocol):
    """How a stateless POST hands its one frame to a session with no reader
    (a :class:`~trio_mcp.lowlevel.Session` opened with ``reader=False``), and
    shuts it down when the server stops."""

    async def feed(self, data: bytes) -> None: ...

    def feed_eof(self) -> None: ...

    async def aclose(self, reason: str = ...) -> None: ...


class OpenStateless(Protocol):
    """Opens the one-request session of a stateless POST over its transport,
    in the caller's task, given the revision it opens in (None: its
    connection decides from the request) and who sent the POST (*identity*).
    Its body serves the POST and ends with the transport's ``peer_closed()``;
    leaving it waits until the session has stopped.

    With ``fed=True`` the caller has the POST's frame in its own task: the
    context may then yield a :class:`FrameSink` to take it (a session with
    no reader task, a spawn and two scheduler passes fewer per POST), or
    None, and the caller delivers to the transport as without it.
    """

    def __call__(
        self, transport: HttpServerTransport, version: str | None, *, fed: bool, identity: Identity
    ) -> AbstractAsyncContextManager[FrameSink | None]: ...


#: Hands the POST's frame to its session: a sink's ``feed`` or the
#: transport's ``deliver``.
Deliver = Callable[[bytes], Awaitable[None]]
#: Shuts the POST's session down in the calling task (a sink's ``aclose``;
#: a checkpoint when the session reads for itself).
Stop = Callable[[], Awaitable[None]]


async def run_stateless_session(
    open_stateless: OpenStateless,
    transport: HttpServerTransport,
    version: str | None,
    identity: Identity,
) -> None:
    """Run the one-request session of a stateless POST in a task of its own,
    beside the task that answers the POST, until that task ends the client
    side (``peer_closed``). A session that fails is logged as an error and
    closed alone; the transport is then closed, so the answering task sees its
    stream end and answers with what it has (the handshake-era stateless POST,
    which keeps this shape; :func:`run_one_request` is the one-task form).

    Cancellation: cancelled with the POST (its handler's nursery).
    """
    # The session's body only waits: the answering task delivers the frame
    # (from its own task, so to the transport) and ends the client side.
    await run_one_request(
        open_stateless,
        transport,
        version,
        lambda _deliver, _stop: transport.wait_peer_closed(),
        identity=identity,
    )


async def run_one_request(
    open_stateless: OpenStateless,
    transport: HttpServerTransport,
    version: str | None,
    answer: Callable[[Deliver, Stop], Awaitable[None]],
    *,
    identity: Identity,
    fed: bool = False,
) -> bool:
    """Serve a stateless POST: run ``answer(deliver, stop)`` (which delivers
    the body with ``deliver`` and writes the response; ``stop`` shuts the
    session down while the response is still open) inside the POST's
    one-request session, in the caller's own task; True if ``answer`` ran to
    its end. *identity* is who sent the POST. With *fed*, ``deliver`` is the
    session's own ``feed`` when the session has no reader (see
    :class:`OpenStateless`), else the transport's ``deliver``.

    Why in the caller's task: a POST already is a task, and a session task of
    its own (with the nursery around it) would be a spawn and several
    scheduler passes per request.

    When ``answer`` ends (the response is out, or the client left) the client
    side of the session ends (``peer_closed``, and the sink's ``feed_eof``
    when it was fed): a request still running is
    cancelled, origin ``transport`` (HM-13, CN-13). A session that fails (a bug
    in a handler's dispatcher or the writer: one session's failure must never
    end the server) is logged as an error and ends this POST only; ``answer``
    was then cancelled, and False tells the caller to answer 500 if the
    response has not started. The transport is closed in every case.

    Cancellation: cancelling the caller (the server stops) cancels the
    session and its request at once, as for any session inside a cancelled
    scope; a ``subscriptions/listen`` first ends with its final result,
    which ``answer`` writes when it is cancelled by calling ``stop``.
    """
    answered = False
    try:
        async with open_stateless(transport, version, fed=fed, identity=identity) as sink:
            try:
                if sink is None:
                    await answer(transport.deliver, trio.lowlevel.checkpoint)
                else:
                    await answer(sink.feed, sink.aclose)
                answered = True
            finally:
                transport.peer_closed()
                if sink is not None:
                    sink.feed_eof()
    except* Exception as failure:
        logger.error(
            "a stateless HTTP request's session failed and was closed; serving goes on",
            exc_info=failure,
        )
    finally:
        transport.close()
    return answered
