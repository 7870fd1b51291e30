"""The session engine: one nursery per live connection.

Theory of operation
-------------------
:func:`~trio_mcp._session._open.open_session` opens a nursery and starts the
:class:`Session` in it. The session owns the transport, the reader, the
dispatch table and the shutdown; its collaborators own the rest, each built
with the narrow things it needs (the connection, the nursery, the writer, a
callable or two), never with the session:

* the **reader** (a method of the session, run as a task, or in the owner's
  task, or fed frame by frame by the owner) reads frames from the transport,
  feeds them to the sans-I/O :class:`~trio_mcp.protocol.Connection` and hands
  each event to its handler, looked up by type in a table (``_HANDLERS``). It
  answers ``ping`` (and, on a server, ``initialize`` and ``server/discover``)
  itself, so they are answered promptly however busy the handlers are; it
  cancels a request's scope on the peer's ``notifications/cancelled`` and
  moves a request's idle deadline on its progress, before any user code sees
  anything else;
* the :class:`~trio_mcp._session._writer.Writer` writes every outgoing frame,
  one at a time and in order, with write-through: the task that made a
  message writes it itself while the writer task is idle;
* :class:`~trio_mcp._session._inbound.InboundRequests` owns the peer's
  requests: their admission under the concurrency limit
  (:mod:`~trio_mcp._session._admission`, in arrival order), one task per
  request, its error boundary and reply, and the count that shutdown waits on;
* :class:`~trio_mcp._session._outbound.OutboundCalls` owns our requests: each
  runs in the caller's own task, which queues the request and parks until the
  reader hands it the outcome; its time limits are cancel-scope deadlines;
* :class:`~trio_mcp._session._notifier.Notifier` runs notification handlers one
  at a time, in receive order, in a task that exists only while notifications
  wait; :class:`~trio_mcp._session._keepalive.Keepalive` pings the peer, if
  asked to;
* with middleware, :class:`~trio_mcp._session._chained.ChainedMessages` runs
  what the session answers, acts on or makes itself through the chain.

Shutdown (leaving ``open_session``, or :meth:`Session.aclose`) runs in a fixed
order, each step bounded, all of it shielded (see :meth:`Session.aclose`).
Losing the transport instead (EOF, a broken pipe, a keepalive ping that timed
out) closes the session at once (:meth:`Session._close`). Open long-lived
streams (a 2026-07-28 ``subscriptions/listen``) end with their final result
on every close: at shutdown they end as it stops accepting; at EOF (the
peer may still read) and on the owner's cancel (from which their scopes are
shielded) :meth:`Session._end_streams` waits for them first, bounded.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol, TypeVar, cast, final

import trio

from .._errors import SessionClosed
from .._transport import (
    ANONYMOUS,
    Caller,
    Identity,
    Transport,
    offers_nowait_receive,
    offers_origin,
)
from .._util import Flag
from ..protocol import (
    CancelOrigin,
    CancelReceived,
    Connection,
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
    RequestReceived,
    RequestRecord,
    ResponseReceived,
    SessionState,
)
from ._chained import ChainedMessages
from ._inbound import SESSION_ANSWERED, InboundRequests, NamesRequest
from ._keepalive import Keepalive
from ._middleware import Middleware
from ._notifier import Notifier
from ._outbound import DEFAULT, OutboundCalls, SessionDefault, time_limits
from ._statistics import SessionStatistics
from ._writer import Writer

logger = logging.getLogger("trio_mcp.session")


class Answerer(Protocol):
    """What the session calls on its dispatcher: the engine's view of
    :class:`~trio_mcp._session._context.Dispatcher` (whose module imports this one)."""

    def handle_request(self, ctx: Any, /) -> Awaitable[Any]: ...

    def handle_notification(
        self, session: Session, event: NotificationReceived, /
    ) -> Awaitable[None]: ...


def middleware_of(dispatcher: object) -> tuple[Middleware, ...]:
    """The middleware chain a session runs its messages through: its
    dispatcher's ``middleware`` (``Server`` and ``Client`` have one), read
    once as the session starts."""
    chain = getattr(dispatcher, "middleware", None)
    return tuple(chain) if chain else ()


_Queue = Callable[[Message], Awaitable[None]]
#: Makes a handler's context (``RequestContext``): from the session, its
#: connection, the writer's ``queue``, and the request's id, method, params
#: and ``_meta``.
ContextFactory = Callable[
    ["Session", Connection, _Queue, RequestId, str, Any, JSONObject | None, Caller], NamesRequest
]


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

    # Slots: a server holds many idle sessions. A weakref: servers keep
    # per-session state in weak maps (the peer of a session).
    __slots__ = (
        "__weakref__",
        "_accepting",
        "_chained",
        "_closed",
        "_context_factory",
        "_frames_in",
        "_identity",
        "_inbound",
        "_max_concurrent",
        "_notifier",
        "_nursery",
        "_outbound",
        "_reader_scope",
        "_readerless",
        "_stopping",
        "_writer",
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
        dispatcher: Answerer,
        nursery: trio.Nursery,
        context_factory: ContextFactory,
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
        self._identity = identity  # kept by the transport's owner; None: anonymous
        self.protocol = protocol
        self.dispatcher = dispatcher
        self._context_factory = context_factory
        self._max_concurrent = max_concurrent
        self.progress_idle_timeout = progress_idle_timeout
        self.max_duration = max_duration
        self.shutdown_grace = shutdown_grace
        self.cancel_notify_grace = cancel_notify_grace
        self._nursery = nursery
        self._writer = Writer(
            transport,
            protocol,
            nursery,
            outgoing_buffer,
            on_lost=self._transport_lost,
            on_unwritable=self._unwritable,
            closed_error=self._closed_error,
        )
        self._outbound = OutboundCalls(protocol, self._writer, cancel_notify_grace)
        middleware = middleware_of(dispatcher)
        self._inbound = InboundRequests(
            protocol,
            nursery,
            self._writer.queue_reply,
            self._make_context,
            dispatcher.handle_request,
            max_concurrent=max_concurrent,
            max_queued=max_queued,
            middleware=middleware,
            origins=transport if middleware and offers_origin(transport) else None,
        )
        # The session's own messages through the chain (None: no middleware).
        self._chained: ChainedMessages | None = None
        if middleware:
            writer = self._writer
            self._chained = chained = ChainedMessages(
                self,
                protocol,
                middleware,
                self._inbound,
                self._outbound,
                writer.queue,
                writer.queue_reply,
                self._send_notification,
                dispatcher.handle_notification,
            )
            self._outbound.through = chained.through
        self._notifier = Notifier(nursery, self._handle_notification, outgoing_buffer)
        self._accepting = True
        # Flags, not Events: an Event is made only if a task waits for one.
        self._stopping = Flag()
        self._closed = Flag()
        self.close_reason: str | None = None
        self.close_origin: CancelOrigin | None = None
        self._frames_in = 0
        # True when the session has no reader task (open_session(reader=False)):
        # the owner feeds the frames, or reads them in its own task.
        self._readerless = False
        # The scope of read_transport while the owner reads in its task:
        # closing the session cancels it, as it cancels a reader task.
        self._reader_scope: trio.CancelScope | None = None

    # ---------------------------------------------------------------- public

    @property
    def caller(self) -> Caller:
        """Who the requests arriving now come from (the session's
        :class:`~trio_mcp.lowlevel.Identity`, else anonymous)."""
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
        progress_idle_timeout: float | SessionDefault | None = DEFAULT,
        max_duration: float | SessionDefault | None = DEFAULT,
        follows: RequestId | None = None,
        custom: bool = False,
    ) -> Any:
        """Send a request and wait for its result (typed by the method's result type).

        Args:
            method: an MCP method the peer accepts.
            params: attrs params instance, JSON object, or None.
            on_progress: called (synchronously, in the reader task: keep it quick)
                with each progress notification; asks the peer for progress.
            progress_idle_timeout: seconds without a response or progress before the
                request times out; each progress restarts it. None disables it. Default:
                the session's.
            max_duration: hard cap in seconds, whatever progress says. None disables it.
                Default: the session's.
            follows: the request this one retries (a 2026-07-28 multi
                round-trip call); noted on the record.
            custom: *method* may be a custom method of the peer's (outside the
                core set and this side's own): its params and result are JSON.

        A long-lived request (``subscriptions/listen``) has no default timeouts: it
        lasts until one side ends it.

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
            never for ``initialize``; nothing at all if the request was not
            yet written), a late response is ignored, and ``Cancelled`` propagates.

        Spec: TO-01..TO-05, CN-01, CN-03, CN-07, PG-02, A-11.
        """
        if not self._accepting or self._closed.is_set():
            raise self._closed_error()
        message = self.protocol.send_request(
            method, params, want_progress=on_progress is not None, follows=follows, custom=custom
        )
        idle, total = time_limits(method, progress_idle_timeout, max_duration, self)
        if self._chained is not None:
            return await self._chained.request(message, on_progress, idle, total)
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
        progress_idle_timeout: float | SessionDefault | None = DEFAULT,
        max_duration: float | SessionDefault | None = DEFAULT,
    ) -> Coroutine[Any, Any, Any]:
        """Send a request made by :meth:`prepare_request` and wait for its
        result: ``await session.call_prepared(message)``.

        A plain method that returns the call's coroutine, so the caller awaits
        the call itself: no frame of its own to pass through on every wake-up
        of every 2026-07-28 call. The time limits are read when it
        is called; nothing is sent until the coroutine is awaited.

        Raises / Cancellation: as :meth:`request` (with the same defaults,
        including none for a long-lived request).
        """
        idle, total = time_limits(message.method, progress_idle_timeout, max_duration, self)
        if self._chained is not None:
            return self._chained.request(message, on_progress, idle, total)
        return self._outbound.call(message, on_progress, idle, total)

    async def notify(self, method: str, params: Any = None, *, custom: bool = False) -> None:
        """Send a notification (*custom*: as :meth:`request`).

        Cancellation: a checkpoint. If already cancelled, or cancelled while the
        outgoing queue is full, nothing is sent; once queued it is sent.
        """
        self._check_open()
        if self._chained is not None:
            await self._chained.notify(method, params, custom)
            return
        await self._send_notification(
            self.protocol.send_notification(method, params, custom=custom)
        )

    async def notify_prepared(self, message: Notification) -> None:
        """Send a notification the protocol layer made (the
        ``notifications/initialized`` of :meth:`Connection.complete_handshake`).

        Raises :class:`SessionClosed` once the outgoing queue is closed.

        Cancellation: as :meth:`notify`.
        """
        if self._chained is not None:
            await self._chained.through(message, self._send_notification)
            return
        await self._send_notification(message)

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
        note = self.protocol.task_progress_notification(token, progress, total, message, meta=meta)
        if self._chained is not None:
            await self._chained.through(note, self._send_notification)
            return
        await self._send_notification(note)

    def requests(self) -> list[RequestRecord]:
        """Snapshots of recent finished and all in-flight requests."""
        return self.protocol.requests()

    def statistics(self) -> SessionStatistics:
        """A frozen snapshot of this session's counters."""
        return SessionStatistics.of(
            self.protocol,
            self._writer,
            frames_in=self._frames_in,
            max_concurrent=self._max_concurrent,
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

        Cancellation: the frame is parsed and its requests started (each in its task)
        before the first checkpoint; cancelling the caller while a refusal is being
        queued drops that refusal, as cancelling the reader would.
        """
        if not self._readerless:
            raise RuntimeError("feed() is for a session opened with reader=False")
        if self._reader_scope is not None:
            raise RuntimeError("feed() while read_transport() reads: two takers of frames")
        if self.closed:
            raise self._closed_error()
        await self._take_frame(data)

    def feed_eof(self) -> None:
        """The peer's side ended, told by the owner of a ``reader=False`` session: what
        the reader does on end-of-channel. Pending calls fail and running requests are
        cancelled, origin ``transport``; the session is closed. Idempotent; no-op once
        closed.

        Cancellation: synchronous; the cancelled handlers end in their own
        tasks.

        Spec: HM-13, CN-13.
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
        session): the reader needs no task of its own then, so an idle session
        holds one task fewer. Raises ``RuntimeError`` on a
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

        Cancellation: a plain wait."""
        await self._stopping.wait()

    async def wait_closed(self) -> None:
        """Block until the session is closed (by either side, or transport loss).

        Cancellation: a plain wait; cancelling it changes nothing about the session."""
        await self._closed.wait()

    async def aclose(self, reason: str = "session closed") -> None:
        """Shut the session down in a fixed order, the numbered steps of its
        body (inbound requests refused with -32000, then cancelled after
        ``shutdown_grace`` with -32001 replies); idempotent.

        Cancellation:
            Every step is bounded and shielded, so it completes (within about
            ``shutdown_grace`` + twice ``cancel_notify_grace`` seconds) even when the
            caller is being cancelled; ``Cancelled`` is re-raised afterwards.
            When the caller is being cancelled (the owner's cancel, which has
            reached every handler already), each open long-lived stream first
            ends with its final result, within ``cancel_notify_grace``:
            the streams' scopes are shielded from that cancel for this.
            A handler that outlives its shutdown cancel (it shields itself) is
            named in a warning, and leaving the session waits for it.
        """
        grace = self.cancel_notify_grace
        # The owner's own cancel (a scope enclosing the session) has already
        # reached every handler but the long-lived streams, which are shielded
        # from it so that they can still end with their final result.
        owner_cancelled = trio.current_effective_deadline() == -math.inf
        if self.closed:
            # Closed by the transport's loss: the transport itself may still
            # be open (a leaked pipe or process); its aclose is idempotent.
            # One scope both shields and bounds it (every 2026-07-28 POST).
            with trio.CancelScope(shield=True, relative_deadline=grace):
                await self.transport.aclose()
            return
        with trio.CancelScope(shield=True):
            # 1. Stop accepting: new inbound requests are refused, new calls
            # raise. When the owner was cancelled, each open stream ends now
            # with its final result, within cancel_notify_grace.
            if owner_cancelled and self._inbound.streams:
                await self._end_streams(flush=False)
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
                self._inbound.warn_still_running()
            # 4. Flush the writer (bounded), then close the transport.
            self._writer.close()
            with trio.move_on_after(grace):
                await self._writer.wait_done()
            if not self.closed:
                self._close(reason, CancelOrigin.SHUTDOWN)
            with trio.move_on_after(grace) as scope:
                await self.transport.aclose()
            if scope.cancelled_caught:
                logger.warning("closing the transport took longer than %ss", grace)

    # ------------------------------------------------------------ internals
    def _start(
        self, keepalive_interval: float | None, keepalive_timeout: float | None, reader: bool
    ) -> None:
        """Start the session's parts in its nursery, just opened: the writer,
        the reader (unless the owner reads) and the keepalive."""
        self._writer.start()
        if reader:
            self._nursery.start_soon(self._reader, name="trio_mcp reader")
        else:
            self._readerless = True
        if keepalive_interval is not None:
            keepalive = Keepalive(
                self.protocol,
                self.request,
                self._connection_failed,
                keepalive_interval,
                keepalive_interval if keepalive_timeout is None else keepalive_timeout,
            )
            self._nursery.start_soon(keepalive.run, name="trio_mcp keepalive")

    async def _send_notification(self, message: Message) -> None:
        """Queue *message* unless already cancelled (a checkpoint, then a
        schedule point: once queued, cancellation cannot take it back)."""
        await trio.lowlevel.checkpoint_if_cancelled()
        await self._writer.queue(message)
        await trio.lowlevel.cancel_shielded_checkpoint()

    def _closed_error(self) -> SessionClosed:
        return SessionClosed(
            self.close_reason or "session closing", self.close_origin or CancelOrigin.SHUTDOWN
        )

    def _check_open(self) -> None:
        if not self._accepting or self._closed.is_set():
            raise self._closed_error()

    def _stop_accepting(self) -> None:
        """New inbound requests are refused from now on, and new calls raise."""
        self._accepting = False
        self._inbound.stop_accepting()
        self._stopping.set()

    # Handed to the writer, the inbound requests and the notifier as bound
    # methods: one small object each.

    def _unwritable(self, message: Message, error: LocalProtocolError) -> None:
        """The writer dropped *message*, which could not be encoded: a
        request's caller fails at once (H-07)."""
        if isinstance(message, Request):
            failure = ErrorObject(int(ErrorCode.INTERNAL_ERROR), str(error))
            self._outbound.fail(message.id, failure, error)

    def _make_context(
        self, request_id: RequestId, method: str, params: Any, meta: JSONObject | None
    ) -> NamesRequest:
        queue = self._writer.queue if self._chained is None else self._chained.queue
        return self._context_factory(
            self, self.protocol, queue, request_id, method, params, meta, self.caller
        )

    def _handle_notification(self, event: NotificationReceived) -> Awaitable[None]:
        if self._chained is not None:
            return self._chained.notification(event)
        return self.dispatcher.handle_notification(self, event)

    async def _reader(self) -> None:
        data: bytes | None
        # The transport contract's optional fast path (see src/trio_mcp/_transport.py).
        transport = self.transport
        receive_nowait = transport.receive_nowait if offers_nowait_receive(transport) else None
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
            if self._inbound.streams:
                # The peer may still read ours (a stdio client ends a session
                # by closing the server's stdin first): each stream's final
                # result is written before the session closes.
                await self._end_streams(flush=True)
            self._transport_lost("the peer closed the connection")
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            self._transport_lost(f"transport failed while reading: {exc!r}", exc)

    async def _end_streams(self, *, flush: bool) -> None:
        """End the open long-lived streams as at shutdown, each with its
        final result (SB-09): stop accepting, which each stream's handler
        answers by returning its ``complete`` result, and wait for them,
        bounded by ``cancel_notify_grace``; with *flush*, close the outgoing
        queue and wait for it to be written in the same bound. Used at end of
        input, and by :meth:`aclose` when the owner's scope is cancelled (the
        streams are shielded from it, so they can still answer). Ordinary
        requests are left to what follows (the close at end of input, the
        rest of the shutdown).

        Cancellation: bounded and shielded, as the shutdown it stands for.
        """
        self._stop_accepting()
        with trio.CancelScope(shield=True), trio.move_on_after(self.cancel_notify_grace):
            await self._inbound.wait_streams_ended()
            if flush:
                self._writer.close()
                await self._writer.wait_done()

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
        if self._chained is not None and event.request.method in SESSION_ANSWERED:
            return self._chained.answer(event)
        reply = self._inbound.start(event)
        return None if reply is None else self._writer.queue_reply(reply)

    async def _on_invalid_message(self, event: InvalidMessage) -> None:
        logger.debug("refused a message from the peer: %s", event.detail)
        if event.reply is not None:
            await self._writer.queue_reply(event.reply)
        if event.fatal:
            # Pending calls fail now with this reason, not at their timeouts.
            await self._connection_failed(f"unusable message from the peer: {event.detail}")

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


#: The reader's table: what to do with each type of event. Functions of the
#: session, not bound methods of each one, so an idle session holds no table.
_HANDLERS: dict[type[object], _EventHandler] = dict(
    [
        _on(ResponseReceived, lambda session, event: session._outbound.on_response(event)),
        _on(RequestReceived, Session._on_request),
        _on(ErrorReceived, lambda session, event: session._outbound.on_error(event)),
        _on(
            CancelReceived,
            lambda session, event: (
                session._inbound.on_cancel(event)
                if session._chained is None
                else session._chained.cancel(event)
            ),
        ),
        _on(
            ProgressReceived,
            lambda session, event: (
                session._outbound.on_progress(event)
                if session._chained is None
                else session._chained.progress(event)
            ),
        ),
        _on(NotificationReceived, lambda session, event: session._notifier.queue(event)),
        _on(InvalidMessage, Session._on_invalid_message),
        _on(Ignored, lambda _, event: logger.debug("ignored (%s): %s", event.reason, event.detail)),
    ]
)
