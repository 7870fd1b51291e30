"""Small ASGI helpers shared by the HTTP server modules (no framework needed).

Cancellation: every helper is a plain sequence of ASGI ``send``/``receive``
calls; cancelling one leaves the HTTP response unfinished and the server closes
the connection.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any, NoReturn

import orjson
import trio

from ...._transport import FrameOrigin
from ....protocol._codec import duplicate_routing_key
from ....protocol._head import HEAD_SCAN_SIZE, TAIL_SCAN_SIZE, scan_frame
from .._common import Headers, Sniffed, error_body, is_json_content_type, sniff
from .._sse import format_comment, format_event
from ._transport import NOTHING, HttpServerTransport, ResponseQueue, Stream, event_seq

if TYPE_CHECKING:
    from ...._auth._resource import Refusal

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

JSON = b"application/json"
SSE = b"text/event-stream"


#: Seconds a POST whose declared ``Content-Length`` is over the bound may take to
#: send its first :data:`~trio_mcp.protocol._head.HEAD_SCAN_SIZE` bytes (read only to
#: find its request id for the 413; the rest is never read).
HEAD_READ_TIMEOUT = 1.0


class BodyTooLarge(Exception):
    """A body over the bound; ``head`` is its first bytes (at most
    :data:`~trio_mcp.protocol._head.HEAD_SCAN_SIZE`) and ``tail`` its last (at
    most :data:`~trio_mcp.protocol._head.TAIL_SCAN_SIZE`, empty if the rest was
    not read), all that is kept of it; ``size`` is its length as far as known."""

    def __init__(self, head: bytes = b"", tail: bytes = b"", size: int | None = None) -> None:
        super().__init__()
        self.head = head
        self.tail = tail
        self.size = len(head) + 1 if size is None else size


class BodyTimeout(Exception):
    """The whole request body did not arrive within its deadline."""


class Disconnected(Exception):
    pass


class TrackedSend:
    """An ASGI ``send`` that remembers whether the response has started (so a
    handler whose work failed midway knows whether it may still answer 500)."""

    __slots__ = ("send", "started")

    def __init__(self, send: Send) -> None:
        self.send = send
        self.started = False

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
        await self.send(message)


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


async def refuse_with(send: Send, refusal: Refusal) -> None:
    """The answer of an authorization *refusal* (401, 403, 400, 503), with its
    ``WWW-Authenticate`` challenge when it has one (AU-01, AU-12)."""
    headers: Headers = []
    if refusal.www_authenticate is not None:
        headers.append((b"www-authenticate", refusal.www_authenticate.encode()))
    await refuse(send, refusal.status, refusal.message, headers=headers)


async def read_body(
    receive: Receive, limit: int, declared: str | None, time_limit: float | None = None
) -> bytes:
    """Read the request body; raises BodyTooLarge past *limit*, Disconnected on a
    drop, BodyTimeout when the whole body has not arrived within *time_limit* seconds.

    The deadline covers the whole body, not each read: a client trickling one
    byte a second (slowloris on the body, reliability D-02) is cut off as surely
    as one that stops sending. None: no deadline.

    A body over *limit* is never kept: its head is, and, when the head names no
    request id, the rest is read and dropped for its tail (where an id written
    last is), up to :data:`DRAIN_FACTOR` times *limit* in all (1 MiB at least) and within the
    deadline (:data:`HEAD_READ_TIMEOUT` at least); memory stays at 8 KiB.

    Cancellation: cancelling the caller abandons the body (the response is unsent).
    """
    if declared is not None and declared.isdigit() and int(declared) > limit:
        head, tail, read, ended = await _read_head(receive, time_limit)
        await _too_large(receive, head, tail, read, read if ended else int(declared), limit, None)
    chunks: list[bytes] = []
    size = 0
    more = True
    with trio.move_on_after(float("inf") if time_limit is None else time_limit) as deadline:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise Disconnected
            chunk = message.get("body", b"")
            size += len(chunk)
            chunks.append(chunk)
            more = message.get("more_body", False)
            if size > limit:
                break
            if not more:
                return b"".join(chunks)
    if size <= limit:
        assert deadline.cancelled_caught
        raise BodyTimeout
    tail = b"".join(chunks[-2:])[-TAIL_SCAN_SIZE:]
    left = None if time_limit is None else deadline.deadline - trio.current_time()
    await _too_large(receive, _head_of(chunks), tail, size, size if not more else None, limit, left)


def _head_of(chunks: list[bytes]) -> bytes:
    head = bytearray()
    for chunk in chunks:
        head += chunk[: HEAD_SCAN_SIZE - len(head)]
        if len(head) >= HEAD_SCAN_SIZE:
            break
    return bytes(head)


async def _read_head(receive: Receive, time_limit: float | None) -> tuple[bytes, bytes, int, bool]:
    """The head of a body refused by its declared length (up to
    :data:`HEAD_SCAN_SIZE` bytes), its tail so far, the bytes read and whether
    it ended; read within :data:`HEAD_READ_TIMEOUT` (less if *time_limit* is
    less); what arrived by then, b"" if the client left."""
    chunks: list[bytes] = []
    read = 0
    ended = False
    timeout = HEAD_READ_TIMEOUT if time_limit is None else min(time_limit, HEAD_READ_TIMEOUT)
    with trio.move_on_after(timeout):
        while read < HEAD_SCAN_SIZE:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            chunks.append(chunk)
            read += len(chunk)
            if not message.get("more_body", False):
                ended = True
                break
    tail = b"".join(chunks[-2:])[-TAIL_SCAN_SIZE:]
    return _head_of(chunks), tail, read, ended


#: A body over the bound whose head names no id is read on for its tail up to
#: this many times the bound, 1 MiB at least (then refused with id null): a
#: client sending an endless body is not drained forever.
DRAIN_FACTOR = 4


def _drain_cap(limit: int) -> int:
    return max(DRAIN_FACTOR * limit, 1 << 20)


async def _too_large(
    receive: Receive,
    head: bytes,
    tail: bytes,
    read: int,
    total: int | None,
    limit: int,
    time_limit: float | None,
) -> NoReturn:
    """Raise BodyTooLarge for a body of which *read* bytes arrived (*total*: its
    whole size if known), first draining the rest for its tail (within
    *time_limit* seconds, :data:`HEAD_READ_TIMEOUT` at least) when the head names
    no id and the body is small enough to drain."""
    ended = total is not None and read >= total
    small = (total or 0) <= _drain_cap(limit)
    if not ended and small and scan_frame(head, b"", read + 1) is None:
        kept = bytearray(tail)
        timeout = HEAD_READ_TIMEOUT if time_limit is None else max(time_limit, HEAD_READ_TIMEOUT)
        with trio.move_on_after(timeout):
            while read <= _drain_cap(limit):
                message = await receive()
                if message["type"] == "http.disconnect":
                    break
                chunk = message.get("body", b"")
                read += len(chunk)
                kept += chunk[-TAIL_SCAN_SIZE:]
                del kept[: max(0, len(kept) - TAIL_SCAN_SIZE)]
                if not message.get("more_body", False):
                    ended = True
                    break
        if ended:
            raise BodyTooLarge(head, bytes(kept), read)
    raise BodyTooLarge(head, tail if ended else b"", read if ended else None)


async def refuse_too_large(send: Send, limit: int, exc: BodyTooLarge) -> None:
    """413 for a body over *limit* bytes; its JSON-RPC error names the request's
    id when a bounded scan of the body's head and tail finds one (never a full
    parse, :func:`~trio_mcp.protocol._head.scan_frame`), so the caller fails at
    once instead of at its timeout."""
    scan = scan_frame(exc.head, exc.tail, exc.size)
    request_id = scan.id if scan is not None and scan.is_request else None
    body = error_body(-32600, f"Request body larger than {limit} bytes", request_id)
    await respond(send, 413, body, content_type=JSON)


async def refuse_slow_body(send: Send, time_limit: float | None) -> None:
    """408 for a body that took longer than *time_limit*; the connection is closed
    (the rest of the body is never read, so it cannot carry another request)."""
    await refuse(
        send,
        408,
        f"Request Timeout: the body did not arrive within {time_limit} s",
        headers=[(b"connection", b"close")],
    )


#: The W3C trace context headers, by their ASGI (lower-case) names.
_TRACE_HEADERS = {b"traceparent": "traceparent", b"tracestate": "tracestate", b"baggage": "baggage"}


def origin_of(scope: Scope) -> FrameOrigin:
    """Where an HTTP request's frames come from: its client's address and port
    (as the ASGI server tells), and its W3C trace context headers."""
    client = scope.get("client")
    peer = None
    if client is not None and len(client) == 2 and isinstance(client[1], int):
        peer = (str(client[0]), client[1])
    trace: dict[str, str] | None = None
    for name, value in scope.get("headers", ()):
        key = _TRACE_HEADERS.get(name)
        if key is not None:
            if trace is None:
                trace = {}
            trace[key] = value.decode("latin-1")
    return FrameOrigin(peer, trace)


class PostedMessage:
    """A POST body that passed :class:`JsonPostReader`'s checks: its bytes, its
    parsed JSON, what :func:`~trio_mcp.transports._http._common.sniff` saw,
    and where it came from (:func:`origin_of` its request, set by the endpoint)."""

    __slots__ = ("body", "origin", "parsed", "sniffed")

    def __init__(self, body: bytes, parsed: Any, sniffed: Sniffed) -> None:
        self.body = body
        self.parsed = parsed
        self.sniffed = sniffed
        self.origin: FrameOrigin | None = None


class JsonPostReader:
    """The checks of a POSTed JSON-RPC message, shared by the Streamable HTTP and
    the legacy HTTP+SSE endpoints, each answering its own refusal.

    In order: ``Content-Type`` (415, :meth:`refuses_content_type`), then, in
    :meth:`read`, the body's size (413) and the time to receive it (408,
    ``body_timeout``), a client gone before the end (nothing answered, nothing
    dispatched: S-10), JSON (400, -32700), envelope (400, -32600). What an
    endpoint checks in between (``Accept``, the session) it checks itself.

    Cancellation: cancelling a read abandons the body; the response is unsent.
    """

    __slots__ = ("body_timeout", "max_body_size")

    def __init__(self, max_body_size: int, body_timeout: float | None) -> None:
        self.max_body_size = max_body_size
        self.body_timeout = body_timeout

    async def refuses_content_type(self, send: Send, content_type: str | None) -> bool:
        """Answer 415 unless *content_type* is JSON; True if it was refused."""
        if is_json_content_type(content_type):
            return False
        await refuse(send, 415, "Unsupported Media Type: Content-Type must be application/json")
        return True

    async def read(
        self,
        receive: Receive,
        send: Send,
        declared: str | None,
        *,
        initialize_in_batch: bool = True,
    ) -> PostedMessage | None:
        """Read and check the body (*declared*: its ``Content-Length``); None if
        it was refused (the refusal is sent) or the client left."""
        try:
            body = await read_body(receive, self.max_body_size, declared, self.body_timeout)
        except BodyTooLarge as exc:
            await refuse_too_large(send, self.max_body_size, exc)
            return None
        except BodyTimeout:
            await refuse_slow_body(send, self.body_timeout)
            return None
        except Disconnected:
            return None  # nothing was dispatched (S-10)
        try:
            parsed = orjson.loads(body)
        except orjson.JSONDecodeError:
            await refuse(send, 400, "Parse error", code=-32700)
            return None
        if isinstance(parsed, dict):
            duplicate = duplicate_routing_key(body)
            if duplicate is not None:
                # The session refuses it with id null (J-12) while a stream
                # would wait for the id the last key names: the POST hung
                # (found by bench/fuzz.py, server-http-json-20261210).
                await refuse(send, 400, f"Invalid Request: {duplicate}")
                return None
        sniffed = sniff(parsed)
        if (
            not initialize_in_batch
            and sniffed.problem is None
            and sniffed.has_initialize
            and isinstance(parsed, list)
        ):
            sniffed.problem = "initialize must not be part of a batch"
        if sniffed.problem is not None:
            await refuse(send, 400, f"Invalid Request: {sniffed.problem}")
            return None
        return PostedMessage(body, parsed, sniffed)


def sse_headers(session_id: str | None) -> Headers:
    headers: Headers = [
        (b"content-type", SSE),
        (b"cache-control", b"no-cache, no-transform"),
        (b"x-accel-buffering", b"no"),
    ]
    if session_id is not None:
        headers.append((b"mcp-session-id", session_id.encode()))
    return headers


async def wait_for_wake_or_disconnect(
    receive: Receive,
    arm: Callable[[Callable[[], None] | None], None],
    deadline: float = math.inf,
) -> bool:
    """Wait, in the caller's task alone, until something calls the waker that
    *arm* installs, or until *deadline*; False if the client disconnected first.

    The task reads the client's next ASGI message (once the body is read, only
    a disconnect comes) inside a cancel scope whose ``cancel`` is the waker
    (``arm(scope.cancel)``, then ``arm(None)`` when done). A second task
    watching for the disconnect beside the wait cost a spawn, a nursery and
    several scheduler passes per request. The caller checks afterwards what it
    waited for (the waker may also have been called by an end or a failure).

    Cancellation: cancelling the caller abandons the wait (the waker is
    disarmed).
    """
    with trio.CancelScope(deadline=deadline) as waiting:
        arm(waiting.cancel)
        try:
            while (await receive())["type"] != "http.disconnect":
                pass
            return False
        finally:
            arm(None)
    return True


async def stream_sse(
    receive: Receive,
    send: Send,
    transport: HttpServerTransport,
    stream: Stream,
    conn: ResponseQueue,
    *,
    prime_id: str | None = None,
    retry: int | None = None,
    replay: list[tuple[str, bytes | None]] | None = None,
    event: str | None = None,
    first: bytes | None = None,
    keepalive: float | None = None,
    defer_headers: float = 0.0,
) -> None:
    """Write *stream*'s events to one SSE response until it ends or the client leaves.

    A client disconnect only detaches this connection (the request runs on,
    HT-17); events already replayed are not sent twice (live events with a
    sequence at or below the last replayed one are skipped).

    Events already queued are written together, as one body chunk (each chunk
    costs a socket write on the server and a wake-up on the client). With
    *defer_headers* seconds (a POST's stream, whose client waits for its answer
    anyway), the response head waits up to that long for the first event; a
    stream that is complete by then (the usual quick request: its answer and
    the end) goes out as one ``Content-Length`` response instead of a chunked
    one, which saves the terminating chunk's write. The bound keeps a slow
    request's head prompt (clients use it to know the request arrived).

    Cancellation: cancelling the caller ends the response; the stream survives.
    """
    headers = sse_headers(transport.session_id)
    started = False

    async def chunk(body: bytes, more: bool = True) -> None:
        nonlocal started
        if not started:
            started = True
            await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": more})

    last_seq = -1
    finished = False
    left = False
    try:
        head = first or b""
        if prime_id is not None:
            head += format_event("", id=prime_id, retry=retry)
        for event_id, data in replay or ():
            last_seq = max(last_seq, event_seq(event_id))
            if data is not None:
                head += format_event(data, id=event_id, event=event or "message")
        if head or not defer_headers:
            await chunk(head)
        ended = False
        while not ended:
            item = conn.take_nowait()
            if item is NOTHING:
                # Wait for the next item, the head's deferral or the
                # keep-alive, and the client's disconnect, in this task alone.
                if not started:
                    deadline = trio.current_time() + defer_headers
                elif keepalive is None:
                    deadline = math.inf
                else:
                    deadline = trio.current_time() + keepalive
                if not await wait_for_wake_or_disconnect(receive, conn.arm, deadline):
                    left = True
                    break
                item = conn.take_nowait()
                if item is NOTHING:  # the deadline passed
                    await chunk(format_comment("keep-alive") if started else b"")
                    continue
            # END: the stream ended, overflowed (a slow reader) or was replaced.
            ready, ended = conn.take_ready(item)
            body = b""
            for event_id, data in ready:
                seq = event_seq(event_id)
                if seq == -1 or seq > last_seq:
                    body += format_event(data, id=event_id, event=event or "message")
            if ended and not started:
                # The whole answer is known before the head went out.
                started = finished = True
                await respond(send, 200, body, headers=headers)
            elif body or ended:
                await chunk(body, more=not ended)
                finished = ended
        if not left and not finished:
            await chunk(b"", more=False)
    finally:
        transport.detach(stream, conn)
