"""The session engine: one nursery per live connection.

Theory of operation
-------------------
``open_session`` opens a nursery and starts two tasks in it (a third on demand):

* the **reader** reads frames from the transport, feeds them to the sans-I/O
  :class:`~trio_mcp.protocol.Connection`, and acts on the events: it answers
  ``ping`` (and, on a server, ``initialize``) itself, so they are answered
  promptly however busy the handlers are; it cancels a request's scope on the
  peer's ``notifications/cancelled`` and moves a request's idle deadline on its
  progress, before any user code sees anything else; it wakes callers waiting
  for responses; and it starts one child task per inbound request;
* the **writer** is the only task that writes to the transport. Everybody else
  puts messages on a bounded memory channel, which is atomic under
  cancellation: a message is queued or not, and a frame is never torn;
* the **notifier** runs notification handlers one at a time, in receive order,
  and exists only while notifications wait (:mod:`trio_mcp._session._notifier`).

Each inbound request gets its :class:`trio.CancelScope` and its task when it
*arrives*. Under a concurrency limit the reader also makes the admission
decision there, in arrival order (:mod:`trio_mcp._session._admission`): the request takes
a free slot at once or queues in a FIFO (its record stays QUEUED); a freed slot
goes to the oldest request still waiting. If a request's scope is cancelled
while it waits, the handler never starts. Running the handler, its error
boundary and its reply are :mod:`trio_mcp._session._inbound`.

Each outbound request runs in the caller's own task (:mod:`trio_mcp._session._outbound`):
it queues the request and parks until the reader hands it the outcome. Its time
limits (the progress-extended idle timeout and the hard maximum) are
cancel-scope deadlines; the caller's own scopes work too. On any cancellation,
``notifications/cancelled`` is queued without blocking the caller past a small
bound, and the record says who cancelled. An optional keepalive task pings the
peer periodically and treats an unanswered ping as a connection failure.

Shutdown (leaving ``open_session``, or :meth:`Session.aclose`) runs in a fixed
order, each step bounded, and works when the caller is being cancelled
(:mod:`trio_mcp._session._shutdown`): stop accepting requests; cancel our outbound
requests (the peer is told); let inbound requests settle for ``shutdown_grace``
seconds, then cancel them; flush the writer; close the transport. Losing the
transport instead fails every pending call at once with :class:`SessionClosed`
carrying the cause.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, final
from typing import Protocol as TypingProtocol

import attrs
import trio

from .._errors import InvalidPeerResult, RPCError, SessionClosed
from .._transport import Transport
from .._util import unwrap_group
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
    LocalProtocolError,
    Message,
    NotificationReceived,
    Progress,
    ProgressReceived,
    Request,
    RequestId,
    RequestObserver,
    RequestReceived,
    RequestRecord,
    RequestState,
    ResponseReceived,
    SessionState,
)
from . import _inbound, _notifier, _outbound, _shutdown
from ._admission import Admission
from ._context import RequestContext
from ._outbound import PendingCall

logger = logging.getLogger("trio_mcp.session")

#: Used for "the session's default" in per-call arguments.
DEFAULT: Any = object()


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
            Runs in the session's reader: it is cancelled only when the session
            shuts down, and while it blocks no later frame is read.
        """
        ...


@attrs.frozen
class SessionStatistics:
    """A frozen snapshot of a session's counters (trio's ``statistics()`` convention)."""

    state: SessionState
    #: In-flight requests per state, both directions.
    queued: int
    running: int
    #: Totals since the session opened.
    completed: int
    failed: int
    cancelled: int
    #: Most inbound requests in flight at once.
    peak_in_flight: int
    max_concurrent: int | None
    outgoing_queue_used: int
    outgoing_queue_size: int
    frames_in: int
    frames_out: int
    invalid_messages: int
    ignored_events: int
    #: Requests accepted although the peer had used their id before (C-02).
    reused_ids: int = 0


