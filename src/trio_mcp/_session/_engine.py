"""The session engine: one nursery per live connection.

Theory of operation
-------------------
``open_session`` opens a nursery and starts two tasks in it (more on demand).
:class:`Session` owns the transport, the outgoing channel, those two tasks and
the shutdown; three collaborators own the rest, each built with the narrow
things it needs (the connection, the nursery, a ``queue`` callable, the
dispatcher's handler, the graces), never with the session:

* the **reader** (a method of the session) reads frames from the transport,
  feeds them to the sans-I/O :class:`~trio_mcp.protocol.Connection` and hands
  each event to its handler, looked up by type in a table of bound methods. It
  answers ``ping`` (and, on a server, ``initialize`` and ``server/discover``) itself, so they are
  answered promptly however busy the handlers are; it cancels a request's scope
  on the peer's ``notifications/cancelled`` and moves a request's idle deadline
  on its progress, before any user code sees anything else;
* the **writer** (a method of the session) writes what is queued for the
  transport: messages on a bounded memory channel, which is atomic under
  cancellation (a message is queued or not). One writer at a time, with
  **write-through**: while the writer is parked on an empty queue, the task
  that made a message encodes it and writes it itself with the transport's
  ``send_nowait``, which never yields, so cancellation cannot tear it and
  nothing queued is overtaken. What the transport cannot take at once (a full
  buffer, the rest of a line a pipe took in part) goes to the writer, which is
  then busy, so later messages queue behind it. A frame is never torn and
  order is kept either way, and an uncontended round trip skips two task
  hand-offs (one per side);
* :class:`~trio_mcp._session._inbound.InboundRequests` owns the peer's requests:
  the admission under the concurrency limit, one task per request (an
  :class:`~trio_mcp._session._inbound.InboundRequest`), its error boundary and
  reply, and the count that shutdown waits on;
* :class:`~trio_mcp._session._outbound.OutboundCalls` owns our requests: each
  runs in the caller's own task, which queues the request and parks until the
  reader hands it the outcome;
* :class:`~trio_mcp._session._notifier.Notifier` runs notification handlers one
  at a time, in receive order, in a task that exists only while notifications
  wait.

Each inbound request gets its :class:`trio.CancelScope` and its task when it
*arrives*. Under a concurrency limit the reader also makes the admission
decision there, in arrival order (:mod:`trio_mcp._session._admission`): the
request takes a free slot at once or queues in a FIFO (its record stays QUEUED);
a freed slot goes to the oldest request still waiting. If a request's scope is
cancelled while it waits, the handler never starts.

An outbound request's time limits (the progress-extended idle timeout and the
hard maximum) are cancel-scope deadlines; the caller's own scopes work too. On
any cancellation, ``notifications/cancelled`` is queued without blocking the
caller past a small bound, and the record says who cancelled. An optional
keepalive task pings the peer through :meth:`Session.request` and treats an
unanswered ping as a connection failure.

Shutdown (leaving ``open_session``, or :meth:`Session.aclose`) runs in a fixed
order, each step bounded, all of it shielded so it completes when the caller is
being cancelled:

1. stop accepting: new inbound requests are refused (-32000), new calls raise;
2. cancel our outbound requests; the peer is told (bounded);
3. let inbound requests settle for ``shutdown_grace`` seconds, then cancel them
   (their peers get -32001 replies) and wait a little for them to end;
4. flush the writer (bounded), mark the session closed, close the transport
   (bounded).

Losing the transport instead (EOF, a broken pipe, a keepalive ping that timed
out) closes the session at once (:meth:`Session._close`): every pending call
fails with :class:`SessionClosed` carrying the cause, every inbound request is
cancelled (no reply can be written), and the session is marked closed.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from typing import Any, NamedTuple, NoReturn, TypeVar, cast, final
from typing import Protocol as TypingProtocol

import attrs
import trio

from .._errors import RequestTimeout, RPCError, SessionClosed
from .._transport import ANONYMOUS, Caller, Identity, Transport
from .._util import Flag, reraise_unwrapped
from ..protocol import (
    DEFAULT_MAX_MESSAGE_SIZE,
    METHODS,
    REVISIONS,
    CancelOrigin,
    CancelReceived,
    Connection,
    ConnectionFactory,
    Direction,
    ErrorCode,
    ErrorObject,
    ErrorReceived,
    Event,
    FrameDirection,
    Ignored,
    InvalidMessage,
    JSONObject,
    LocalProtocolError,
    Message,
    Notification,
    NotificationReceived,
    Progress,
    ProgressReceived,
    Request,
    RequestId,
    RequestMeta,
    RequestObserver,
    RequestReceived,
    RequestRecord,
    RequestState,
    ResponseReceived,
    Revision,
    SessionState,
)
from ._inbound import InboundRequests
from ._notifier import Notifier
from ._outbound import OutboundCalls

logger = logging.getLogger("trio_mcp.session")

#: Used for "the session's default" in per-call arguments.
DEFAULT: Any = object()

#: Queued by a sender whose write-through the transport took in part: the
#: writer writes the rest (``transport.flush()``) before any later frame.
_FLUSH: Any = object()


class Dispatcher(TypingProtocol):
    """What answers the peer: implemented by ``Server`` and ``Client``."""

    async def handle_request(self, ctx: RequestContext) -> Any:
        """Serve one request; return its result (attrs instance or JSON object).

        Cancellation:
            Runs in the request's own cancel scope, which the peer's cancel, the
            request's deadline or shutdown cancel; then the record ends
            CANCELLED and no result is sent (an error reply only where the
            response policy allows one, never after the peer's cancel).
        """
        ...

    async def handle_notification(self, session: Session, event: NotificationReceived) -> None:
        """React to one notification (called in receive order).

        Cancellation:
            Runs in the session's notifier, one at a time: it is cancelled only
            when the session shuts down, and while it blocks later
            notifications wait (requests and responses do not).
        """
        ...


@final
class RequestContext:
    """What a handler knows about the request it is serving. Not constructed directly.

    A handler's task runs inside the request's own cancel scope: a peer's
    ``notifications/cancelled``, the session's shutdown and the loss of the
    transport all arrive as :class:`trio.Cancelled` at the handler's next
    checkpoint. :attr:`cancel_requested` tells a handler that finished its work
    after the last checkpoint that its result will not be sent.
    """

    __slots__ = (
        "_protocol",
        "_queue",
        "caller",
        "final_result",
        "meta",
        "method",
        "params",
        "request_id",
        "session",
        "user_data",
    )

    def __init__(
        self,
        session: Session,
        protocol: Connection,
        queue: Callable[[Message], Awaitable[None]],
        request_id: RequestId,
        method: str,
        params: Any,
        meta: JSONObject | None,
        caller: Caller,
    ) -> None:
        #: The session the request arrived on.
        self.session = session
        #: Who sent the request (principal and verified access token), as the
        #: session's identity named it when the request arrived; a token
        #: refreshed later by another request does not change it.
        self.caller = caller
        self._protocol = protocol
        self._queue = queue
        self.request_id = request_id
        self.method = method
        #: The params, structured into the method's params type.
        self.params = params
        #: The request's raw ``_meta`` object, if it had one.
        self.meta = meta
        #: Set by :meth:`finish_with`: the result the request ends with once its
        #: scope has unwound the handler.
        self.final_result: Any = None
        #: Free for the layer above (the server keeps the request's input round here).
        self.user_data: Any = None

    @property
    def revision(self) -> Revision | None:
        """The revision this request is served in: its own ``_meta`` version in
        the modern era (ST-01), the session's negotiated one in the handshake era."""
        request_meta = self._protocol.request_meta(self.request_id)
        if request_meta is not None:
            return REVISIONS[request_meta.protocol_version]
        return self._protocol.revision

    @property
    def request_meta(self) -> RequestMeta | None:
        """What a 2026-07-28 request declared in its ``_meta`` (None in the handshake era)."""
        return self._protocol.request_meta(self.request_id)

    @property
    def client_capabilities(self) -> JSONObject:
        """The capabilities the peer declared *for this request*: its own
        ``_meta`` in the modern era (never an earlier request's: ME-09), the
        handshake's in the handshake era."""
        request_meta = self._protocol.request_meta(self.request_id)
        if request_meta is not None:
            return request_meta.client_capabilities
        return self._protocol.peer_capabilities

    def note_follows(self, previous: RequestId) -> None:
        """Record that this request retries round *previous* of a multi
        round-trip call (the record's ``follows``)."""
        self._protocol.note_follows(self.request_id, previous)

    async def finish_with(self, result: Any) -> NoReturn:
        """End the request now with *result*, unwinding the handler by its own
        scope's cancellation (so its ``finally`` blocks and shields run, and an
        ``except Exception`` cannot swallow it). The record ends COMPLETED with
        *result*; a cancel someone asked for first (the peer, a deadline,
        shutdown) still wins and no result is sent.

        This is how a 2026-07-28 handler ends its round with an
        ``InputRequiredResult`` from deep inside the code that needs the input.

        Raises:
            LocalProtocolError: the request is not in flight (it has ended).

        Cancellation: never returns; raises :class:`trio.Cancelled`.
        """
        handle = self._protocol.handle(self.request_id)
        if handle is None:
            # Not in flight: no scope to unwind, and waiting would hang the handler.
            raise LocalProtocolError(
                f"finish_with() for {self.request_id!r}, which is not in flight"
            )
        self.final_result = result
        handle.cancel(reason="the request ended with a result (input required)")
        await trio.sleep_forever()
        raise AssertionError("unreachable")  # pragma: no cover

    @property
    def record(self) -> RequestRecord:
        """A snapshot of this request's record."""
        record = self._protocol.record(Direction.INBOUND, self.request_id)
        assert record is not None  # the record outlives the handler
        return record

    @property
    def cancel_requested(self) -> bool:
        """True once anyone (the peer, a deadline, shutdown) asked to cancel this request."""
        return self._protocol.cancel_requested(self.request_id)

    @property
    def may_send(self) -> bool:
        """Whether a message about this request may still be sent: it has not
        ended and the peer has not cancelled it, even if a deadline or shutdown
        asked first (CN-05, CN-16)."""
        return self._protocol.may_send_for(self.request_id)

    @property
    def progress_token(self) -> str | int | None:
        """The token the requester supplied, or None (then progress is not sent)."""
        return self._protocol.progress_token(self.request_id)

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress`` for this request.

        Sends nothing when the request carried no progress token (PG-07) or has
        already ended (PG-10), nor when the session's ``progress_interval``
        rate limit holds it back (PG-09). ``message`` is dropped for 2024-11-05
        peers.

        Raises:
            LocalProtocolError: *progress* is not greater than the last one (PG-04).

        Cancellation:
            A checkpoint (so a loop that only reports progress can still be
            cancelled). If already cancelled, nothing is recorded or sent; if
            cancelled while the outgoing queue is full, the notification is not
            queued.

        Spec: PG-03, PG-04, PG-07, PG-09, PG-10.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        note = self._protocol.progress_notification(self.request_id, progress, total, message)
        if note is not None:
            await self._queue(note)
        # A schedule point too (the queue's fast path does not yield).
        await trio.lowlevel.cancel_shielded_checkpoint()


@attrs.frozen
class SessionStatistics:
    """A frozen snapshot of a session's counters (trio's ``statistics()`` convention),
    from :meth:`Session.statistics`. Taking one is cheap and never blocks."""

    #: Where the session is in its lifecycle (``OPERATING``, ``MODERN``, ``CLOSED``...).
    state: SessionState
    #: Requests in flight now, in both directions, that are waiting to start
    #: (inbound: admitted but not yet running; outbound: not yet written).
    queued: int
    #: Requests in flight now, in both directions, that are running (inbound:
    #: the handler runs; outbound: written, the answer not yet in).
    running: int
    #: Requests finished since the session opened, both directions, by how
    #: they ended.
    completed: int
    #: See ``completed``: ended with an error answer or a handler failure.
    failed: int
    #: See ``completed``: ended by a cancel, whoever asked.
    cancelled: int
    #: The most requests from the peer (inbound only) in flight at once since
    #: the session opened; a client that only calls keeps it at 0.
    peak_in_flight: int
    #: The bound on inbound requests run at once (``max_concurrent=``), or
    #: None for no bound.
    max_concurrent: int | None
    #: Messages waiting in the outgoing queue for the writer now.
    outgoing_queue_used: int
    #: The outgoing queue's size (``outgoing_buffer=``): a sender waits when
    #: it is full.
    outgoing_queue_size: int
    #: Frames read from the transport since the session opened.
    frames_in: int
    #: Frames written to the transport since the session opened.
    frames_out: int
    #: Messages from the peer that were refused: not JSON, not JSON-RPC, or not
    #: allowed now (each answered with an error when it had an id).
    invalid_messages: int
    #: Messages from the peer that were ignored without an answer: a cancel or
    #: progress for an unknown or finished request, a late response.
    ignored_events: int
    #: Requests accepted although the peer had used their id before (after
    #: the first use was answered): a peer bug tolerated for compatibility.
    reused_ids: int = 0
    #: Of ``frames_out``, those their sender wrote itself while the writer was
    #: idle (write-through), not handed to the writer task.
    written_through: int = 0


#: What the reader does with one event: act at once, and return what it must
#: still wait for (queueing a reply, room for a notification), if anything.
_EventHandler = Callable[["Session", Event], Awaitable[None] | None]
_E = TypeVar("_E", bound=Event)


def _on(
    kind: type[_E], handler: Callable[[Session, _E], Awaitable[None] | None]
) -> tuple[type[object], _EventHandler]:
    """One row of the reader's table: the table is keyed by the event's exact
    type, so *handler* only ever gets a *kind*."""
    return kind, cast(_EventHandler, handler)


@final
class Session:
    """One live connection to one peer. Not constructed directly: use
    :func:`open_session` (or the high-level ``Client``/``serve_*`` functions)."""

    # Slots: a server holds many idle sessions, and an instance dict of this
    # many attributes was 1.5 KiB of each.
    __slots__ = (
        # Servers keep per-session state in weak maps (the peer of a session).
        "__weakref__",
        "_accepting",
        "_closed",
        "_flush_pending",
        "_frames_in",
        "_frames_out",
        "_identity",
        "_inbound",
        "_max_concurrent",
        "_notifier",
        "_nursery",
        "_outbound",
        "_outgoing_buffer",
        "_queue_closed",
        "_reader_scope",
        "_readerless",
        "_receive_channel",
        "_send_channel",
        "_send_nowait",
        "_stopping",
        "_writer_done",
        "_writer_finished",
        "_writer_idle",
        "_writer_started",
        "_written_through",
        "cancel_notify_grace",
        "close_origin",
        "close_reason",
        "dispatcher",
        "max_duration",
        "progress_idle_timeout",
        "protocol",
        "shutdown_grace",
        "transport",
    )

    def __init__(
        self,
        transport: Transport,
        protocol: Connection,
        dispatcher: Dispatcher,
        nursery: trio.Nursery,
        *,
        max_concurrent: int | None,
        max_queued: int | None,
        outgoing_buffer: int,
        progress_idle_timeout: float | None,
        max_duration: float | None,
        shutdown_grace: float,
        cancel_notify_grace: float,
        identity: Identity | None,
    ) -> None:
        self.transport = transport
        # Who the requests come from, kept by the transport's owner (None:
        # nobody authenticated the peer).
        self._identity = identity
        self.protocol = protocol
        self.dispatcher = dispatcher
        self._max_concurrent = max_concurrent
        # The writer's queue: made with the writer (see _start_writer), so an
        # idle session that always wrote through holds no channel.
        self._send_channel: trio.MemorySendChannel[Message | bytes] | None = None
        self._receive_channel: trio.MemoryReceiveChannel[Message | bytes] | None = None
        self._outgoing_buffer = outgoing_buffer
        self.progress_idle_timeout = progress_idle_timeout
        self.max_duration = max_duration
        self.shutdown_grace = shutdown_grace
        self.cancel_notify_grace = cancel_notify_grace
        # Write-through (docs/explanation/architecture.md, "One writer, with
        # write-through"): the transport's optional non-blocking send, and its
        # optional flush of what a partial non-blocking write left over.
        self._send_nowait: Callable[[bytes], None] | None = getattr(transport, "send_nowait", None)
        self._flush_pending: Callable[[], bool] | None = getattr(transport, "flush_pending", None)
        # True only while nothing is queued and the writer is not writing
        # (parked on the empty queue, or not started), the queue is open and a
        # sender can write through: then it writes its frame itself, and order
        # is kept. With write-through the writer task is started only when a
        # frame must wait for it (see _hand_to_writer): a session whose writes
        # never block (an in-memory pair, a stateless HTTP request) never
        # spawns it.
        self._nursery = nursery
        self._writer_started = False
        self._writer_idle = self._send_nowait is not None
        self._outbound = OutboundCalls(
            protocol, self._queue, self._queue_nowait, self._wait_for_room, cancel_notify_grace
        )
        self._inbound = InboundRequests(
            protocol,
            nursery,
            self._queue_reply,
            self._make_context,
            dispatcher.handle_request,
            max_concurrent=max_concurrent,
            max_queued=max_queued,
        )
        self._notifier = Notifier(
            nursery,
            self._handle_notification,
            outgoing_buffer,
        )
        self._accepting = True
        # Flags, not Events: an Event is made only if a task waits for one.
        self._stopping = Flag()
        self._closed = Flag()
        self._writer_finished = False
        self._queue_closed = False
        # Made only while shutdown waits for the writer to finish.
        self._writer_done: trio.Event | None = None
        self.close_reason: str | None = None
        self.close_origin: CancelOrigin | None = None
        self._frames_in = 0
        self._frames_out = 0
        self._written_through = 0
        # True when the session has no reader task (open_session(reader=False)):
        # the owner feeds the frames, or reads them in its own task.
        self._readerless = False
        # The scope of read_transport while the owner reads in its task:
        # closing the session cancels it, as it cancels a reader task.
        self._reader_scope: trio.CancelScope | None = None

    # ---------------------------------------------------------------- public

    @property
    def caller(self) -> Caller:
        """Who the requests arriving now come from: the caller of the
        :class:`~trio_mcp.lowlevel.Identity` the session was opened with
        (refreshed by its owner), else anonymous. A request keeps the caller
        it arrived with (``RequestContext.caller``)."""
        identity = self._identity
        return ANONYMOUS if identity is None else identity.caller

    @property
    def state(self) -> SessionState:
        return self.protocol.state

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        on_progress: Callable[[Progress], None] | None = None,
        progress_idle_timeout: float | None = DEFAULT,
        max_duration: float | None = DEFAULT,
        follows: RequestId | None = None,
    ) -> Any:
        """Send a request and wait for its result (typed by the method's result type).

        Args:
            method: an MCP method the peer accepts.
            params: attrs params instance, JSON object, or None.
            on_progress: called (synchronously, in the reader task: keep it quick)
                with each progress notification; asks the peer for progress.
            progress_idle_timeout: seconds without a response or progress before
                the request times out; each progress restarts it (TO-04). None
                disables it. Default: the session's.
            max_duration: hard cap in seconds, whatever progress says (TO-05).
                None disables it. Default: the session's.
            follows: the request this one retries (a 2026-07-28 multi
                round-trip call); noted on the record.

        A long-lived request (``subscriptions/listen``) has no default
        timeouts: it lasts until one side ends it (A-11).

        Raises:
            RPCError: the peer answered with an error.
            RequestTimeout: one of the two timeouts above fired.
            InvalidPeerResult: the result does not match the method's schema.
            SessionClosed: the session closed before the answer.
            LocalProtocolError: the request is not allowed now (lifecycle,
                capabilities, direction).

        Cancellation:
            On cancellation (the caller's scope) or a timeout, the record ends
            CANCELLED with origin CALLER or DEADLINE, ``notifications/cancelled`` is
            queued (waiting at most ``cancel_notify_grace`` seconds for queue space;
            never for ``initialize``, CN-03; nothing at all if the request was not
            yet written), a late response is ignored, and ``Cancelled`` propagates.

        Spec: TO-01..TO-05, CN-01, CN-03, CN-07, PG-02.
        """
        if not self._accepting or self._closed.is_set():
            raise self._closed_error()
        message = self.protocol.send_request(
            method, params, want_progress=on_progress is not None, follows=follows
        )
        idle, total = self._limits(method, progress_idle_timeout, max_duration)
        # Straight to the calls (not via call_prepared): one coroutine frame
        # less, resumed on every wake-up.
        return await self._outbound.call(message, on_progress, idle, total)

    def prepare_request(
        self,
        method: str,
        params: Any = None,
        *,
        want_progress: bool = False,
        follows: RequestId | None = None,
    ) -> Request:
        """Make a request without sending it, so its id is known first (a
        subscription's id, the round a retry follows). Hand it to
        :meth:`call_prepared` at once: until then it stays QUEUED.

        Raises:
            SessionClosed: the session is closing or closed.
            LocalProtocolError: as :meth:`request`.
        """
        self._check_open()
        return self.protocol.send_request(
            method, params, want_progress=want_progress, follows=follows
        )

    def call_prepared(
        self,
        message: Request,
        *,
        on_progress: Callable[[Progress], None] | None = None,
        progress_idle_timeout: float | None = DEFAULT,
        max_duration: float | None = DEFAULT,
    ) -> Coroutine[Any, Any, Any]:
        """Send a request made by :meth:`prepare_request` and wait for its
        result: ``await session.call_prepared(message)``.

        A plain method that returns the call's coroutine, so the caller awaits
        the call itself: no frame of its own to pass through on every wake-up
        of every 2026-07-28 call (issue #16). The time limits are read when it
        is called; nothing is sent until the coroutine is awaited.

        Raises / Cancellation: as :meth:`request` (with the same defaults,
        including none for a long-lived request).
        """
        idle, total = self._limits(message.method, progress_idle_timeout, max_duration)
        return self._outbound.call(message, on_progress, idle, total)

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification.

        Cancellation: a checkpoint. If already cancelled, or cancelled while the
        outgoing queue is full, nothing is sent; once queued it is sent.
        """
        self._check_open()
        message = self.protocol.send_notification(method, params)
        await trio.lowlevel.checkpoint_if_cancelled()
        await self._queue(message)
        # A schedule point too, as every trio async API is; cancellation can no
        # longer take the notification back.
        await trio.lowlevel.cancel_shielded_checkpoint()

    async def notify_prepared(self, message: Notification) -> None:
        """Send a notification the protocol layer made (the
        ``notifications/initialized`` of :meth:`Connection.complete_handshake`).

        Raises:
            SessionClosed: the outgoing queue is closed.

        Cancellation: as :meth:`notify`: a checkpoint. If already cancelled, or
        cancelled while the outgoing queue is full, nothing is sent; once
        queued it is sent.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        await self._queue(message)
        await trio.lowlevel.cancel_shielded_checkpoint()

    async def notify_task_progress(
        self,
        token: str | int,
        progress: float,
        total: float | None = None,
        message: str | None = None,
        *,
        meta: JSONObject | None = None,
    ) -> None:
        """Send ``notifications/progress`` for a 2025-11-25 task, whose
        request's *token* outlives the request (see
        :meth:`Connection.task_progress_notification`).

        Cancellation: as :meth:`notify`.
        """
        self._check_open()
        message_ = self.protocol.task_progress_notification(
            token, progress, total, message, meta=meta
        )
        await trio.lowlevel.checkpoint_if_cancelled()
        await self._queue(message_)
        await trio.lowlevel.cancel_shielded_checkpoint()

    def requests(self) -> list[RequestRecord]:
        """Snapshots of recent finished and all in-flight requests."""
        return self.protocol.requests()

    def statistics(self) -> SessionStatistics:
        """A frozen snapshot of this session's counters."""
        p = self.protocol.statistics()
        states = [r.state for r in self.protocol.requests() if not r.state.is_terminal]
        return SessionStatistics(
            state=self.protocol.state,
            queued=states.count(RequestState.QUEUED),
            running=states.count(RequestState.RUNNING),
            completed=p.completed,
            failed=p.failed,
            cancelled=p.cancelled,
            peak_in_flight=p.peak_in_flight_inbound,
            max_concurrent=self._max_concurrent,
            outgoing_queue_used=(
                0
                if self._send_channel is None
                else self._send_channel.statistics().current_buffer_used
            ),
            outgoing_queue_size=self._outgoing_buffer,
            frames_in=self._frames_in,
            frames_out=self._frames_out,
            invalid_messages=p.invalid_messages,
            ignored_events=p.ignored_events,
            reused_ids=p.reused_ids,
            written_through=self._written_through,
        )

    async def feed(self, data: bytes) -> None:
        """Take one inbound frame from the session's owner, in the owner's task:
        what the reader does with a frame it read (observer, frame count,
        parsing, each event to its handler).

        Only for a session opened with ``reader=False``, whose frames arrive
        in the owner's own task: a 2026-07-28 POST's one request, where a
        reader task would cost a spawn and two scheduler passes for one frame.
        Raises ``RuntimeError`` on a session that has a reader (two takers of
        frames would race) and :class:`~trio_mcp.SessionClosed` once the
        session is closed (a frame fed then would find no session to serve it).

        Cancellation: the frame is parsed and its requests started (each in
        its task, SE-01) before the first checkpoint; cancelling the caller
        while a refusal is being queued drops that refusal, as cancelling the
        reader would.
        """
        if not self._readerless:
            raise RuntimeError("feed() is for a session opened with reader=False")
        if self._reader_scope is not None:
            raise RuntimeError("feed() while read_transport() reads: two takers of frames")
        if self.closed:
            raise self._closed_error()
        await self._take_frame(data)

    def feed_eof(self) -> None:
        """The peer's side ended, told by the owner of a ``reader=False``
        session: what the reader does on end-of-channel. Pending calls fail
        and running requests are cancelled, origin ``transport`` (HM-13,
        CN-13); the session is closed. Idempotent; no-op once closed.

        Cancellation: synchronous; the cancelled handlers end in their own
        tasks.
        """
        if not self._readerless:
            raise RuntimeError("feed_eof() is for a session opened with reader=False")
        self._transport_lost("the peer closed the connection")

    async def read_transport(self) -> None:
        """Be the session's reader in the calling task: read the transport and
        take each frame as the reader task would, until the peer's side ends
        or the session is closed (by either side, or the transport's loss).

        Only for a session opened with ``reader=False`` whose owner has
        nothing to do but wait for the session to end (a server's task per
        session): the reader needs no task of its own then, which is ~2 KiB
        of every idle session (issue #16). Raises ``RuntimeError`` on a
        session that has a reader task, or when the transport is already
        being read (two takers of frames would race).

        Cancellation: closing the session (:meth:`aclose` from any task, the
        transport's loss, a fatal frame) ends this call, as it ends a reader
        task. Cancelling the caller stops the reading; as the owner, leaving
        the ``open_session`` body then shuts the session down as usual.
        """
        if not self._readerless:
            raise RuntimeError("read_transport() is for a session opened with reader=False")
        if self._reader_scope is not None:
            raise RuntimeError("read_transport() is already reading this session's transport")
        if self.closed:
            await trio.lowlevel.checkpoint()
            return
        with trio.CancelScope() as scope:
            self._reader_scope = scope
            try:
                await self._reader()
            finally:
                self._reader_scope = None

    def start_soon(
        self, async_fn: Callable[..., Awaitable[object]], *args: object, name: str | None = None
    ) -> None:
        """Run ``async_fn(*args)`` in a task of the session's own nursery, for
        work that lives as long as the session (a server's notice delivery):
        no nursery of the caller's is needed to hold it.

        Cancellation: the task is cancelled with the session's other tasks,
        when the session has shut down (leaving ``open_session``), or when a
        scope enclosing the session is cancelled. An exception it raises
        ends the session, as one raised by any of the session's tasks.
        """
        self._nursery.start_soon(async_fn, *args, name=name)

    async def wait_inbound_settled(self) -> None:
        """Block until no inbound request's task is running or queued, not
        counting long-lived streams (a 2026-07-28 ``subscriptions/listen`` is
        open until it is ended: it is no work to wait for).

        Cancellation: a plain wait; nothing changes if it is cancelled.
        """
        await self._inbound.wait_settled(streams=False)

    async def wait_stopping(self) -> None:
        """Block until the session stops accepting requests (shutdown began, or
        the transport was lost): a long-lived handler such as a subscription
        ends itself then, gracefully, within the shutdown grace.

        Cancellation: a plain wait.
        """
        await self._stopping.wait()

    async def wait_closed(self) -> None:
        """Block until the session is closed (by either side, or transport loss).

        Cancellation:
            A plain wait: cancelling it changes nothing about the session.
        """
        await self._closed.wait()

    async def aclose(self, reason: str = "session closed") -> None:
        """Shut the session down in the documented order; idempotent.

        Cancellation:
            Every step is bounded and shielded, so it completes (within about
            ``shutdown_grace`` + twice ``cancel_notify_grace`` seconds) even when the
            caller is being cancelled; ``Cancelled`` is re-raised afterwards.
            A handler that outlives its shutdown cancel (it shields itself) is
            named in a warning, and leaving the session waits for it.
        """
        grace = self.cancel_notify_grace
        if self.closed:
            # Closed by the transport's loss, everything else is done, but the
            # transport itself may never have been closed (a leaked pipe or
            # process). Transports make aclose idempotent. One scope both
            # shields and bounds it (its own deadline still applies): this
            # runs at the end of every 2026-07-28 POST.
            with trio.CancelScope(shield=True, relative_deadline=grace):
                await self.transport.aclose()
            return
        with trio.CancelScope(shield=True):
            # 1. Stop accepting: new inbound requests are refused, new calls raise.
            self._stop_accepting()
            # 2. Cancel our outbound requests; the peer is told (bounded).
            await self._outbound.cancel_all(reason)
            # 3. Let inbound requests settle, then cancel them.
            with trio.move_on_after(self.shutdown_grace):
                await self._inbound.wait_settled()
            self._inbound.cancel_all(CancelOrigin.SHUTDOWN, reason)
            with trio.move_on_after(grace) as settling:
                await self._inbound.wait_settled()
            if settling.cancelled_caught:
                self._log_stuck_handlers()
            # 4. Flush the writer (bounded), then close the transport.
            self._close_queue()
            with trio.move_on_after(grace):
                await self._wait_writer_done()
            if not self.closed:
                self._close(reason, CancelOrigin.SHUTDOWN)
            with trio.move_on_after(grace) as scope:
                await self.transport.aclose()
            if scope.cancelled_caught:
                logger.warning("closing the transport took longer than %ss", grace)

    # ------------------------------------------------------------ internals

    def _log_stuck_handlers(self) -> None:
        """Name each handler still running after its shutdown cancel: one that
        shields itself (reliability T-07) holds up the session's exit, and the
        operator must be able to tell which."""
        for record in self.protocol.requests():
            if record.direction is Direction.INBOUND and not record.state.is_terminal:
                logger.warning(
                    "handler for %s (id %r) still runs after its cancellation at shutdown;"
                    " the session's exit waits for it",
                    record.method,
                    record.id,
                )

    def _limits(
        self, method: str, idle: float | None, total: float | None
    ) -> tuple[float | None, float | None]:
        """A request's two time limits, DEFAULT replaced by the session's
        (none for a long-lived request, A-11)."""
        if idle is DEFAULT or total is DEFAULT:
            spec = METHODS.get(method)
            if spec is not None and spec.long_lived:
                default_idle: float | None = None
                default_total: float | None = None
            else:
                default_idle, default_total = self.progress_idle_timeout, self.max_duration
            if idle is DEFAULT:
                idle = default_idle
            if total is DEFAULT:
                total = default_total
        return idle, total

    async def _queue(self, message: Message) -> None:
        """Put *message* on the outgoing queue, or write it through.

        Not a checkpoint when there is room (a yield here would cost a
        scheduler round trip per message); blocks while the queue is full.
        """
        try:
            self._queue_nowait(message)
        except trio.WouldBlock:
            try:
                await self._wait_for_room(message)
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                raise self._closed_error() from None
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise self._closed_error() from None

    async def _wait_for_room(self, message: Message) -> None:
        """Queue *message* for the writer, waiting while the queue is full (after
        ``_queue_nowait`` raised ``WouldBlock``: the queue and its writer exist).

        Cancellation: a cancelled wait queued nothing.
        """
        channel = self._send_channel
        assert channel is not None  # only a queue that exists can be full
        await channel.send(message)

    def _queue_nowait(self, message: Message) -> None:
        """Write *message* now, or queue it for the writer; never yields.

        Write-through: while the writer is parked on an empty queue, the
        caller encodes the frame and writes it itself with the transport's
        ``send_nowait``. That write never yields, so cancellation cannot tear
        it, and nothing queued can be overtaken. A frame the transport cannot
        take at once goes to the writer as encoded bytes, and a partial write
        (the stdio pipe took only part of the line) hands the writer a flush
        marker: either way the writer is busy from then on, so every later
        frame queues behind the rest of this one.

        Raises:
            trio.WouldBlock: the queue is full (nothing was queued or written).
            trio.ClosedResourceError: the queue was closed by shutdown.
        """
        if not self._writer_idle:
            self._hand_to_writer(message)
            return
        send_nowait = self._send_nowait
        assert send_nowait is not None  # the writer is never idle without one
        data = self._encode(message)
        if data is None:
            return
        self._commit_frame(data)
        try:
            send_nowait(data)
        except trio.WouldBlock:
            # Nothing is queued (the writer is parked or not started): this
            # cannot block.
            self._writer_idle = False
            self._hand_to_writer(data)
            return
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            self._writer_idle = False
            self._transport_lost(f"transport failed while writing: {exc!r}", exc)
            return
        self._written_through += 1
        flush_pending = self._flush_pending
        if flush_pending is not None and flush_pending():
            self._writer_idle = False
            self._hand_to_writer(_FLUSH)

    def _hand_to_writer(self, item: Message | bytes) -> None:
        """Queue *item* for the writer task, making the queue and starting the
        writer first if nothing was ever queued.

        Raises ``trio.WouldBlock`` (full) or ``ClosedResourceError`` (shutdown
        closed the queue) having queued nothing; a closed session never starts
        its writer.
        """
        channel = self._send_channel
        if channel is None:
            if self._queue_closed:
                raise trio.ClosedResourceError("the outgoing queue is closed")
            channel = self._start_writer()
        channel.send_nowait(item)

    def _start(
        self,
        keepalive_interval: float | None,
        keepalive_timeout: float | None,
        reader: bool,
    ) -> None:
        """Start the session's parts in its nursery, just opened (see
        :func:`open_session`): the writer if it cannot write through, the
        reader unless the owner takes the frames, the keepalive."""
        if self._send_nowait is None:
            # No write-through: every frame goes by the writer.
            self._start_writer()
        if reader:
            self._nursery.start_soon(self._reader, name="trio_mcp reader")
        else:
            self._readerless = True
        if keepalive_interval is not None:
            self._nursery.start_soon(
                self._keepalive,
                keepalive_interval,
                keepalive_interval if keepalive_timeout is None else keepalive_timeout,
                name="trio_mcp keepalive",
            )

    def _start_writer(self) -> trio.MemorySendChannel[Message | bytes]:
        """Make the writer's queue and start the writer (once)."""
        send, self._receive_channel = trio.open_memory_channel[Message | bytes](
            self._outgoing_buffer
        )
        self._send_channel = send
        self._writer_started = True
        self._nursery.start_soon(self._writer, name="trio_mcp writer")
        return send

    def _commit_frame(self, data: bytes) -> None:
        """Count and observe an outgoing frame that encode() has committed.

        Observed before the write: a peer cancel read while the write waits
        can no longer stop the frame, so observers see it in that order.
        """
        self._frames_out += 1
        protocol = self.protocol
        if protocol.observing:
            protocol.observer.on_frame(FrameDirection.OUT, data, trio.current_time())

    async def _queue_reply(self, message: Message) -> None:
        """Queue a reply owed to the peer; drop it if shutdown already closed the
        outgoing queue (there is nobody left to write it). Replies come from the
        reader (ping, refusals) and from handlers that may finish late, neither
        of which may end the session with :class:`SessionClosed`.
        """
        try:
            await self._queue(message)
        except SessionClosed:
            logger.debug("dropped a reply queued after the session closed: %r", message)

    def _close_queue(self) -> None:
        """Close the outgoing queue: nothing is written through after this."""
        self._queue_closed = True
        self._writer_idle = False
        if self._send_channel is not None:
            self._send_channel.close()

    def _closed_error(self) -> SessionClosed:
        return SessionClosed(
            self.close_reason or "session closing", self.close_origin or CancelOrigin.SHUTDOWN
        )

    async def _wait_writer_done(self) -> None:
        """Block until the writer task has ended (a plain wait); at once if it
        never started (nothing was ever queued, and the queue is closed now)."""
        if self._writer_finished or not self._writer_started:
            await trio.lowlevel.checkpoint()
            return
        if self._writer_done is None:
            self._writer_done = trio.Event()
        await self._writer_done.wait()

    def _check_open(self) -> None:
        if not self._accepting or self._closed.is_set():
            raise self._closed_error()

    def _stop_accepting(self) -> None:
        """New inbound requests are refused from now on, and new calls raise."""
        self._accepting = False
        self._inbound.stop_accepting()
        self._stopping.set()

    # ----------------------------------------------------------------- tasks

    async def _writer(self) -> None:
        channel = self._receive_channel
        assert channel is not None  # made before the writer starts
        transport = self.transport
        # The transport contract's optional fast path (see src/trio_mcp/_transport.py).
        send_nowait = self._send_nowait
        flush_pending = self._flush_pending
        item: Any
        data: bytes | None = None
        try:
            async with channel:
                while True:
                    try:
                        item = channel.receive_nowait()
                    except trio.WouldBlock:
                        # Parked on an empty queue: senders may write through
                        # (see _queue_nowait) until one hands us something.
                        self._writer_idle = send_nowait is not None and not self._queue_closed
                        item = await channel.receive()
                        self._writer_idle = False
                    # Drain what is already queued without a scheduler round trip
                    # per message.
                    while item is not None:
                        if item is _FLUSH:
                            # The rest of a frame a sender wrote in part.
                            await transport.flush()  # type: ignore[attr-defined]
                        else:
                            if type(item) is bytes:
                                # Encoded, counted and observed by a sender whose
                                # write-through found the transport full.
                                data = item
                            else:
                                data = self._encode(item)
                                if data is not None:
                                    self._commit_frame(data)
                            if data is not None:
                                if send_nowait is None:
                                    await transport.send(data)
                                else:
                                    try:
                                        send_nowait(data)
                                    except trio.WouldBlock:
                                        await transport.send(data)
                                    else:
                                        # The pipe took part of the line: the
                                        # rest goes now, not with the next
                                        # frame (there may be none: the peer
                                        # would wait for it forever).
                                        if flush_pending is not None and flush_pending():
                                            await transport.flush()  # type: ignore[attr-defined]
                        try:
                            item = channel.receive_nowait()
                        except trio.WouldBlock:
                            item = None
                    # Drop the last frame before parking: an idle session would
                    # keep it alive until the next message, and a frame from
                    # orjson holds a ~4 KiB block whatever its length.
                    data = None
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            self._transport_lost(f"transport failed while writing: {exc!r}", exc)
        except trio.EndOfChannel:
            pass
        finally:
            self._writer_idle = False
            self._writer_finished = True
            if self._writer_done is not None:
                self._writer_done.set()

    def _encode(self, message: Message) -> bytes | None:
        """The writer's ``protocol.encode``, which must never end the writer.

        Everything we send is serialized when it is made (requests, notifications,
        progress, responses), so the caller gets a :class:`LocalProtocolError` for
        what is not JSON. Should a frame still fail here, it is dropped and
        logged; a request's caller fails at once (H-07).
        """
        try:
            return self.protocol.encode(message)
        except LocalProtocolError as exc:
            logger.error("dropped a frame that cannot be written: %s", exc)
            if isinstance(message, Request):
                error = ErrorObject(int(ErrorCode.INTERNAL_ERROR), str(exc))
                self._outbound.fail(message.id, error, exc)
            return None

    # Handed to the inbound requests and the notifier as bound methods (one
    # small object each, where a partial was four times the size).

    def _make_context(
        self, request_id: RequestId, method: str, params: Any, meta: JSONObject | None
    ) -> RequestContext:
        return RequestContext(
            self, self.protocol, self._queue, request_id, method, params, meta, self.caller
        )

    def _handle_notification(self, event: NotificationReceived) -> Awaitable[None]:
        return self.dispatcher.handle_notification(self, event)

    # What the reader does with each type of event (the table is _HANDLERS,
    # after the class): a function of the session, not a bound method per
    # session, so an idle session holds no table (~0.9 KiB, issue #16).

    def _on_response(self, event: ResponseReceived) -> None:
        self._outbound.on_response(event)

    def _on_error(self, event: ErrorReceived) -> None:
        self._outbound.on_error(event)

    def _on_progress(self, event: ProgressReceived) -> None:
        self._outbound.on_progress(event)

    def _on_cancel(self, event: CancelReceived) -> None:
        self._inbound.on_cancel(event)

    def _on_notification(self, event: NotificationReceived) -> Awaitable[None]:
        return self._notifier.queue(event)

    async def _reader(self) -> None:
        data: bytes | None
        # The transport contract's optional fast path (see src/trio_mcp/_transport.py).
        receive_nowait = getattr(self.transport, "receive_nowait", None)
        try:
            while True:
                if receive_nowait is None:
                    data = await self.transport.receive()
                else:
                    try:
                        data = receive_nowait()
                    except trio.WouldBlock:
                        data = await self.transport.receive()
                await self._take_frame(data)
                # Drop the frame before parking in receive() (an idle session
                # would keep it until the next one).
                data = None
        except trio.EndOfChannel:
            self._transport_lost("the peer closed the connection")
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            self._transport_lost(f"transport failed while reading: {exc!r}", exc)

    async def _take_frame(self, data: bytes) -> None:
        """One inbound frame, read by the reader or fed by the owner: seen by
        the observer, parsed, and each of its events handed to its handler in
        order (a handler's awaitable is awaited before the next event)."""
        self._frames_in += 1
        protocol = self.protocol
        if protocol.observing:
            protocol.observer.on_frame(FrameDirection.IN, data, trio.current_time())
        for event in protocol.receive_data(data):
            wait_for = _HANDLERS[type(event)](self, event)
            if wait_for is not None:
                await wait_for

    def _on_request(self, event: RequestReceived) -> Awaitable[None] | None:
        reply = self._inbound.start(event)
        return None if reply is None else self._queue_reply(reply)

    async def _on_invalid_message(self, event: InvalidMessage) -> None:
        logger.debug("refused a message from the peer: %s", event.detail)
        if event.reply is not None:
            await self._queue_reply(event.reply)
        if event.fatal:
            # Pending calls fail now with this reason, not at their timeouts.
            await self._connection_failed(f"unusable message from the peer: {event.detail}")

    def _on_ignored(self, event: Ignored) -> None:
        logger.debug("ignored (%s): %s", event.reason, event.detail)

    async def _keepalive(self, interval: float, ping_timeout: float) -> None:
        """Ping the peer *interval* seconds after each answered ping (PI-04).

        A ping unanswered after *ping_timeout* seconds closes the session as a
        connection failure (PI-03, PI-05, TO-07): close origin TRANSPORT, reason
        ``"ping timeout after Ns"``, pending calls fail with
        :class:`SessionClosed`, the transport is closed. A peer that answers
        ping with an error is alive: logged, and the keepalive goes on.

        Cancellation: runs until the session closes or its nursery is cancelled.

        Spec: PI-03, PI-04, PI-05, TO-07.
        """
        while True:
            await trio.sleep(interval)
            if self.closed:
                return
            revision = self.protocol.revision
            if revision is not None and not revision.ping:
                # 2026-07-28 has no ping: a connection is not a session, and a
                # dead stdio peer shows as EOF or a broken pipe (SI-11, SI-13).
                logger.debug("keepalive: %s has no ping; stopped", revision.version)
                return
            try:
                # request() raises SessionClosed, sending nothing, once the session stops accepting.
                await self.request(
                    "ping", progress_idle_timeout=ping_timeout, max_duration=ping_timeout
                )
            except RequestTimeout:
                reason = f"ping timeout after {ping_timeout:g}s"
                logger.warning("keepalive: %s; closing the session as a connection failure", reason)
                await self._connection_failed(reason)
                return
            except SessionClosed:
                return
            except RPCError as exc:
                logger.warning("keepalive: the peer answered ping with an error: %s", exc)

    # -------------------------------------------------------------- closing

    def _close(self, reason: str, origin: CancelOrigin, cause: BaseException | None = None) -> None:
        """Mark the session closed now: fail pending calls, cancel inbound requests."""
        self.close_reason = reason
        self.close_origin = origin
        self._stop_accepting()
        self._outbound.fail_all(reason, origin, cause)
        self._inbound.cancel_all(origin, reason)
        self.protocol.close(reason)
        self._closed.set()
        if self._reader_scope is not None:
            # The owner reads in its task (read_transport): it stops now, as
            # a reader task stops with the session.
            self._reader_scope.cancel(reason="session closed")
        self.protocol.observer.on_close(reason, trio.current_time())

    def _transport_lost(self, reason: str, cause: BaseException | None = None) -> None:
        if self.closed:
            return
        logger.debug("transport lost: %s", reason)
        self._close(reason, CancelOrigin.TRANSPORT, cause)

    async def _connection_failed(self, reason: str) -> None:
        """Close as a connection failure (the keepalive's ping timed out): like a
        lost transport, then close the transport so the peer sees it too."""
        self._transport_lost(reason)
        with trio.CancelScope(shield=True), trio.move_on_after(self.cancel_notify_grace):
            await self.transport.aclose()


