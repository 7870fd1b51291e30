"""Outbound requests: one caller waiting for one response.

Theory of operation
-------------------
:class:`OutboundCalls` owns the table of pending calls. An outbound request runs
in the caller's own task (:meth:`OutboundCalls.call`): it registers a
:class:`PendingCall`, queues the request for the writer and parks until the
reader hands it the outcome (a :class:`PendingCall` is a
:class:`~trio_mcp._parking.Parking`: the reader wakes the parked caller with an
:class:`outcome.Value` or :class:`outcome.Error`).

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
connection and the session's :class:`~trio_mcp._session._writer.Writer`.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Awaitable, Callable
from typing import Any, Final, Protocol

import trio
from outcome import Error, Value

from .._errors import (
    InvalidPeerResult,
    RequestTimeout,
    ResponseTooLarge,
    RPCError,
    SessionClosed,
)
from .._parking import Parking
from ..protocol import (
    METHODS,
    CancelOrigin,
    Connection,
    ErrorCode,
    ErrorObject,
    ErrorReceived,
    Message,
    Notification,
    Progress,
    ProgressReceived,
    Request,
    RequestId,
    ResponseReceived,
)
from ._writer import Writer


class SessionDefault(enum.Enum):
    """The type of :data:`DEFAULT`: a per-call argument left to the session.

    A one-member enum, so a type checker narrows ``x is DEFAULT`` away, and a signature
    shown by ``help()`` reads ``= the session's default`` rather than an object's
    address.
    """

    DEFAULT = "the session's default"

    def __repr__(self) -> str:
        return self.value


#: A per-call time limit left to the session (``progress_idle_timeout=``,
#: ``max_duration=`` of :func:`open_session`), or to none at all for a
#: long-lived request.
DEFAULT: Final = SessionDefault.DEFAULT


class TimeLimits(Protocol):
    """Where a request's default time limits are read (a session's)."""

    progress_idle_timeout: float | None
    max_duration: float | None


def time_limits(
    method: str,
    idle: float | SessionDefault | None,
    total: float | SessionDefault | None,
    defaults: TimeLimits,
) -> tuple[float | None, float | None]:
    """A request's two time limits (the idle timeout and the hard cap),
    DEFAULT replaced by those of *defaults*, or by none at all for a
    long-lived request (A-11)."""
    if idle is DEFAULT or total is DEFAULT:
        spec = METHODS.get(method)
        if spec is not None and spec.long_lived:
            default_idle: float | None = None
            default_total: float | None = None
        else:
            default_idle, default_total = defaults.progress_idle_timeout, defaults.max_duration
        if idle is DEFAULT:
            idle = default_idle
        if total is DEFAULT:
            total = default_total
    return idle, total


class PendingCall(Parking):
    """An outbound request's waiter, kept while the caller waits: the caller
    parks on it (:meth:`~trio_mcp._parking.Parking.park`) and the reader wakes
    it with the outcome (:meth:`~trio_mcp._parking.Parking.wake`, the first
    one wins). Its limits are set by :meth:`OutboundCalls.call`, which makes it.
    """

    __slots__ = ("cap", "idle", "on_progress", "scope")

    on_progress: Callable[[Progress], None] | None
    #: Seconds without progress before the call times out (inf: never).
    idle: float
    #: Absolute time of the hard cap (inf: none).
    cap: float
    scope: trio.CancelScope


#: The session's middleware chain around an outbound notification it makes:
#: ``through(note, send)`` runs the chain and sends the note (as the chain
#: left its params) with ``send``.
Through = Callable[[Notification, Callable[[Message], Awaitable[None]]], Awaitable[None]]


class OutboundCalls:
    """The requests we sent that a caller still waits for. Not constructed directly.

    Args:
        protocol: the session's connection (records and ``notifications/cancelled``).
        writer: the session's writer, where each request is queued (its
            ``queue`` raises :class:`SessionClosed` once the session closes),
            and each cancel notification, without blocking past a bound.
        cancel_notify_grace: that bound, in seconds.
    """

    __slots__ = ("_cancel_notify_grace", "_pending", "_protocol", "_writer", "through")

    def __init__(self, protocol: Connection, writer: Writer, cancel_notify_grace: float) -> None:
        self._protocol = protocol
        self._writer = writer
        self._cancel_notify_grace = cancel_notify_grace
        self._pending: dict[RequestId, PendingCall] = {}
        #: The session's middleware chain around an outbound notification
        #: (``through(note, send)``), None without middleware.
        self.through: Through | None = None

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
        pending = PendingCall()
        pending.on_progress = on_progress
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
                await self._writer.queue(message)
                # Not unwrapped here: an error outcome is raised below, out of
                # the scope, once the record is settled.
                await pending.park()
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
        room in the outgoing queue, and for the session's middleware around
        the notification; if there is none by then, the peer is not told.

        Spec: CN-01, CN-03.
        """
        note = self._protocol.cancel_outbound(request_id, origin, reason)
        if note is None:
            return
        through = self.through
        if through is None:
            await self._tell(note)
            return
        with trio.CancelScope(shield=True), trio.move_on_after(self._cancel_notify_grace):
            await through(note, self._tell)

    async def _tell(self, note: Message) -> None:
        """Queue a cancel notification, waiting (bounded, shielded) for room."""
        try:
            self._writer.queue_nowait(note)
        except trio.WouldBlock:
            with trio.move_on_after(self._cancel_notify_grace, shield=True):
                await self._writer.wait_for_room(note)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass

    async def cancel_all(self, reason: str) -> None:
        """Shutdown: cancel every pending call (the peer is told) and fail its
        caller with :class:`SessionClosed`.

        Cancellation: each cancel notification waits as :meth:`cancel` does.
        """
        for request_id, pending in list(self._pending.items()):
            await self.cancel(request_id, CancelOrigin.SHUTDOWN, reason)
            pending.wake(Error(SessionClosed(reason, CancelOrigin.SHUTDOWN)))

    def on_response(self, event: ResponseReceived) -> None:
        """The reader got the result of one of our requests."""
        pending = self._pending.get(event.request_id)
        if pending is not None:
            pending.wake(Value(event.result))

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
            pending.wake(Error(error))

    def on_progress(self, event: ProgressReceived) -> None:
        """The reader got progress for one of our requests: extend its idle deadline
        (TO-04) and call the caller's callback; a failing callback fails the call."""
        pending = self._pending.get(event.request_id)
        if pending is None:
            return
        if pending.idle != math.inf:
            pending.scope.deadline = min(trio.current_time() + pending.idle, pending.cap)
        if pending.on_progress is not None:
            try:
                pending.on_progress(event.progress)
            except Exception as exc:
                pending.wake(Error(exc))

    def fail(self, request_id: RequestId, error: ErrorObject, exc: BaseException) -> None:
        """Record one request FAILED with *error* and raise *exc* in its caller."""
        self._protocol.fail_outbound(request_id, error)
        pending = self._pending.get(request_id)
        if pending is not None:
            pending.wake(Error(exc))

    def fail_all(self, reason: str, origin: CancelOrigin, cause: BaseException | None) -> None:
        """The session closed: every pending call fails at once with
        :class:`SessionClosed` carrying *reason* (and *cause*)."""
        for request_id in list(self._pending):
            error = SessionClosed(reason, origin)
            error.__cause__ = cause
            self.fail(request_id, ErrorObject(int(ErrorCode.SESSION_CLOSED), reason), error)
