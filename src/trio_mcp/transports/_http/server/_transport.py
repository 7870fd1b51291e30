"""The server side of one Streamable HTTP session, as a :data:`Transport`.

A session engine (:func:`trio_mcp.lowlevel.open_session`) runs over an
:class:`HttpServerTransport` exactly as over a pipe: ``receive`` gives the frames
clients POSTed, ``send`` takes every frame the session writes. What HTTP adds
is *where* each outgoing frame goes, and the transport works it out from the
frame itself (the session engine knows nothing of HTTP):

* a response or error goes to the stream of the POST that carried its request
  (HT-13), and a stream whose requests are all answered ends (HT-16);
* ``notifications/progress`` goes to the stream of the request that asked for
  it (by ``progressToken``); ``notifications/cancelled`` to the stream that
  carried the request it cancels;
* any other request or notification is unrelated to a particular request: it
  goes to the standalone GET stream (HT-20); while none is connected, to the
  only open POST stream if there is exactly one (it can only relate to that
  request), else it waits (bounded) for the GET stream. A server-to-client
  *request* that can never be delivered (JSON-response or stateless mode with no
  GET stream) fails at once: the transport answers it with an error on the
  client's behalf, so the caller does not hang (reliability S-15, S-16).

Every frame goes to exactly one stream (HT-23). A stream is a logical object
that outlives HTTP connections: when its connection drops, frames are still
stored (when an event store is configured) and a client that reconnects with
``Last-Event-ID`` gets them (HT-17, HT-25, HT-26); without a store they are
dropped. A disconnect never cancels a request (HT-17).

A connection's buffer is bounded; a client that does not read (slow or stuck)
overflows it and loses that *connection* (it may resume), while the session
writer never blocks on it, so one slow client stalls nobody else (D-04).

Memory: a server holds many idle sessions, so an idle transport holds little.
The POSTed frames wait in a small FIFO of the transport's own (a bounded queue
with one reader, made and dropped with its content, instead of a memory
channel); the standalone GET stream and its backlog are made when first
needed, and a response waits for its stream through a waker (``arm``), not an
event; a frame kept for later (the GET backlog, the event store) is copied to
its exact size first (orjson's bytes keep a block far larger than the frame).
``bench/README.md`` ("Why the engine is shaped as it is") has the figures.

Cancellation:
    ``send`` and ``receive`` are checkpoints; a cancelled ``send`` has either
    routed the frame or not. ``aclose`` never blocks.

Spec: HT-13, HT-14, HT-16, HT-17, HT-20, HT-23, HT-24, HT-26.
"""

from __future__ import annotations

import logging
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any

import orjson
import outcome
import trio

from ...._parking import Parking
from ...._transport import FrameOrigin, Network
from ...._util import Flag
from .._common import PRIMING_VERSIONS, id_key
from ._event_store import EventStore, split_event_id

logger = logging.getLogger("trio_mcp.http")

#: Marks the end of a connection's items.
END: Any = object()
#: What :meth:`ResponseQueue.take_nowait` returns when no item is queued yet.
NOTHING: Any = object()
#: Error code of the synthesized answer to an undeliverable server request.
UNDELIVERABLE = -32000
#: The origin of a frame the transport makes itself.
_HERE = FrameOrigin()
#: The standalone GET stream's id.
GET_STREAM = "0"