@final
class Session:
    """One live connection to one peer. Not constructed directly: use
    :func:`open_session` (or the high-level ``Client``/``serve_*`` functions)."""

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
    ) -> None:
        self.transport = transport
        self.protocol = protocol
        self.dispatcher = dispatcher
        self._nursery = nursery
        self._admission = Admission(max_concurrent, max_queued) if max_concurrent else None
        self._max_concurrent = max_concurrent
        self._send_channel, self._receive_channel = trio.open_memory_channel[Message](
            outgoing_buffer
        )
        self._outgoing_buffer = outgoing_buffer
        # Notifications waiting for the notifier, oldest first; None while no
        # notifier runs (made on demand: an idle session holds neither a queue
        # nor a task for them).
        self._notes: deque[NotificationReceived] | None = None
        # Made only while the reader waits for room in ``_notes``.
        self._notes_room: trio.Event | None = None
        self.progress_idle_timeout = progress_idle_timeout
        self.max_duration = max_duration
        self.shutdown_grace = shutdown_grace
        self.cancel_notify_grace = cancel_notify_grace
        self._pending: dict[RequestId, PendingCall] = {}
        self._inbound_tasks = 0
        # Made only while somebody waits for the inbound tasks to settle (a
        # trio.Event per request cost a constructor and a set() on the hot path).
        self._inbound_idle: trio.Event | None = None
        self._accepting = True
        self._closed = trio.Event()
        self._writer_finished = False
        # Made only while shutdown waits for the writer to finish.
        self._writer_done: trio.Event | None = None
        self.close_reason: str | None = None
        self.close_origin: CancelOrigin | None = None
        self._frames_in = 0
        self._frames_out = 0
        self._warned_reuse = False

    # ---------------------------------------------------------------- public

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
        message = self.protocol.send_request(method, params, want_progress=on_progress is not None)
        # Straight to _outbound.call (not via _call): one coroutine frame less on
        # the hot path, resumed on every wake-up.
        return await _outbound.call(
            self,
            message,
            on_progress,
            self.progress_idle_timeout
            if progress_idle_timeout is DEFAULT
            else progress_idle_timeout,
            self.max_duration if max_duration is DEFAULT else max_duration,
        )

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
            outgoing_queue_used=self._send_channel.statistics().current_buffer_used,
            outgoing_queue_size=self._outgoing_buffer,
            frames_in=self._frames_in,
            frames_out=self._frames_out,
            invalid_messages=p.invalid_messages,
            ignored_events=p.ignored_events,
            reused_ids=p.reused_ids,
        )

    async def wait_inbound_settled(self) -> None:
        """Block until no inbound request's task is running or queued.

        Cancellation: a plain wait; nothing changes if it is cancelled.
        """
        if self._inbound_tasks == 0:
            await trio.lowlevel.checkpoint()
            return
        if self._inbound_idle is None:
            self._inbound_idle = trio.Event()
        await self._inbound_idle.wait()

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
        """
        await _shutdown.shutdown(self, reason)

    # ------------------------------------------------------------ internals

    async def _call(
        self,
        message: Any,
        on_progress: Callable[[Progress], None] | None,
        idle: float | None,
        total: float | None,
    ) -> Any:
        """Queue an already-made request and wait for its outcome (the client's
        handshake uses it for ``initialize``); *idle*/*total* may be DEFAULT."""
        return await _outbound.call(
            self,
            message,
            on_progress,
            self.progress_idle_timeout if idle is DEFAULT else idle,
            self.max_duration if total is DEFAULT else total,
        )

    async def _queue(self, message: Message) -> None:
        """Put *message* on the outgoing queue.

        Not a checkpoint when there is room (the hot path: a yield here would cost
        a scheduler round trip per message); blocks while the queue is full.
        """
        try:
            self._send_channel.send_nowait(message)
        except trio.WouldBlock:
            try:
                await self._send_channel.send(message)
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                raise self._closed_error() from None
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise self._closed_error() from None

    async def _queue_reply(self, message: Message) -> None:
        """Queue a reply owed to the peer; drop it if shutdown already closed the
        outgoing queue (there is nobody left to write it).

        Fix: the reader (ping, refusals) and late handlers used ``_queue``
        directly, so a frame arriving while the writer flushed at shutdown
        crashed the session with SessionClosed.
        """
        try:
            await self._queue(message)
        except SessionClosed:
            logger.debug("dropped a reply queued after the session closed: %r", message)

    def _closed_error(self) -> SessionClosed:
        return SessionClosed(
            self.close_reason or "session closing", self.close_origin or CancelOrigin.SHUTDOWN
        )

    async def _wait_writer_done(self) -> None:
        """Block until the writer task has ended (a plain wait)."""
        if self._writer_finished:
            await trio.lowlevel.checkpoint()
            return
        if self._writer_done is None:
            self._writer_done = trio.Event()
        await self._writer_done.wait()

    def _check_open(self) -> None:
        if self.closed or not self._accepting:
            raise self._closed_error()

    # ----------------------------------------------------------------- tasks

    async def _writer(self) -> None:
        channel = self._receive_channel
        protocol = self.protocol
        # The transport contract's optional fast path (see trio_mcp/_transport.py).
        send_nowait = getattr(self.transport, "send_nowait", None)
        try:
            async with channel:
                while True:
                    message = await channel.receive()
                    # Drain what is already queued without a scheduler round trip
                    # per message.
                    while True:
                        data = self._encode(message)
                        if data is not None:
                            # Observed before the send: encode() has committed the
                            # frame (a peer cancel read while the send blocks can
                            # no longer stop it), so observers see it in that order.
                            self._frames_out += 1
                            if protocol.observing:
                                protocol.observer.on_frame(
                                    FrameDirection.OUT, data, trio.current_time()
                                )
                            if send_nowait is None:
                                await self.transport.send(data)
                            else:
                                try:
                                    send_nowait(data)
                                except trio.WouldBlock:
                                    await self.transport.send(data)
                        try:
                            message = channel.receive_nowait()
                        except trio.WouldBlock:
                            break
                    # Drop the last frame before parking: an idle session would
                    # keep it alive until the next message, and a frame from
                    # orjson holds a ~4 KiB block whatever its length.
                    data = message = None  # type: ignore[assignment]
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            self._transport_lost(f"transport failed while writing: {exc!r}", exc)
        except trio.EndOfChannel:
            pass
        finally:
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
                self.protocol.fail_outbound(message.id, error)
                pending = self._pending.get(message.id)
                if pending is not None:
                    pending.finish("error", exc)
            return None

    async def _reader(self) -> None:
        # The transport contract's optional fast path (see trio_mcp/_transport.py).
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
                self._frames_in += 1
                if self.protocol.observing:
                    self.protocol.observer.on_frame(FrameDirection.IN, data, trio.current_time())
                for event in self.protocol.receive_data(data):
                    kind = type(event)
                    # The two hot paths inline, without a coroutine per event.
                    if kind is ResponseReceived:
                        pending = self._pending.get(event.request_id)  # type: ignore[union-attr]
                        if pending is not None:
                            pending.finish("ok", event.result)  # type: ignore[union-attr]
                    elif kind is RequestReceived:
                        reply = _inbound.start(self, event)  # type: ignore[arg-type]
                        if reply is not None:
                            await self._queue_reply(reply)
                    else:
                        await self._handle_event(event)
                # Drop the last frame and event before parking in receive() (an
                # idle session would keep them until the next frame).
                data = event = pending = reply = None  # type: ignore[assignment]
        except trio.EndOfChannel:
            self._transport_lost("the peer closed the connection")
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            self._transport_lost(f"transport failed while reading: {exc!r}", exc)

    async def _handle_event(self, event: Event) -> None:
        if isinstance(event, RequestReceived):
            reply = _inbound.start(self, event)
            if reply is not None:
                await self._queue_reply(reply)
        elif isinstance(event, ResponseReceived):
            pending = self._pending.get(event.request_id)
            if pending is not None:
                pending.finish("ok", event.result)
        elif isinstance(event, ErrorReceived):
            pending = self._pending.get(event.request_id)
            if pending is not None:
                error: Exception
                if event.remote:
                    error = RPCError.from_error(event.error)
                else:
                    error = InvalidPeerResult(event.error.message, list(event.error.data["errors"]))
                pending.finish("error", error)
        elif isinstance(event, CancelReceived):
            entry = self.protocol.inbound_entry(event.request_id)
            if entry is not None and entry.user_data is not None:
                entry.user_data.cancel(
                    reason=f"cancelled by the peer: {event.reason or 'no reason'}"
                )
        elif isinstance(event, ProgressReceived):
            _outbound.on_progress(self, event)
        elif isinstance(event, NotificationReceived):
            await _notifier.queue(self, event)
        elif isinstance(event, InvalidMessage):
            logger.debug("refused a message from the peer: %s", event.detail)
            if event.reply is not None:
                await self._queue_reply(event.reply)
            if event.fatal:
                # Pending calls fail now with this reason, not at their timeouts.
                await self._connection_failed(f"unusable message from the peer: {event.detail}")
        elif isinstance(event, Ignored):
            logger.debug("ignored (%s): %s", event.reason, event.detail)

    def _inbound_done(self) -> None:
        """An inbound request's task ended (called by run_inbound)."""
        self._inbound_tasks -= 1
        if self._inbound_tasks == 0 and self._inbound_idle is not None:
            self._inbound_idle.set()
            self._inbound_idle = None

    # -------------------------------------------------------------- closing

    def _transport_lost(self, reason: str, cause: BaseException | None = None) -> None:
        if self.closed:
            return
        logger.debug("transport lost: %s", reason)
        _shutdown.close(self, reason, CancelOrigin.TRANSPORT, cause)

    async def _connection_failed(self, reason: str) -> None:
        """Close as a connection failure (the keepalive's ping timed out): like a
        lost transport, then close the transport so the peer sees it too."""
        self._transport_lost(reason)
        with trio.CancelScope(shield=True), trio.move_on_after(self.cancel_notify_grace):
            await self.transport.aclose()


@asynccontextmanager
async def open_session(
    transport: Transport,
    protocol: Connection,
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
) -> AsyncIterator[Session]:
    """Run a session over *transport* for the duration of the ``async with`` body.

    Args:
        transport: a channel of frames (one item = one JSON-RPC message).
        protocol: the sans-I/O state (its role decides client or server).
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
        observer: sees every request transition and every frame (replaces the
            protocol's observer).
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
    if not progress_interval >= 0:
        raise ValueError("progress_interval must be >= 0")
    if max_queued is not None and max_queued < 0:
        raise ValueError("max_queued must be >= 0 (or None)")
    protocol.progress_interval = progress_interval
    try:
        async with trio.open_nursery() as nursery:
            session = Session(
                transport,
                protocol,
                dispatcher,
                nursery,
                max_concurrent=max_concurrent,
                max_queued=max_queued,
                outgoing_buffer=outgoing_buffer,
                progress_idle_timeout=progress_idle_timeout,
                max_duration=max_duration,
                shutdown_grace=shutdown_grace,
                cancel_notify_grace=cancel_notify_grace,
            )
            # The run's clock itself, not trio.current_time(): the same reading
            # (MockClock included) without a run-context lookup, five times per
            # request on the hot path.
            protocol.clock = trio.lowlevel.current_clock().current_time
            if observer is not None:
                protocol.observer = observer
                protocol.observing = True
            nursery.start_soon(session._writer, name="trio_mcp writer")
            nursery.start_soon(session._reader, name="trio_mcp reader")
            if keepalive_interval is not None:
                nursery.start_soon(
                    _outbound.keepalive,
                    session,
                    keepalive_interval,
                    keepalive_interval if keepalive_timeout is None else keepalive_timeout,
                    name="trio_mcp keepalive",
                )
            try:
                yield session
            finally:
                await session.aclose("session closed by its owner")
                nursery.cancel_scope.cancel(reason="session closed")
    except BaseExceptionGroup as group:
        raise unwrap_group(group) from None
