"""Outbound requests: one caller waiting for one response.

Theory of operation
-------------------
:class:`OutboundCalls` owns the table of pending calls. An outbound request runs
in the caller's own task (:meth:`OutboundCalls.call`): it registers a
:class:`PendingCall`, queues the request for the writer and parks until the
reader hands it the outcome (:meth:`PendingCall.finish` reschedules the parked
task directly with an :class:`outcome.Value` or :class:`outcome.Error`; no
``trio.Event`` is made per call).

Both time limits, the progress-extended idle timeout and the hard maximum, are
the deadline of one cancel scope: the earlier of "idle timeout from the last
progress" and the cap; the reader moves it on each progress
(:meth:`OutboundCalls.on_progress`). The caller's own scopes work too. On any
cancellation, ``notifications/cancelled`` is queued without blocking the caller
past ``cancel_notify_grace`` (:meth:`OutboundCalls.cancel`), and the record says
who cancelled: our deadline (DEADLINE, raised as :class:`RequestTimeout`), the
caller's scope (CALLER, or DEADLINE when it was a deadline of the caller's), or
shutdown (SHUTDOWN, raised as :class:`SessionClosed`).

The calls know the session only through what they are built with: the
connection, the ``queue`` callable of the session and its outgoing channel.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any

import trio
from outcome import Error, Outcome, Value

from .._errors import (
    InvalidPeerResult,
    RequestTimeout,
    ResponseTooLarge,
    RPCError,
    SessionClosed,
)
from ..protocol import (
    CancelOrigin,
    Connection,
    ErrorCode,
    ErrorObject,
    ErrorReceived,
    Message,
    Progress,
    ProgressReceived,
    Request,
    RequestId,
    ResponseReceived,
)


class PendingCall:
    """An outbound request's waiter, kept while the caller waits."""

    __slots__ = ("cap", "idle", "on_progress", "outcome", "scope", "task")

    def __init__(self, on_progress: Callable[[Progress], None] | None) -> None:
        self.on_progress = on_progress
        #: The result or the error, once finished.
        self.outcome: Outcome[Any] | None = None
        #: Seconds without progress before the call times out (inf: never).
        self.idle: float = math.inf
        #: Absolute time of the hard cap (inf: none).
        self.cap: float = math.inf
        self.scope: trio.CancelScope | None = None
        #: The caller's task while it is parked in :meth:`wait`.
        self.task: trio.lowlevel.Task | None = None

    def finish(self, result: Outcome[Any]) -> None:
        """Record the outcome (the first one wins) and wake the caller."""
        if self.outcome is None:
            self.outcome = result
            task, self.task = self.task, None
            if task is not None:
                trio.lowlevel.reschedule(task)

    async def wait(self) -> None:
        """Park until :meth:`finish`.

        Cancellation: a checkpoint; if cancelled first, the outcome (if any
        arrives later) is left for nobody.
        """
        if self.outcome is not None:
            await trio.lowlevel.checkpoint()
            return
        self.task = trio.lowlevel.current_task()

        def abort(_: trio.lowlevel.RaiseCancelT) -> trio.lowlevel.Abort:
            self.task = None
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)


