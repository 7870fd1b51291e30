"""One inbound request's task: admission, handler, error boundary, reply.

The request's cancel scope was made, and its admission decided, by the reader
when the request arrived (:mod:`trio_mcp._session._admission`): the task either holds a
slot already or waits for its turn in arrival order. If the scope is cancelled
before the slot comes, the handler never starts and the record goes QUEUED →
CANCELLED.

Error boundary (nothing a handler does can tear the session down, except
``KeyboardInterrupt`` and ``SystemExit``, which are not ours to swallow: they
leave the session, cancelling it, and reach the caller of ``trio.run``):

* ``Cancelled`` always propagates to the request's scope, which absorbs it;
* :class:`RPCError` becomes that error response;
* any other ``Exception`` becomes -32603 with a generic message; the traceback
  goes to the log, never to the peer;
* an exception group from the handler's own nursery is split: if it holds a
  ``Cancelled``, the cancellation wins (the rest is logged); otherwise a group of
  exactly one ``RPCError`` answers with it, anything else is -32603.

The reply goes through :meth:`Connection.respond` / ``respond_error`` /
``cancel_inbound``, which return None whenever no reply may be sent (the peer
cancelled: CN-05).

:func:`start` is what the reader does with each request as it arrives: answer
``ping`` and ``initialize`` itself, refuse when closing or when the queue is
full, or make the request's scope, take the admission decision and start its
task.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import trio

from .._errors import RPCError
from ..protocol import CancelOrigin, ErrorCode, ErrorObject, Message, RequestReceived
from ._context import RequestContext

if TYPE_CHECKING:
    from ._admission import Admission, Ticket
    from ._engine import Session

logger = logging.getLogger("trio_mcp.session")

_INTERNAL = ErrorObject(int(ErrorCode.INTERNAL_ERROR), "Internal error")
_CLOSING = ErrorObject(int(ErrorCode.SESSION_CLOSED), "The session is closing")
_TOO_MANY_REQUESTS = ErrorObject(
    int(ErrorCode.TOO_MANY_REQUESTS), "Too many requests are waiting; try again later"
)

#: The name of every inbound request's task (a constant: Trio would otherwise
#: derive one from the function, per task).
_TASK_NAME = "trio_mcp inbound request"


def start(session: Session, event: RequestReceived) -> Message | None:
    """Act on a request as it arrives (called by the reader, in arrival order).

    Returns the reply to queue when the reader answers it itself: ``ping`` and
    ``initialize`` (prompt however busy the handlers are, PI-02), -32000 while
    the session closes, -32005 when ``max_queued`` requests already wait (no
    task is started: R-09). Otherwise makes the request's cancel scope, takes
    the admission decision (a slot now, or a ticket in FIFO order) and starts
    its task, and returns None.
    """
    request = event.request
    method = request.method
    protocol = session.protocol
    if event.reused_id:
        # Once per session at WARNING (a client that reuses ids reuses them
        # all the time), then at DEBUG.
        level = logging.DEBUG if session._warned_reuse else logging.WARNING
        session._warned_reuse = True
        logger.log(
            level,
            "the peer reused request id %r (accepted: its first use was answered)",
            request.id,
        )
    if method == "ping" or method == "initialize":
        protocol.start_inbound(request.id)
        if method == "ping":
            return protocol.respond(request.id, {})
        return protocol.respond(request.id, protocol.accept_initialize(event.params))
    if not session._accepting:
        return protocol.respond_error(request.id, _CLOSING)
    admission = session._admission
    if admission is not None and admission.full:
        return protocol.respond_error(request.id, _TOO_MANY_REQUESTS)
    entry = protocol.inbound_entry(request.id)
    assert entry is not None
    scope = trio.CancelScope()
    entry.user_data = scope
    session._inbound_tasks += 1
    params = request.params
    ctx = RequestContext(
        session, request.id, method, event.params, params.get("_meta") if params else None
    )
    ticket = admission.arrive() if admission is not None else None
    session._nursery.start_soon(
        run_inbound, session, ctx, scope, admission, ticket, name=_TASK_NAME
    )
    return None


async def run_inbound(
    session: Session,
    ctx: RequestContext,
    scope: trio.CancelScope,
    admission: Admission | None,
    ticket: Ticket | None,
) -> None:
    """Run one inbound request to its terminal state and queue its reply, if any.

    *admission* is the session's limiter (None: no limit); *ticket* is None when
    the reader already took a slot for this request, else its place in line.

    Cancellation:
        The request's own *scope* absorbs its cancellation; the record ends
        CANCELLED with the origin noted by whoever cancelled it (the peer,
        shutdown, the transport) or DEADLINE when it was the scope's own deadline.
        If the session's nursery itself is being cancelled, the reply is not sent
        and the record ends CANCELLED (origin SHUTDOWN unless someone asked first).
    """
    try:
        await _run(session, ctx, scope, admission, ticket)
    finally:
        session._inbound_done()


async def _run(
    session: Session,
    ctx: RequestContext,
    scope: trio.CancelScope,
    admission: Admission | None,
    ticket: Ticket | None,
) -> None:
    try:
        await _serve(session, ctx, scope, admission, ticket)
    finally:
        # The slot is held until the reply is queued, not just until the
        # handler returns: when the peer stops reading and the writer's queue is
        # full, replies wait here, so at most max_concurrent of them can pile
        # up and new requests queue (then get -32005) instead of running
        # (found by tests/transports/test_websocket_edges.py's slow reader).
        if admission is not None and (ticket is None or ticket.granted):
            admission.release()


async def _serve(
    session: Session,
    ctx: RequestContext,
    scope: trio.CancelScope,
    admission: Admission | None,
    ticket: Ticket | None,
) -> None:
    protocol = session.protocol
    request_id = ctx.request_id
    reply: Message | None = None
    try:
        with scope:
            # A request cancelled while queued stops here and never starts.
            if ticket is None:
                await trio.lowlevel.checkpoint_if_cancelled()
            else:
                await admission.wait(ticket)  # type: ignore[union-attr]
            if protocol.start_inbound(request_id):
                reply = await _handle(session, ctx)
    finally:
        # Fix: when the session's nursery itself is cancelled (a scope enclosing
        # the session), Cancelled passes through the request's scope and skips
        # the code below; the record must still end (it stayed RUNNING or QUEUED
        # forever). No reply can be written then: the writer is cancelled too.
        if not scope.cancelled_caught:
            entry = protocol.inbound_entry(request_id)
            if entry is not None:
                protocol.cancel_inbound(
                    request_id,
                    entry.cancel_origin or CancelOrigin.SHUTDOWN,
                    entry.cancel_reason or "the session was cancelled",
                )
    if scope.cancelled_caught:
        entry = protocol.inbound_entry(request_id)
        origin = entry.cancel_origin if entry and entry.cancel_origin else CancelOrigin.DEADLINE
        reason = entry.cancel_reason if entry and entry.cancel_reason else "handler deadline"
        reply = protocol.cancel_inbound(request_id, origin, reason)
    if reply is not None:
        # Fix: a handler that finishes after shutdown closed the outgoing queue
        # (it shielded itself past the grace) must not crash the session with
        # SessionClosed: its reply is dropped.
        await session._queue_reply(reply)


async def _handle(session: Session, ctx: RequestContext) -> Message | None:
    protocol = session.protocol
    request_id = ctx.request_id
    try:
        result = await session.dispatcher.handle_request(ctx)
    except trio.Cancelled:
        raise
    except RPCError as exc:
        return protocol.respond_error(request_id, exc.to_error())
    except BaseExceptionGroup as group:
        # Fix: before ``except Exception``, which also catches ExceptionGroup and
        # so answered a group of one RPCError with -32603.
        return _handle_group(session, ctx, group)
    except Exception:
        logger.exception("handler for %s (id %r) failed", ctx.method, request_id)
        return protocol.respond_error(request_id, _INTERNAL)
    return protocol.respond(request_id, result)


def _handle_group(
    session: Session, ctx: RequestContext, group: BaseExceptionGroup[Any]
) -> Message | None:
    cancelled, rest = group.split(trio.Cancelled)
    if cancelled is not None:
        if rest is not None:
            logger.error("handler for %s failed while being cancelled", ctx.method, exc_info=rest)
        raise cancelled
    assert rest is not None
    _, others = rest.split(Exception)
    if others is not None:  # KeyboardInterrupt, SystemExit: not ours to swallow
        raise group
    if len(rest.exceptions) == 1 and isinstance(rest.exceptions[0], RPCError):
        return session.protocol.respond_error(ctx.request_id, rest.exceptions[0].to_error())
    logger.error("handler for %s (id %r) failed", ctx.method, ctx.request_id, exc_info=rest)
    return session.protocol.respond_error(ctx.request_id, _INTERNAL)