class ResponseQueue:
    """The live HTTP response of a stream: a bounded queue of ``(event_id, frame)``.

    Never waited on: items are pushed and taken without yielding, and the
    response's task learns of a new item, an overflow or the end from the
    waker it installs (:meth:`arm`). So a deque and a flag, not a memory
    channel, whose pair and state every POST would make.
    """

    __slots__ = ("broken", "buffer", "closed", "items", "on_item")

    def __init__(self, buffer: int) -> None:
        self.items: deque[Any] = deque()
        #: The most items it holds: one more and the connection is dropped.
        self.buffer = buffer
        #: No more items can be pushed; the queued ones can still be taken.
        self.closed = False
        self.broken = False
        #: Called (never yielding) after an item is queued, after an overflow
        #: drops the connection and at the end: lets a POST wait for its first
        #: message and for the client's disconnect in one task (ModernPost).
        self.on_item: Callable[[], None] | None = None

    def push(self, item: Any) -> bool:
        """Queue *item* without blocking; on overflow the connection is dropped."""
        if self.closed:
            return False
        if len(self.items) >= self.buffer:
            logger.warning("HTTP client does not read its stream; dropping the connection")
            self.broken = True
            self.closed = True
            self._wake()
            return False
        self.items.append(item)
        self._wake()
        return True

    def arm(self, waker: Callable[[], None] | None) -> None:
        """Install (None: remove) the waker called by :meth:`push` and :meth:`end`."""
        self.on_item = waker

    def _wake(self) -> None:
        if self.on_item is not None:
            self.on_item()

    def take_nowait(self) -> Any:
        """The next item without waiting: ``END`` if the connection has ended
        (closed, and every item taken), ``NOTHING`` if no item is queued yet."""
        if self.items:
            return self.items.popleft()
        return END if self.closed else NOTHING

    def take_ready(self, first: Any) -> tuple[list[Any], bool]:
        """*first* (an item just received, or END) and every item already
        queued behind it, without waiting; and whether the end was reached."""
        if first is END:
            return [], True
        ready = [first]
        items = self.items
        while items:
            item = items.popleft()
            if item is END:  # pushed as an item (a stream replayed, not live)
                return ready, True
            ready.append(item)
        return ready, self.closed

    def close(self) -> None:
        """No more items (the response stopped reading them); no wake-up."""
        self.closed = True

    def end(self) -> None:
        """The stream is done: what is queued is taken, then ``END``."""
        self.closed = True
        self._wake()


def compact(data: bytes) -> bytes:
    """An exact-size copy of *data*, for a frame that is kept (orjson allocates
    a frame's bytes with room to spare, however short it is, and only shrinks
    the length field)."""
    return bytes(memoryview(data))


class Stream:
    """A POST's response stream or the standalone GET stream."""

    __slots__ = (
        "collected",
        "conn",
        "done",
        "json",
        "on_done",
        "pending",
        "stream_id",
        "tokens",
    )

    def __init__(self, stream_id: str, *, json: bool = False) -> None:
        self.stream_id = stream_id
        #: Request ids (as :func:`id_key`) still owed a response.
        self.pending: set[tuple[bool, Any]] = set()
        self.tokens: list[tuple[bool, Any]] = []
        self.conn: ResponseQueue | None = None
        self.done = False
        #: Called (never yielding) when the stream ends: lets a JSON-mode POST
        #: wait for its answer and for the client's disconnect in one task.
        self.on_done: Callable[[], None] | None = None
        #: JSON-response mode: the frames of the answer, not a stream.
        self.json = json
        self.collected: list[bytes] = []

    def arm(self, waker: Callable[[], None] | None) -> None:
        """Install (None: remove) the waker called when the stream ends."""
        self.on_done = waker

    def set_done(self) -> None:
        self.done = True
        if self.on_done is not None:
            self.on_done()