class OutboundCalls:
    """The requests we sent that a caller still waits for. Not constructed directly.

    Args:
        protocol: the session's connection (records and ``notifications/cancelled``).
        queue: puts a message on the outgoing queue (raises :class:`SessionClosed`
            once the session closes).
        queue_nowait: the same without ever yielding (it may write the frame
            through); raises ``trio.WouldBlock`` when the queue is full.
        outgoing: the outgoing channel itself, for the bounded, shielded queueing
            of a cancel notification.
        cancel_notify_grace: the bound on that wait, in seconds.
    """

    __slots__ = (
        "_cancel_notify_grace",
        "_pending",
        "_protocol",
        "_queue",
        "_queue_nowait",
        "_wait_for_room",
    )

    def __init__(
        self,
        protocol: Connection,
        queue: Callable[[Message], Awaitable[None]],
        queue_nowait: Callable[[Message], None],
        wait_for_room: Callable[[Message], Awaitable[None]],
        cancel_notify_grace: float,
    ) -> None:
        self._protocol = protocol
        self._queue = queue
        self._queue_nowait = queue_nowait
        self._wait_for_room = wait_for_room
        self._cancel_notify_grace = cancel_notify_grace
        self._pending: dict[RequestId, PendingCall] = {}

    async def call(
        self,
        message: Request,
        on_progress: Callable[[Progress], None] | None,
        idle: float | None,
        total: float | None,
    ) -> Any:
        """Queue *message* and wait for its outcome; see :meth:`Session.request`.

        Cancellation: as :meth:`Session.request`.
        """
        pending = PendingCall(on_progress)
        request_id = message.id
        self._pending[request_id] = pending
        now = self._protocol.clock()
        pending.idle = math.inf if idle is None else idle
        pending.cap = now + (math.inf if total is None else total)
        # One scope carries both limits: its deadline is the earlier of "idle
        # timeout from the last progress" and the hard cap; progress moves it.
        scope = trio.CancelScope(deadline=min(now + pending.idle, pending.cap))
        pending.scope = scope
        try:
            with scope:
                await self._queue(message)
                await pending.wait()
        except trio.Cancelled as exc:
            origin = CancelOrigin.DEADLINE if exc.source == "deadline" else CancelOrigin.CALLER
            reason = exc.reason or (
                "caller deadline" if origin is CancelOrigin.DEADLINE else "cancelled by the caller"
            )
            await self.cancel(request_id, origin, reason)
            raise
        finally:
            del self._pending[request_id]
        result = pending.outcome
        if result is None:  # our own deadline fired
            fired_cap = trio.current_time() >= pending.cap
            seconds = (total or 0.0) if fired_cap else pending.idle
            error = RequestTimeout(message.method, seconds, idle=not fired_cap)
            await self.cancel(request_id, CancelOrigin.DEADLINE, str(error))
            raise error
        if type(result) is Value:
            return result.value
        # Failed locally while the request may still be in flight (the caller's
        # on_progress callback raised): end the record and tell the peer, or the
        # record stays RUNNING and the peer works on. A request that already
        # ended is left alone.
        await self.cancel(request_id, CancelOrigin.CALLER, "the caller's progress callback failed")
        return result.unwrap()

    async def cancel(self, request_id: RequestId, origin: CancelOrigin, reason: str) -> None:
        """End an outbound request's record as CANCELLED and tell the peer.

        Cancellation: waits at most ``cancel_notify_grace`` seconds (shielded) for
        room in the outgoing queue; if there is none by then, the peer is not told.

        Spec: CN-01, CN-03.
        """
        note = self._protocol.cancel_outbound(request_id, origin, reason)
        if note is None:
            return
        try:
            self._queue_nowait(note)
        except trio.WouldBlock:
            with trio.move_on_after(self._cancel_notify_grace, shield=True):
                await self._wait_for_room(note)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass

    async def cancel_all(self, reason: str) -> None:
        """Shutdown: cancel every pending call (the peer is told) and fail its
        caller with :class:`SessionClosed`.

        Cancellation: each cancel notification waits as :meth:`cancel` does.
        """
        for request_id, pending in list(self._pending.items()):
            await self.cancel(request_id, CancelOrigin.SHUTDOWN, reason)
            pending.finish(Error(SessionClosed(reason, CancelOrigin.SHUTDOWN)))

    def on_response(self, event: ResponseReceived) -> None:
        """The reader got the result of one of our requests."""
        pending = self._pending.get(event.request_id)
        if pending is not None:
            pending.finish(Value(event.result))

    def on_error(self, event: ErrorReceived) -> None:
        """The reader got an error for one of our requests (the peer's, or a
        result that does not match the method's schema)."""
        pending = self._pending.get(event.request_id)
        if pending is not None:
            error: Exception
            if event.remote:
                error = RPCError.from_error(event.error)
            elif event.too_large:
                error = ResponseTooLarge(event.error.message, list(event.error.data["errors"]))
            else:
                error = InvalidPeerResult(event.error.message, list(event.error.data["errors"]))
            pending.finish(Error(error))

    def on_progress(self, event: ProgressReceived) -> None:
        """The reader got progress for one of our requests: extend its idle deadline
        (TO-04) and call the caller's callback; a failing callback fails the call."""
        pending = self._pending.get(event.request_id)
        if pending is None:
            return
        if pending.scope is not None and pending.idle != math.inf:
            pending.scope.deadline = min(trio.current_time() + pending.idle, pending.cap)
        if pending.on_progress is not None:
            try:
                pending.on_progress(event.progress)
            except Exception as exc:
                pending.finish(Error(exc))

    def fail(self, request_id: RequestId, error: ErrorObject, exc: BaseException) -> None:
        """Record one request FAILED with *error* and raise *exc* in its caller."""
        self._protocol.fail_outbound(request_id, error)
        pending = self._pending.get(request_id)
        if pending is not None:
            pending.finish(Error(exc))

    def fail_all(self, reason: str, origin: CancelOrigin, cause: BaseException | None) -> None:
        """The session closed: every pending call fails at once with
        :class:`SessionClosed` carrying *reason* (and *cause*)."""
        for request_id in list(self._pending):
            error = SessionClosed(reason, origin)
            error.__cause__ = cause
            self.fail(request_id, ErrorObject(int(ErrorCode.SESSION_CLOSED), reason), error)
