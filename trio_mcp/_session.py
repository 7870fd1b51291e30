"""The session engine: one nursery per live connection.

Theory of operation
-------------------
``open_session`` opens a nursery and starts three tasks in it:

* the **reader** reads frames from the transport, feeds them to the sans-I/O
  :class:`~trio_mcp.protocol.Protocol`, and acts on the events: it answers
  ``ping`` (and, on a server, ``initialize``) itself, so they are answered
  promptly however busy the handlers are; it cancels a request's scope on the
  peer's ``notifications/cancelled`` and moves a request's idle deadline on its
  progress, before any user code sees anything else; it wakes callers waiting
  for responses; and it starts one child task per inbound request;
* the **writer** is the only task that writes to the transport. Everybody else
  puts messages on a bounded memory channel, which is atomic under
  cancellation: a message is queued or not, and a frame is never torn;
* the **notifier** runs notification handlers one at a time, in receive order.

Each inbound request gets its :class:`trio.CancelScope` when it *arrives*. Its
task then waits for a slot of the concurrency limiter (the request is QUEUED);
if the scope was cancelled meanwhile, the handler never starts.

Each outbound request runs in the caller's own task: it queues the request and
waits. Its time limits (the progress-extended idle timeout and the hard maximum)
are cancel-scope deadlines; the caller's own scopes work too. On any
cancellation, ``notifications/cancelled`` is queued without blocking the caller
past a small bound, and the record says who cancelled.

Shutdown (leaving ``open_session``, or :meth:`Session.aclose`) runs in a fixed
order, each step bounded, and works when the caller is being cancelled:
stop accepting requests; cancel our outbound requests (the peer is told); let
inbound requests settle for ``shutdown_grace`` seconds, then cancel them; flush
the writer; close the transport. Losing the transport instead fails every
pending call at once with :class:`SessionClosed` carrying the cause.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, final
from typing import Protocol as TypingProtocol

import attrs
import trio

from ._context import RequestContext
from ._errors import InvalidPeerResult, RequestTimeout, RPCError, SessionClosed
from ._inbound import run_inbound
from ._transport import Transport
from .protocol import (
    CancelOrigin,
    CancelReceived,
    Direction,
    ErrorCode,
    ErrorObject,
    ErrorReceived,
    Event,
    FrameDirection,
    Ignored,
    InvalidMessage,
    Message,
    NotificationReceived,
    Progress,
    ProgressReceived,
    Protocol,
    RequestId,
    RequestObserver,
    RequestReceived,
    RequestRecord,
    RequestState,
    ResponseReceived,
    SessionState,
)

logger = logging.getLogger("trio_mcp.session")

#: Used for "the session's default" in per-call arguments.
DEFAULT: Any = object()


class Dispatcher(TypingProtocol):
    """What answers the peer: implemented by ``Server`` and ``Client``."""

    async def handle_request(self, ctx: RequestContext) -> Any:
        """Serve one request; return its result (attrs instance or JSON object)."""
        ...

    async def handle_notification(self, session: Session, event: NotificationReceived) -> None:
        """React to one notification (called in receive order)."""
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


class _PendingCall:
    """An outbound request's waiter, kept by the session while the caller waits."""

    __slots__ = ("cap", "done", "idle", "on_progress", "outcome", "scope")

    def __init__(self, on_progress: Callable[[Progress], None] | None) -> None:
        self.done = trio.Event()
        self.on_progress = on_progress
        self.outcome: Any = None  # ("ok", value) or ("error", exception)
        #: Seconds without progress before the call times out (inf: never).
        self.idle: float = math.inf
        #: Absolute time of the hard cap (inf: none).
        self.cap: float = math.inf
        self.scope: trio.CancelScope | None = None

    def finish(self, kind: str, value: Any) -> None:
        if self.outcome is None:
            self.outcome = (kind, value)
            self.done.set()