class HttpServerTransport(trio.abc.Channel[bytes]):
    """One HTTP session's frames (see the module docstring for routing).

    Made by the HTTP application; one per session (stateful) or per POST
    (stateless).

    Cancellation:
        ``send`` routes its frame to a stream without waiting (unless an event
        store must keep it first), so a cancelled ``send`` delivered nothing.
        ``aclose`` closes at once, then checkpoints.
    """

    # Slots: a server holds many idle sessions, each with its transport.
    __slots__ = (
        "_backlog",
        "_backlog_size",
        "_by_request",
        "_by_token",
        "_closed",
        "_get_attached",
        "_get_stream",
        "_inbox",
        "_inbox_size",
        "_initialize_key",
        "_next_stream",
        "_origin",
        "_peer_closed",
        "_reader",
        "_senders",
        "_server_requests",
        "_streams",
        "connection_buffer",
        "event_store",
        "last_activity",
        "on_close",
        "protocol_version",
        "session_id",
        "single_stream",
    )

    def __init__(
        self,
        session_id: str | None,
        *,
        event_store: EventStore | None = None,
        inbound_buffer: int = 64,
        connection_buffer: int = 1024,
        backlog: int = 1024,
        single_stream: bool = False,
        origin: FrameOrigin | None = None,
    ) -> None:
        self.session_id = session_id
        # Where the frame received last came from (a per-POST transport's one
        # request: given here; a frame delivered without one keeps it); see
        # frame_origin.
        self._origin = origin
        self.event_store = event_store if session_id is not None else None
        # The inbound FIFO (see _deliver_nowait and receive): POSTed frames
        # waiting for the session's reader, made with the first one that waits
        # and dropped when it empties; the reader parked on it; POSTs waiting
        # for room, oldest first, with their frames.
        self._inbox: deque[tuple[bytes, FrameOrigin | None]] | None = None
        self._inbox_size = inbound_buffer
        self._reader: Parking | None = None
        self._senders: OrderedDict[Parking, tuple[bytes, FrameOrigin | None]] | None = None
        self.connection_buffer = connection_buffer
        self._streams: dict[str, Stream] = {}
        self._by_request: dict[tuple[bool, Any], Stream] = {}
        self._by_token: dict[tuple[bool, Any], Stream] = {}
        self._server_requests: dict[tuple[bool, Any], Stream] = {}
        self._next_stream = 1
        # Made when first needed (see the get_stream property).
        self._get_stream: Stream | None = None
        self._backlog: deque[tuple[str | None, bytes]] | None = None
        self._backlog_size = backlog
        #: Legacy HTTP+SSE: every frame goes to the one SSE stream.
        self.single_stream = single_stream
        # Flags, not Events: an Event is made only if a task waits (a
        # 2026-07-28 POST makes a transport per request, and nobody waits).
        self._closed = Flag()
        #: The client side ended (peer_closed), or the transport closed.
        self._peer_closed = Flag()
        self._initialize_key: tuple[bool, Any] | None = None
        #: The negotiated revision, read from the initialize result.
        self.protocol_version: str | None = None
        self.last_activity = trio.current_time()
        self.on_close: list[Any] = []
        self._get_attached: trio.Event | None = None

    # ------------------------------------------------------------ Channel API

    async def send(self, value: bytes) -> None:
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._closed.is_set():
            raise trio.ClosedResourceError("transport closed")
        data = bytes(value)
        await self._route(data)
        await trio.lowlevel.cancel_shielded_checkpoint()

    def send_nowait(self, value: bytes) -> None:
        """Route *value* to its stream now, never yielding (the transport
        contract's fast path, which the session writes through).

        Raises ``trio.WouldBlock`` having done nothing when an event store must
        keep the frame first (storing it awaits the store), and
        ``ClosedResourceError`` once the transport is closed.

        Cancellation: never yields.
        """
        if self._closed.is_set():
            raise trio.ClosedResourceError("transport closed")
        if self.event_store is not None:
            raise trio.WouldBlock
        self._route_nowait(bytes(value))

    async def receive(self) -> bytes:
        """The next POSTed frame, oldest first.

        Raises ``EndOfChannel`` once the client ended the session and every
        frame was read, ``ClosedResourceError`` once the transport is closed,
        ``BusyResourceError`` if another task is already receiving.

        Cancellation: a checkpoint; a cancelled receive takes no frame.
        """
        if self._closed.is_set():
            raise trio.ClosedResourceError("transport closed")
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            frame = self._receive_nowait()
        except trio.WouldBlock:
            pass
        else:
            await trio.lowlevel.cancel_shielded_checkpoint()
            return frame
        if self._reader is not None and self._reader.parked:
            raise trio.BusyResourceError("another task is receiving from this transport")
        reader = self._reader = Parking()
        # A cancelled receive is forgotten by its spot at once, so the next
        # frame goes to the inbox, not to it (see _deliver_nowait).
        await reader.park()
        assert reader.outcome is not None  # park() returns once woken
        received: bytes
        received, origin = reader.outcome.unwrap()
        if origin is not None:
            self._origin = origin
        return received

    @property
    def network(self) -> Network:
        """TCP, HTTP, and the session's id if it has one
        (:class:`~trio_mcp.lowlevel.NetworkTransport`)."""
        return Network("tcp", "http", session_id=self.session_id)

    @property
    def frame_origin(self) -> FrameOrigin | None:
        """Where the frame received last came from: its POST's client address
        and trace headers (:class:`~trio_mcp.lowlevel.OriginTransport`)."""
        return self._origin

    def _receive_nowait(self) -> bytes:
        if self._closed.is_set():
            raise trio.ClosedResourceError("transport closed")
        inbox = self._inbox
        senders = self._senders
        if inbox:
            frame, origin = inbox.popleft()
            if origin is not None:
                self._origin = origin
            if senders:
                # Room again: the oldest waiting POST's frame moves in.
                sender, waiting = senders.popitem(last=False)
                inbox.append(waiting)
                sender.wake()
            if not inbox:
                self._inbox = None
            return frame
        if senders:  # a zero-size inbox: straight from the oldest POST
            sender, (frame, origin) = senders.popitem(last=False)
            if origin is not None:
                self._origin = origin
            sender.wake()
            return frame
        if self._peer_closed.is_set():
            raise trio.EndOfChannel
        raise trio.WouldBlock

    def _deliver_nowait(self, frame: bytes, origin: FrameOrigin | None) -> None:
        """Queue *frame* for the reader, or raise WouldBlock (full) or
        ClosedResourceError (the session ended or the transport is closed)."""
        if self._peer_closed.is_set():
            raise trio.ClosedResourceError("session closed")
        reader, self._reader = self._reader, None
        if reader is not None and reader.parked:
            reader.wake(outcome.Value((frame, origin)))
            return
        inbox = self._inbox
        if inbox is None:
            if self._inbox_size <= 0:
                raise trio.WouldBlock
            inbox = self._inbox = deque()
        elif len(inbox) >= self._inbox_size:
            raise trio.WouldBlock
        inbox.append((frame, origin))

    def _end_inbox(self) -> None:
        """No more frames: a parked reader reads end-of-channel (it parks only
        when nothing is queued), and every waiting POST fails."""
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.wake(outcome.Error(trio.EndOfChannel()))
        senders, self._senders = self._senders, None
        for sender in senders or ():
            sender.wake(outcome.Error(trio.ClosedResourceError("session closed")))

    async def aclose(self) -> None:
        self.close()
        await trio.lowlevel.checkpoint()

    def close(self) -> None:
        """Close now: every connection ends, later sends raise (idempotent)."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._inbox = None
        # As a closed channel did: a reader parked now reads end-of-channel,
        # later receives raise ClosedResourceError.
        self._end_inbox()
        streams = list(self._streams.values())
        if self._get_stream is not None:
            streams.insert(0, self._get_stream)
        for stream in streams:
            self._finish(stream)
        self._streams.clear()
        # The client side is over too (wait_peer_closed returns).
        self._peer_closed.set()
        for callback in self.on_close:
            callback(self)

    async def wait_closed(self) -> None:
        """Block until the transport is closed.

        Cancellation: a plain wait; cancelling it leaves the transport as it is.
        """
        await self._closed.wait()

    async def wait_peer_closed(self) -> None:
        """Block until the client side has ended (:meth:`peer_closed`) or the
        transport is closed.

        Cancellation: a plain wait; cancelling it leaves the transport as it is.
        """
        await self._peer_closed.wait()

    async def wait_get_stream(self) -> None:
        """Block until a client has attached the standalone GET stream.

        Cancellation: a plain wait; cancelling it leaves the transport as it is.
        """
        if self._get_stream is not None and self._get_stream.conn is not None:
            await trio.lowlevel.checkpoint()
            return
        if self._get_attached is None:
            self._get_attached = trio.Event()
        await self._get_attached.wait()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    @property
    def get_stream(self) -> Stream:
        """The standalone GET stream (made on first use: most sessions never
        open one, nor send anything it would carry)."""
        stream = self._get_stream
        if stream is None:
            stream = self._get_stream = Stream(GET_STREAM)
            if self._closed.is_set():
                stream.set_done()
        return stream

    # ------------------------------------------------------- the HTTP side

    def peer_closed(self) -> None:
        """The client ended the session (DELETE) or it expired: the session
        reads end-of-channel after what was already delivered."""
        if self._peer_closed.is_set():
            return
        self._peer_closed.set()
        # The reader reads what is queued, then EndOfChannel; waiting POSTs fail.
        self._end_inbox()

    def touch(self) -> None:
        self.last_activity = trio.current_time()

    @property
    def idle(self) -> bool:
        """No HTTP connection is attached to any of this session's streams."""
        if self._get_stream is not None and self._get_stream.conn is not None:
            return False
        return all(s.conn is None for s in self._streams.values())

    def in_flight(self, request_id: Any) -> bool:
        return id_key(request_id) in self._by_request

    def open_stream(
        self,
        request_ids: list[Any],
        progress_tokens: dict[tuple[bool, Any], Any],
        *,
        json: bool,
        initialize: bool = False,
    ) -> Stream:
        """Register the stream that will carry the answers to *request_ids*.

        Called before the frame is delivered, so no answer can race past it.
        """
        stream_id = str(self._next_stream)
        self._next_stream += 1
        stream = Stream(stream_id, json=json)
        for rid in request_ids:
            key = id_key(rid)
            stream.pending.add(key)
            self._by_request[key] = stream
        for token in progress_tokens:
            self._by_token[token] = stream
            stream.tokens.append(token)
        if initialize and request_ids:
            self._initialize_key = id_key(request_ids[0])
        self._streams[stream_id] = stream
        return stream

    def close_request_stream(self, request_id: Any) -> bool:
        """End the SSE response that carries *request_id*'s answer now.

        The request keeps running; what it sends from now on is stored in the
        event store, and the client, which saw the stream end without an answer,
        reconnects with ``Last-Event-ID`` after the ``retry`` interval and gets it
        (polling). Only resumable sessions can do this (an event store, and a
        revision with priming events); returns False otherwise, or when there is
        no such request or its answer goes out as JSON.

        Spec: HT-11.
        """
        stream = self._by_request.get(id_key(request_id))
        if stream is None or stream.json or not self.primes:
            return False
        conn = stream.conn
        if conn is not None:
            stream.conn = None
            conn.end()
        return True

    def forget_request(self, request_id: Any) -> None:
        """The client cancelled *request_id*: no answer will come (peer-cancelled
        requests are never answered), so its stream must not wait for one."""
        key = id_key(request_id)
        stream = self._by_request.pop(key, None)
        if stream is None:
            return
        stream.pending.discard(key)
        if not stream.pending:
            self._drop_stream(stream)

    def _drop_stream(self, stream: Stream) -> None:
        """*stream* is answered: end it and forget it. A table that empties is
        made afresh: a dict keeps the size it grew to, and an idle session
        keeps these empty."""
        self._finish(stream)
        self._streams.pop(stream.stream_id, None)
        if not self._streams:
            self._streams = {}
        if not self._by_request:
            self._by_request = {}

    async def deliver(self, frame: bytes, origin: FrameOrigin | None = None) -> None:
        """Hand a POSTed frame to the session (waits while its inbound queue is
        full), with where it came from (*origin*: its POST's).

        Raises ``ClosedResourceError`` when the session has ended (or ends while
        this waits).

        Cancellation: a checkpoint; if cancelled, the frame was not delivered.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            self._deliver_nowait(frame, origin)
        except trio.WouldBlock:
            pass
        else:
            await trio.lowlevel.cancel_shielded_checkpoint()
            return
        # Full: wait in line (FIFO); the reader moves our frame in when it
        # makes room, or fails us when the session ends.
        sender = Parking()
        senders = self._senders
        if senders is None:
            senders = self._senders = OrderedDict()
        senders[sender] = (frame, origin)

        def leave_the_line() -> None:
            waiting = self._senders
            if waiting is not None:
                waiting.pop(sender, None)
                if not waiting:
                    self._senders = None

        await sender.park(leave_the_line)
        assert sender.outcome is not None  # park() returns once woken
        sender.outcome.unwrap()

    def live_stream(self, stream_id: str) -> Stream | None:
        if stream_id == GET_STREAM:
            return self.get_stream
        return self._streams.get(stream_id)

    def attach(self, stream: Stream) -> ResponseQueue:
        """Attach a new connection to *stream* (the caller checked ``stream.conn``)."""
        conn = ResponseQueue(self.connection_buffer)
        stream.conn = conn
        if stream is self._get_stream:
            if self._get_attached is not None:
                self._get_attached.set()
                self._get_attached = None
            backlog = self._backlog
            while backlog:
                if not conn.push(backlog.popleft()):
                    break
            if not backlog:
                self._backlog = None
        if stream.done or self._closed.is_set():
            conn.end()
        return conn

    def detach(self, stream: Stream, conn: ResponseQueue) -> None:
        if stream.conn is conn:
            stream.conn = None
        conn.close()

    @property
    def primes(self) -> bool:
        """Does this session send priming events (resumable, 2025-11-25 or later)?"""
        return self.event_store is not None and self.protocol_version in PRIMING_VERSIONS

    async def prime(self, stream: Stream) -> str | None:
        """Store a priming event for *stream*; returns its id.

        Cancellation: as :meth:`EventStore.store_event`; with nothing to store,
        a plain checkpoint.

        Spec: HT-10.
        """
        if self.event_store is None or self.session_id is None:
            await trio.lowlevel.checkpoint()
            return None
        return await self.event_store.store_event(self.session_id, stream.stream_id, None)

    # --------------------------------------------------------------- routing

    def _route_nowait(self, data: bytes) -> None:
        """Send *data* to its stream now, never yielding: the whole of routing
        when no event store keeps the frames (storing one awaits the store)."""
        stream, answer = self._destination(data)
        if stream is not None:
            self._put(stream, data, None)
            if answer:
                self._answered(stream)

    async def _route(self, data: bytes) -> None:
        """Send *data* to its stream, kept in the event store first if there is one.

        Cancellation: a checkpoint only while the store keeps the frame.
        """
        store, session_id = self.event_store, self.session_id
        if store is None or session_id is None:
            self._route_nowait(data)
            return
        stream, answer = self._destination(data)
        if stream is None:
            return
        event_id: str | None = None
        if not stream.json:
            # Kept (for a resume): an exact-size copy, not orjson's roomy block.
            data = compact(data)
            event_id = await store.store_event(session_id, stream.stream_id, data)
        self._put(stream, data, event_id)
        if answer:
            self._answered(stream)

    def _destination(self, data: bytes) -> tuple[Stream | None, bool]:
        """Where *data* goes (None: nowhere, it is dropped or was refused), and
        whether it answers a request of that stream; updates the routing tables."""
        if self.single_stream:
            return self.get_stream, False
        try:
            msg = orjson.loads(data)
        except orjson.JSONDecodeError:
            msg = None
        if not isinstance(msg, dict):
            return self._unrelated_stream(), False
        method = msg.get("method")
        if method is None:
            key = id_key(msg.get("id"))
            stream = self._by_request.pop(key, None)
            if key == self._initialize_key:
                result = msg.get("result")
                if isinstance(result, dict) and isinstance(result.get("protocolVersion"), str):
                    self.protocol_version = result["protocolVersion"]
                self._initialize_key = None
            if stream is None:
                # An answer whose POST is gone (e.g. after a failed delivery):
                # the GET stream may carry it only when resuming; drop it.
                logger.debug("dropped a response for an unknown request: %.200r", data)
                return None, False
            stream.pending.discard(key)
            return stream, True
        params = msg.get("params")
        params = params if isinstance(params, dict) else {}
        target: Stream | None = None
        if method == "notifications/progress":
            target = self._by_token.get(id_key(params.get("progressToken")))
        elif method == "notifications/cancelled":
            target = self._server_requests.pop(id_key(params.get("requestId")), None)
        if target is None:
            target = self._unrelated_stream()
        if "id" in msg:
            # A request needs a connected stream now: waiting for a GET stream
            # that may never come would hang the caller.
            if target is None or target.json or target.conn is None:
                self._refuse_server_request(msg)
                return None, False
            self._server_requests[id_key(msg["id"])] = target
        if target is None:
            logger.debug("no stream for a notification (stateless): %.200r", data)
            return None, False
        if target.json:
            return None, False  # JSON-response mode: a related notification has nowhere to go
        return target, False

    def _answered(self, stream: Stream) -> None:
        """A response went to *stream*: once its requests are all answered,
        it ends and its progress tokens are forgotten."""
        if not stream.pending:
            for token in stream.tokens:
                if self._by_token.get(token) is stream:
                    del self._by_token[token]
            self._drop_stream(stream)

    def _unrelated_stream(self) -> Stream | None:
        if self._get_stream is not None and self._get_stream.conn is not None:
            return self._get_stream
        open_streams = [s for s in self._streams.values() if not s.json and s.conn is not None]
        if len(open_streams) == 1:
            return open_streams[0]
        if self.session_id is None:
            return None
        return self.get_stream

    def _refuse_server_request(self, msg: dict[str, Any]) -> None:
        reply = orjson.dumps(
            {
                "jsonrpc": "2.0",
                "id": msg["id"],
                "error": {
                    "code": UNDELIVERABLE,
                    "message": "No stream can carry this request to the client "
                    "(JSON-response or stateless mode, and no GET stream)",
                },
            }
        )
        try:
            # Made here, not POSTed: it has no origin of its own.
            self._deliver_nowait(reply, _HERE)
        except (trio.WouldBlock, trio.ClosedResourceError):
            logger.debug("could not refuse an undeliverable server request")

    def _put(self, stream: Stream, data: bytes, event_id: str | None) -> None:
        """Hand *data* (stored as *event_id*, if stored) to *stream*: its
        connection, else (the GET stream) its backlog, else nothing (a stored
        frame waits in the event store for a resume)."""
        if stream.json:
            stream.collected.append(data)
            return
        conn = stream.conn
        if conn is not None:
            if not conn.push((event_id, data)):
                self.detach(stream, conn)
        elif stream is self._get_stream:
            backlog = self._backlog
            if backlog is None:
                backlog = self._backlog = deque(maxlen=self._backlog_size)
            if event_id is None:
                data = compact(data)
                if len(backlog) == backlog.maxlen:
                    logger.warning("GET stream backlog full; dropping the oldest message")
            # Stored: a resuming GET replays it; a fresh GET gets it from the backlog.
            backlog.append((event_id, data))

    def _finish(self, stream: Stream) -> None:
        stream.set_done()
        if stream.conn is not None:
            stream.conn.end()


def event_seq(event_id: str | None) -> int:
    """The session-wide sequence number of an event id (-1 if none)."""
    if event_id is None:
        return -1
    parsed = split_event_id(event_id)
    return -1 if parsed is None else parsed[1]