#: The reader's table: what to do with each type of event.
_HANDLERS: dict[type[object], _EventHandler] = dict(
    [
        _on(ResponseReceived, Session._on_response),
        _on(RequestReceived, Session._on_request),
        _on(ErrorReceived, Session._on_error),
        _on(CancelReceived, Session._on_cancel),
        _on(ProgressReceived, Session._on_progress),
        _on(NotificationReceived, Session._on_notification),
        _on(InvalidMessage, Session._on_invalid_message),
        _on(Ignored, Session._on_ignored),
    ]
)


def _adopt_bound(transport: Transport, bound: int | None) -> int:
    """One frame bound for the session, which its connection is made with: the
    transport's framing and the codec must agree, or a bound raised on one is
    still cut at the other's default."""
    if bound is not None:
        if bound < 1:
            raise ValueError("max_message_size must be positive")
        if isinstance(getattr(transport, "max_message_size", None), int):
            transport.max_message_size = bound  # type: ignore[attr-defined]
        return bound
    own = getattr(transport, "max_message_size", None)
    if isinstance(own, int) and own > 0:
        return own
    return DEFAULT_MAX_MESSAGE_SIZE


def open_session(
    transport: Transport,
    protocol: ConnectionFactory,
    dispatcher: Dispatcher,
    *,
    max_concurrent: int | None = 64,
    max_queued: int | None = 1024,
    outgoing_buffer: int = 256,
    progress_idle_timeout: float | None = 60.0,
    max_duration: float | None = 600.0,
    shutdown_grace: float = 2.0,
    cancel_notify_grace: float = 0.5,
    observer: RequestObserver | None = None,
    keepalive_interval: float | None = None,
    keepalive_timeout: float | None = None,
    progress_interval: float = 0.0,
    max_message_size: int | None = None,
    reader: bool = True,
    identity: Identity | None = None,
) -> AbstractAsyncContextManager[Session]:
    """Run a session over *transport* for the duration of the ``async with`` body.

    Args:
        transport: a channel of frames (one item = one JSON-RPC message).
        protocol: makes the session's sans-I/O :class:`Connection` (its role
            decides client or server), called once as the session starts with
            the session's clock, observer, progress interval and frame bound
            (see :class:`~trio_mcp.protocol.ConnectionFactory`):
            ``functools.partial(Connection, Role.SERVER)``,
            ``Server.make_protocol``.
        dispatcher: answers the peer's requests and notifications.
        max_concurrent: inbound handlers running at once (None: no limit);
            requests beyond it wait, visibly QUEUED.
        max_queued: requests that may wait for a slot (None: no bound); one
            more is answered at once with -32005 "too many requests", FAILED,
            and gets no task (reliability R-09). Without *max_concurrent*
            nothing waits and this has no effect.
        outgoing_buffer: size of the bounded outgoing queue.
        progress_idle_timeout, max_duration: defaults for :meth:`Session.request`.
        shutdown_grace: how long inbound requests may settle at shutdown.
        cancel_notify_grace: bound on each small wait of the cancellation and
            shutdown paths (queueing a cancel, flushing, closing the transport).
        observer: sees every request transition and every frame (the
            connection is made with it).
        keepalive_interval: ping the peer this many seconds after each answered
            ping (None: no keepalive; PI-04).
        keepalive_timeout: a ping unanswered for this many seconds (default:
            ``keepalive_interval``) closes the session as a connection failure:
            close origin TRANSPORT, reason ``"ping timeout after Ns"``, pending
            calls fail with :class:`SessionClosed` (PI-03, PI-05, TO-07).
        progress_interval: rate limit of the progress *we* send (PG-09): at
            most one notification per inbound request every this many seconds;
            reports in between are not sent (the record still shows them),
            except one that reaches its ``total``. 0 (the default) sends every
            report, which peers and the conformance suite expect.
        max_message_size: the bound on one inbound frame, in bytes, for this
            session: the connection is made with it, and it is set on the
            transport when it has a ``max_message_size`` (stdio framing, the
            HTTP client). None: the transport's own bound when it has one, else
            16 MiB. It is also the memory one frame may take while it is
            read. A frame over it is refused unparsed: a request answered
            -32600 with the id read from its head or tail, a response failing
            its call with :class:`~trio_mcp.ResponseTooLarge`; the session goes
            on (issue 17 §1, BP-28).
        reader: False: no reader task. Either the owner hands every inbound
            frame to the session itself (:meth:`Session.feed`, then
            :meth:`Session.feed_eof` when the peer's side ends; the
            transport's ``receive`` is never called), for frames that arrive
            in the owner's task anyway (a 2026-07-28 POST); or the owner reads
            the transport in its own task (:meth:`Session.read_transport`),
            when it has nothing else to do while the session lives (a
            server's task per session).
        identity: who the peer's requests come from, kept up to date by
            the transport's owner (the HTTP application makes one per
            session); each request's context keeps the caller current when
            it arrived (``RequestContext.caller``). None: anonymous.

    Cancellation:
        Leaving the body, normally, by an exception or by cancellation, runs the
        shutdown sequence (see :meth:`Session.aclose`), bounded and shielded. An
        exception group holding a single real error is unwrapped to that error.
        When a scope *enclosing* the session is cancelled, the session's tasks are
        cancelled with it: handlers get no grace and nothing more is written (no
        -32001 replies, no ``notifications/cancelled``); records still end and
        the transport is still closed. A handler that shields itself delays the
        exit for as long as it shields (its late reply is dropped).
    """
    if isinstance(protocol, Connection):
        raise TypeError(
            "open_session takes what makes the connection, such as "
            "functools.partial(Connection, role) or Server.make_protocol, not a Connection"
        )
    if not progress_interval >= 0:
        raise ValueError("progress_interval must be >= 0")
    if max_queued is not None and max_queued < 0:
        raise ValueError("max_queued must be >= 0 (or None)")
    return _OpenSession(
        transport,
        protocol,
        dispatcher,
        {
            "max_concurrent": max_concurrent,
            "max_queued": max_queued,
            "outgoing_buffer": outgoing_buffer,
            "progress_idle_timeout": progress_idle_timeout,
            "max_duration": max_duration,
            "shutdown_grace": shutdown_grace,
            "cancel_notify_grace": cancel_notify_grace,
            "identity": identity,
        },
        _Extras(
            observer,
            keepalive_interval,
            keepalive_timeout,
            progress_interval,
            max_message_size,
            reader,
        ),
    )