@final
class Session:
    """One live connection to one peer. Not constructed directly: use
    :func:`open_session` (or the high-level ``Client``/``serve_*`` functions)."""

    def __init__(
        self,
        transport: Transport,
        protocol: Protocol,
        dispatcher: Dispatcher,
        nursery: trio.Nursery,
        *,
        max_concurrent: int | None,
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
        self._limiter = trio.CapacityLimiter(max_concurrent) if max_concurrent else None
        self._max_concurrent = max_concurrent
        self._send_channel, self._receive_channel = trio.open_memory_channel[Message](
            outgoing_buffer
        )
        self._outgoing_buffer = outgoing_buffer
        self._notes_in, self._notes_out = trio.open_memory_channel[NotificationReceived](
            outgoing_buffer
        )
        self.progress_idle_timeout = progress_idle_timeout
        self.max_duration = max_duration
        self.shutdown_grace = shutdown_grace
        self.cancel_notify_grace = cancel_notify_grace
        self._pending: dict[RequestId, _PendingCall] = {}
        self._inbound_tasks = 0
        self._inbound_idle = trio.Event()
        self._inbound_idle.set()
        self._accepting = True
        self._closed = trio.Event()
        self._writer_done = trio.Event()
        self.close_reason: str | None = None
        self.close_origin: CancelOrigin | None = None
        self._frames_in = 0
        self._frames_out = 0

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
        self._check_open()
        message = self.protocol.send_request(method, params, want_progress=on_progress is not None)
        return await self._call(message, on_progress, progress_idle_timeout, max_duration)

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification.

        Cancellation: a checkpoint; if cancelled while the queue is full, nothing
        is sent.
        """
        self._check_open()
        await self._queue(self.protocol.send_notification(method, params))

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
        )

    async def wait_inbound_settled(self) -> None:
        """Block until no inbound request's task is running or queued.

        Cancellation: a plain wait; nothing changes if it is cancelled.
        """
        await self._inbound_idle.wait()

    async def wait_closed(self) -> None:
        """Block until the session is closed (by either side, or transport loss)."""
        await self._closed.wait()

    async def aclose(self, reason: str = "session closed") -> None:
        """Shut the session down in the documented order; idempotent.

        Cancellation:
            Every step is bounded and shielded, so it completes (within about
            ``shutdown_grace`` + twice ``cancel_notify_grace`` seconds) even when the
            caller is being cancelled; ``Cancelled`` is re-raised afterwards.
        """
        await self._shutdown(reason)

    # ---------------------------------------------------------- outbound path

    async def _call(
        self,
        message: Any,
        on_progress: Callable[[Progress], None] | None,
        idle: float | None,
        total: float | None,
    ) -> Any:
        idle = self.progress_idle_timeout if idle is DEFAULT else idle
        total = self.max_duration if total is DEFAULT else total
        pending = _PendingCall(on_progress)
        request_id = message.id
        self._pending[request_id] = pending
        now = trio.current_time()
        pending.idle = math.inf if idle is None else idle
        pending.cap = now + (math.inf if total is None else total)
        # One scope carries both limits: its deadline is the earlier of "idle
        # timeout from the last progress" and the hard cap; progress moves it.
        scope = trio.CancelScope(deadline=min(now + pending.idle, pending.cap))
        pending.scope = scope
        try:
            with scope:
                await self._queue(message)
                await pending.done.wait()
        except trio.Cancelled as exc:
            origin = CancelOrigin.DEADLINE if exc.source == "deadline" else CancelOrigin.CALLER
            reason = exc.reason or (
                "caller deadline" if origin is CancelOrigin.DEADLINE else "cancelled by the caller"
            )
            await self._cancel_outbound(request_id, origin, reason)
            raise
        finally:
            del self._pending[request_id]
        if pending.outcome is None:  # our own deadline fired
            fired_cap = trio.current_time() >= pending.cap
            seconds = (total or 0.0) if fired_cap else pending.idle
            error = RequestTimeout(message.method, seconds, idle=not fired_cap)
            await self._cancel_outbound(request_id, CancelOrigin.DEADLINE, str(error))
            raise error
        kind, value = pending.outcome
        if kind == "error":
            if self.protocol.outbound_entry(request_id) is not None:
                # Failed locally while the request was still in flight (the
                # caller's on_progress callback raised): end the record and tell
                # the peer, or the record stays RUNNING and the peer works on.
                await self._cancel_outbound(
                    request_id, CancelOrigin.CALLER, "the caller's progress callback failed"
                )
            raise value
        return value

    async def _cancel_outbound(
        self, request_id: RequestId, origin: CancelOrigin, reason: str
    ) -> None:
        note = self.protocol.cancel_outbound(request_id, origin, reason)
        if note is None or self.closed:
            return
        try:
            self._send_channel.send_nowait(note)
        except trio.WouldBlock:
            with trio.move_on_after(self.cancel_notify_grace, shield=True):
                await self._send_channel.send(note)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass

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

    async def _checkpoint(self) -> None:
        await trio.lowlevel.checkpoint()

    def _check_open(self) -> None:
        if self.closed or not self._accepting:
            raise self._closed_error()

    # ----------------------------------------------------------------- tasks

    async def _writer(self) -> None:
        channel = self._receive_channel
        protocol = self.protocol
        try:
            async with channel:
                async for message in channel:
                    # Drain what is already queued without a scheduler round trip
                    # per message.
                    while True:
                        data = self.protocol.encode(message)
                        if data is not None:
                            await self.transport.send(data)
                            self._frames_out += 1
                            if protocol.observing:
                                protocol.observer.on_frame(
                                    FrameDirection.OUT, data, trio.current_time()
                                )
                        try:
                            message = channel.receive_nowait()
                        except trio.WouldBlock:
                            break
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            self._transport_lost(f"transport failed while writing: {exc!r}", exc)
        except trio.EndOfChannel:
            pass
        finally:
            self._writer_done.set()

    async def _reader(self) -> None:
        try:
            while True:
                data = await self.transport.receive()
                self._frames_in += 1
                if self.protocol.observing:
                    self.protocol.observer.on_frame(FrameDirection.IN, data, trio.current_time())
                for event in self.protocol.receive_data(data):
                    await self._handle_event(event)
        except trio.EndOfChannel:
            self._transport_lost("the peer closed the connection")
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            self._transport_lost(f"transport failed while reading: {exc!r}", exc)

    async def _notifier(self) -> None:
        async for event in self._notes_out:
            try:
                await self.dispatcher.handle_notification(self, event)
            except Exception:
                logger.exception("notification handler for %s failed", event.method)

    async def _handle_event(self, event: Event) -> None:
        if isinstance(event, RequestReceived):
            await self._start_inbound(event)
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
            self._on_progress(event)
        elif isinstance(event, NotificationReceived):
            await self._notes_in.send(event)
        elif isinstance(event, InvalidMessage):
            logger.debug("refused a message from the peer: %s", event.detail)
            if event.reply is not None:
                await self._queue_reply(event.reply)
        elif isinstance(event, Ignored):
            logger.debug("ignored (%s): %s", event.reason, event.detail)

    def _on_progress(self, event: ProgressReceived) -> None:
        pending = self._pending.get(event.request_id)
        if pending is None:
            return
        if pending.scope is not None and pending.idle != math.inf:
            pending.scope.deadline = min(trio.current_time() + pending.idle, pending.cap)
        if pending.on_progress is not None:
            try:
                pending.on_progress(event.progress)
            except Exception as exc:
                # The caller's callback failed: end the call with that error.
                pending.finish("error", exc)

    async def _start_inbound(self, event: RequestReceived) -> None:
        request = event.request
        method = request.method
        if method == "ping" or method == "initialize":
            # Built in and answered by the reader itself: prompt even when every
            # slot is busy (PI-02), and the handshake cannot be starved.
            self.protocol.start_inbound(request.id)
            if method == "ping":
                reply = self.protocol.respond(request.id, {})
            else:
                reply = self.protocol.respond(
                    request.id, self.protocol.accept_initialize(event.params)
                )
            if reply is not None:
                await self._queue_reply(reply)
            return
        if not self._accepting:
            reply = self.protocol.respond_error(
                request.id, ErrorObject(int(ErrorCode.SESSION_CLOSED), "The session is closing")
            )
            if reply is not None:
                await self._queue_reply(reply)
            return
        entry = self.protocol.inbound_entry(request.id)
        assert entry is not None
        scope = trio.CancelScope()
        entry.user_data = scope
        self._inbound_tasks += 1
        self._inbound_idle = trio.Event() if self._inbound_tasks == 1 else self._inbound_idle
        ctx = RequestContext(
            self, request.id, method, event.params, (request.params or {}).get("_meta")
        )
        self._nursery.start_soon(self._run_inbound, ctx, scope)

    async def _run_inbound(self, ctx: RequestContext, scope: trio.CancelScope) -> None:
        try:
            await run_inbound(self, ctx, scope, self._limiter)
        finally:
            self._inbound_tasks -= 1
            if self._inbound_tasks == 0:
                self._inbound_idle.set()

    # -------------------------------------------------------------- closing

    def _transport_lost(self, reason: str, cause: BaseException | None = None) -> None:
        if self.closed:
            return
        logger.debug("transport lost: %s", reason)
        self._close(reason, CancelOrigin.TRANSPORT, cause)

    def _close(self, reason: str, origin: CancelOrigin, cause: BaseException | None = None) -> None:
        self.close_reason = reason
        self.close_origin = origin
        self._accepting = False
        for request_id, pending in list(self._pending.items()):
            self.protocol.fail_outbound(
                request_id, ErrorObject(int(ErrorCode.SESSION_CLOSED), reason)
            )
            error = SessionClosed(reason, origin)
            error.__cause__ = cause
            pending.finish("error", error)
        self._cancel_inbound(origin, reason)
        self.protocol.close(reason)
        self._closed.set()
        self.protocol.observer.on_close(reason, trio.current_time())

    def _cancel_inbound(self, origin: CancelOrigin, reason: str) -> None:
        for request_id in self.protocol.in_flight(Direction.INBOUND):
            entry = self.protocol.inbound_entry(request_id)
            if entry is None or entry.user_data is None:
                continue
            entry.request_cancel(origin, reason)
            entry.user_data.cancel(reason=f"{origin.value}: {reason}")

    async def _shutdown(self, reason: str) -> None:
        if self.closed:
            # Fix: closed by the transport's loss, everything else is done, but
            # the transport itself was never closed (a leaked pipe or process).
            # MemoryTransport/trio channels make aclose idempotent.
            with trio.CancelScope(shield=True), trio.move_on_after(self.cancel_notify_grace):
                await self.transport.aclose()
            return
        with trio.CancelScope(shield=True):
            # 1. Stop accepting: new inbound requests are refused, new calls raise.
            self._accepting = False
            # 2. Cancel our outbound requests; the peer is told (bounded).
            for request_id, pending in list(self._pending.items()):
                await self._cancel_outbound(request_id, CancelOrigin.SHUTDOWN, reason)
                pending.finish("error", SessionClosed(reason, CancelOrigin.SHUTDOWN))
            # 3. Let inbound requests settle, then cancel them.
            with trio.move_on_after(self.shutdown_grace):
                await self._inbound_idle.wait()
            self._cancel_inbound(CancelOrigin.SHUTDOWN, reason)
            with trio.move_on_after(self.cancel_notify_grace):
                await self._inbound_idle.wait()
            # 4. Flush the writer (bounded), then close the transport.
            self._send_channel.close()
            with trio.move_on_after(self.cancel_notify_grace):
                await self._writer_done.wait()
            if not self.closed:
                self._close(reason, CancelOrigin.SHUTDOWN)
            with trio.move_on_after(self.cancel_notify_grace) as scope:
                await self.transport.aclose()
            if scope.cancelled_caught:
                logger.warning(
                    "closing the transport took longer than %ss", self.cancel_notify_grace
                )


@asynccontextmanager
async def open_session(
    transport: Transport,
    protocol: Protocol,
    dispatcher: Dispatcher,
    *,
    max_concurrent: int | None = 64,
    outgoing_buffer: int = 256,
    progress_idle_timeout: float | None = 60.0,
    max_duration: float | None = 600.0,
    shutdown_grace: float = 2.0,
    cancel_notify_grace: float = 0.5,
    observer: RequestObserver | None = None,
) -> AsyncIterator[Session]:
    """Run a session over *transport* for the duration of the ``async with`` body.

    Args:
        transport: a channel of frames (one item = one JSON-RPC message).
        protocol: the sans-I/O state (its role decides client or server).
        dispatcher: answers the peer's requests and notifications.
        max_concurrent: inbound handlers running at once (None: no limit);
            requests beyond it wait, visibly QUEUED.
        outgoing_buffer: size of the bounded outgoing queue.
        progress_idle_timeout, max_duration: defaults for :meth:`Session.request`.
        shutdown_grace: how long inbound requests may settle at shutdown.
        cancel_notify_grace: bound on each small wait of the cancellation and
            shutdown paths (queueing a cancel, flushing, closing the transport).
        observer: sees every request transition and every frame (replaces the
            protocol's observer).

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
    try:
        async with trio.open_nursery() as nursery:
            session = Session(
                transport,
                protocol,
                dispatcher,
                nursery,
                max_concurrent=max_concurrent,
                outgoing_buffer=outgoing_buffer,
                progress_idle_timeout=progress_idle_timeout,
                max_duration=max_duration,
                shutdown_grace=shutdown_grace,
                cancel_notify_grace=cancel_notify_grace,
            )
            protocol.clock = trio.current_time
            if observer is not None:
                protocol.observer = observer
                protocol.observing = True
            nursery.start_soon(session._writer, name="trio_mcp writer")
            nursery.start_soon(session._reader, name="trio_mcp reader")
            nursery.start_soon(session._notifier, name="trio_mcp notifier")
            try:
                yield session
            finally:
                await session.aclose("session closed by its owner")
                nursery.cancel_scope.cancel(reason="session closed")
    except BaseExceptionGroup as group:
        raise unwrap_group(group) from None


def unwrap_group(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The group's only non-Cancelled leaf, or the group itself if there are several."""
    _, rest = group.split(trio.Cancelled)
    leaves = list(_leaves(rest)) if rest is not None else []
    if len(leaves) == 1:
        return leaves[0]
    return group


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]
