"""Outbound requests: one caller waiting for one response, and the keepalive.

Theory of operation
-------------------
An outbound request runs in the caller's own task (:func:`call`): it registers a
:class:`PendingCall`, queues the request on the writer's channel and parks until
the reader hands it the outcome (:meth:`PendingCall.finish` reschedules the
parked task directly: no ``trio.Event`` on the hot path).

Both time limits, the progress-extended idle timeout and the hard maximum, are
the deadline of one cancel scope: the earlier of "idle timeout from the last
progress" and the cap; the reader moves it on each progress
(:func:`on_progress`). The caller's own scopes work too. On any cancellation,
``notifications/cancelled`` is queued without blocking the caller past
``cancel_notify_grace`` (:func:`cancel_outbound`), and the record says who
cancelled: our deadline (DEADLINE, raised as :class:`RequestTimeout`), the
caller's scope (CALLER, or DEADLINE when it was a deadline of the caller's), or
shutdown (SHUTDOWN, raised as :class:`SessionClosed`).

The keepalive (:func:`keepalive`, optional) is a task in the session nursery that
pings the peer every ``interval`` seconds; a ping that gets no answer within the
timeout closes the session as a connection failure (PI-03..PI-05, TO-07).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import trio

from .._errors import RequestTimeout, RPCError, SessionClosed
from ..protocol import CancelOrigin, Progress, ProgressReceived, RequestId

if TYPE_CHECKING:
    from ._engine import Session

logger = logging.getLogger("trio_mcp.session")


class PendingCall:
    """An outbound request's waiter, kept by the session while the caller waits."""

    __slots__ = ("cap", "idle", "on_progress", "outcome", "scope", "task")

    def __init__(self, on_progress: Callable[[Progress], None] | None) -> None:
        self.on_progress = on_progress
        #: ("ok", value) or ("error", exception), once finished.
        self.outcome: tuple[str, Any] | None = None
        #: Seconds without progress before the call times out (inf: never).
        self.idle: float = math.inf
        #: Absolute time of the hard cap (inf: none).
        self.cap: float = math.inf
        self.scope: trio.CancelScope | None = None
        #: The caller's task while it is parked in :meth:`wait`.
        self.task: trio.lowlevel.Task | None = None

    def finish(self, kind: str, value: Any) -> None:
        """Record the outcome (the first one wins) and wake the caller."""
        if self.outcome is None:
            self.outcome = (kind, value)
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


async def call(
    session: Session,
    message: Any,
    on_progress: Callable[[Progress], None] | None,
    idle: float | None,
    total: float | None,
) -> Any:
    """Queue *message* (a request) and wait for its outcome; see :meth:`Session.request`."""
    pending = PendingCall(on_progress)
    request_id = message.id
    session._pending[request_id] = pending
    now = session.protocol.clock()
    pending.idle = math.inf if idle is None else idle
    pending.cap = now + (math.inf if total is None else total)
    # One scope carries both limits: its deadline is the earlier of "idle
    # timeout from the last progress" and the hard cap; progress moves it.
    scope = trio.CancelScope(deadline=min(now + pending.idle, pending.cap))
    pending.scope = scope
    try:
        with scope:
            await session._queue(message)
            await pending.wait()
    except trio.Cancelled as exc:
        origin = CancelOrigin.DEADLINE if exc.source == "deadline" else CancelOrigin.CALLER
        reason = exc.reason or (
            "caller deadline" if origin is CancelOrigin.DEADLINE else "cancelled by the caller"
        )
        await cancel_outbound(session, request_id, origin, reason)
        raise
    finally:
        del session._pending[request_id]
    outcome = pending.outcome
    if outcome is None:  # our own deadline fired
        fired_cap = trio.current_time() >= pending.cap
        seconds = (total or 0.0) if fired_cap else pending.idle
        error = RequestTimeout(message.method, seconds, idle=not fired_cap)
        await cancel_outbound(session, request_id, CancelOrigin.DEADLINE, str(error))
        raise error
    kind, value = outcome
    if kind == "error":
        if session.protocol.outbound_entry(request_id) is not None:
            # Failed locally while the request was still in flight (the caller's
            # on_progress callback raised): end the record and tell the peer, or
            # the record stays RUNNING and the peer works on.
            await cancel_outbound(
                session, request_id, CancelOrigin.CALLER, "the caller's progress callback failed"
            )
        raise value
    return value


async def cancel_outbound(
    session: Session, request_id: RequestId, origin: CancelOrigin, reason: str
) -> None:
    """End an outbound request's record as CANCELLED and tell the peer.

    Cancellation: waits at most ``cancel_notify_grace`` seconds (shielded) for
    room in the outgoing queue; if there is none by then, the peer is not told.
    """
    note = session.protocol.cancel_outbound(request_id, origin, reason)
    if note is None or session.closed:
        return
    channel = session._send_channel
    try:
        channel.send_nowait(note)
    except trio.WouldBlock:
        with trio.move_on_after(session.cancel_notify_grace, shield=True):
            await channel.send(note)
    except (trio.ClosedResourceError, trio.BrokenResourceError):
        pass


def on_progress(session: Session, event: ProgressReceived) -> None:
    """The reader got progress for one of our requests: extend its idle deadline
    (TO-04) and call the caller's callback; a failing callback fails the call."""
    pending = session._pending.get(event.request_id)
    if pending is None:
        return
    if pending.scope is not None and pending.idle != math.inf:
        pending.scope.deadline = min(trio.current_time() + pending.idle, pending.cap)
    if pending.on_progress is not None:
        try:
            pending.on_progress(event.progress)
        except Exception as exc:
            pending.finish("error", exc)


async def keepalive(session: Session, interval: float, ping_timeout: float) -> None:
    """Ping the peer *interval* seconds after each answered ping (PI-04).

    A ping unanswered after *ping_timeout* seconds closes the session as a connection
    failure (PI-03, PI-05, TO-07): close origin TRANSPORT, reason ``"ping timeout
    after Ns"``, pending calls fail with :class:`SessionClosed`, the transport is
    closed. Ping failures are logged. A peer that answers ping with an error is
    alive: logged, and the keepalive goes on.

    Cancellation: runs until the session closes or its nursery is cancelled.

    Spec: PI-03, PI-04, PI-05, TO-07.
    """
    while True:
        await trio.sleep(interval)
        if session.closed or not session._accepting:
            return
        try:
            await session.request(
                "ping", progress_idle_timeout=ping_timeout, max_duration=ping_timeout
            )
        except RequestTimeout:
            reason = f"ping timeout after {ping_timeout:g}s"
            logger.warning("keepalive: %s; closing the session as a connection failure", reason)
            await session._connection_failed(reason)
            return
        except SessionClosed:
            return
        except RPCError as exc:
            logger.warning("keepalive: the peer answered ping with an error: %s", exc)