class _Extras(NamedTuple):
    """What :func:`open_session` sets up around the :class:`Session` itself
    (a tuple: made for every 2026-07-28 POST, and dropped once entered)."""

    observer: RequestObserver | None
    keepalive_interval: float | None
    keepalive_timeout: float | None
    progress_interval: float
    max_message_size: int | None
    reader: bool


@final
class _OpenSession:
    """The context manager :func:`open_session` returns.

    A class, not an ``@asynccontextmanager`` generator: the server's task per
    session holds it for the session's life, and a generator (its frame with
    every argument, its context manager, Trio's record of a live async
    generator) was ~0.6 KiB of every idle session (issue #16). It does what
    the generator did, in the same order: open the nursery, start the
    session; at the exit, shut the session down (``aclose``), cancel the
    nursery, leave it with the body's exception, and give back the one real
    error of an exception group. Entered once.
    """

    __slots__ = ("_nursery", "_nursery_manager", "_session", "_setup")

    def __init__(
        self,
        transport: Transport,
        protocol: ConnectionFactory,
        dispatcher: Dispatcher,
        options: dict[str, Any],
        extras: _Extras,
    ) -> None:
        # Dropped once entered: an idle session keeps none of it.
        self._setup: (
            tuple[Transport, ConnectionFactory, Dispatcher, dict[str, Any], _Extras] | None
        ) = (
            transport,
            protocol,
            dispatcher,
            options,
            extras,
        )
        self._nursery_manager: AbstractAsyncContextManager[trio.Nursery] | None = None
        self._nursery: trio.Nursery | None = None
        self._session: Session | None = None

    async def __aenter__(self) -> Session:
        if self._setup is None:
            raise RuntimeError("open_session(...) can be entered only once")
        transport, make_protocol, dispatcher, options, extras = self._setup
        self._setup = None
        protocol = make_protocol(
            # The run's clock itself, not trio.current_time(): the same reading
            # (MockClock included) without a run-context lookup, and the
            # connection reads it five times per request.
            clock=trio.lowlevel.current_clock().current_time,
            observer=extras.observer,
            progress_interval=extras.progress_interval,
            max_message_size=_adopt_bound(transport, extras.max_message_size),
        )
        manager = trio.open_nursery()
        nursery = await manager.__aenter__()
        try:
            session = Session(transport, protocol, dispatcher, nursery, **options)
            session._start(extras.keepalive_interval, extras.keepalive_timeout, extras.reader)
        except BaseException as error:
            # As a failure in a generator's body before its yield: the
            # nursery is left with it (its tasks cancelled and waited for).
            try:
                await manager.__aexit__(type(error), error, error.__traceback__)
            except BaseExceptionGroup as group:
                reraise_unwrapped(group)
            raise
        self._nursery_manager, self._nursery, self._session = manager, nursery, session
        return session

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: object,
    ) -> bool:
        try:
            await self._leave(exc)
        except BaseException as error:
            if error is exc:
                return False  # the body's own exception goes on, as it was
            raise
        # Left without an exception, or the nursery absorbed the body's (a
        # Cancelled of its own scope): nothing propagates.
        return True

    async def _leave(self, exc: BaseException | None) -> None:
        """The generator's tail, with the body's exception *exc* in flight."""
        manager, nursery, session = self._nursery_manager, self._nursery, self._session
        if manager is None or nursery is None or session is None:
            raise RuntimeError("open_session(...) was left without being entered")
        self._nursery_manager = self._nursery = self._session = None
        try:
            try:
                try:
                    if exc is not None:
                        raise exc
                finally:
                    await session.aclose("session closed by its owner")
                    nursery.cancel_scope.cancel(reason="session closed")
            except BaseException as error:
                if not await manager.__aexit__(type(error), error, error.__traceback__):
                    raise
            else:
                await manager.__aexit__(None, None, None)
        except BaseExceptionGroup as group:
            reraise_unwrapped(group)
