"""Closing a session: the orderly shutdown, and the loss of the transport.

Theory of operation
-------------------
:func:`shutdown` (leaving ``open_session``, or :meth:`Session.aclose`) runs in a
fixed order, every step bounded, all of it shielded so it completes when the
caller is being cancelled:

1. stop accepting: new inbound requests are refused (-32001), new calls raise;
2. cancel our outbound requests; the peer is told (bounded);
3. let inbound requests settle for ``shutdown_grace`` seconds, then cancel them
   (their peers get -32001 replies) and wait a little for them to end;
4. flush the writer (bounded), mark the session closed, close the transport
   (bounded).

:func:`close` is the synchronous part shared with a lost transport (EOF, a
broken pipe, a keepalive ping that timed out): it fails every pending call at
once with :class:`SessionClosed` carrying the reason and cause, cancels every
inbound request (no reply can be written), and marks the session closed.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from .._errors import SessionClosed
from ..protocol import CancelOrigin, Direction, ErrorCode, ErrorObject
from ._outbound import cancel_outbound

if TYPE_CHECKING:
    from ._engine import Session

logger = logging.getLogger("trio_mcp.session")


def close(
    session: Session, reason: str, origin: CancelOrigin, cause: BaseException | None = None
) -> None:
    """Mark *session* closed now: fail pending calls, cancel inbound requests."""
    session.close_reason = reason
    session.close_origin = origin
    session._accepting = False
    protocol = session.protocol
    for request_id, pending in list(session._pending.items()):
        protocol.fail_outbound(request_id, ErrorObject(int(ErrorCode.SESSION_CLOSED), reason))
        error = SessionClosed(reason, origin)
        error.__cause__ = cause
        pending.finish("error", error)
    cancel_inbound(session, origin, reason)
    protocol.close(reason)
    session._closed.set()
    protocol.observer.on_close(reason, trio.current_time())


def cancel_inbound(session: Session, origin: CancelOrigin, reason: str) -> None:
    """Cancel every inbound request's scope, noting *origin* on its record."""
    protocol = session.protocol
    for request_id in protocol.in_flight(Direction.INBOUND):
        entry = protocol.inbound_entry(request_id)
        if entry is None or entry.user_data is None:
            continue
        entry.request_cancel(origin, reason)
        entry.user_data.cancel(reason=f"{origin.value}: {reason}")


async def shutdown(session: Session, reason: str) -> None:
    """The orderly shutdown; see the module docstring. Idempotent."""
    grace = session.cancel_notify_grace
    if session.closed:
        # Closed by the transport's loss, everything else is done, but the
        # transport itself may never have been closed (a leaked pipe or
        # process). Transports make aclose idempotent.
        with trio.CancelScope(shield=True), trio.move_on_after(grace):
            await session.transport.aclose()
        return
    with trio.CancelScope(shield=True):
        # 1. Stop accepting: new inbound requests are refused, new calls raise.
        session._accepting = False
        # 2. Cancel our outbound requests; the peer is told (bounded).
        for request_id, pending in list(session._pending.items()):
            await cancel_outbound(session, request_id, CancelOrigin.SHUTDOWN, reason)
            pending.finish("error", SessionClosed(reason, CancelOrigin.SHUTDOWN))
        # 3. Let inbound requests settle, then cancel them.
        with trio.move_on_after(session.shutdown_grace):
            await session.wait_inbound_settled()
        cancel_inbound(session, CancelOrigin.SHUTDOWN, reason)
        with trio.move_on_after(grace):
            await session.wait_inbound_settled()
        # 4. Flush the writer (bounded), then close the transport.
        session._send_channel.close()
        with trio.move_on_after(grace):
            await session._wait_writer_done()
        if not session.closed:
            close(session, reason, CancelOrigin.SHUTDOWN)
        with trio.move_on_after(grace) as scope:
            await session.transport.aclose()
        if scope.cancelled_caught:
            logger.warning("closing the transport took longer than %ss", grace)
