"""Inbound requests: admission, one task per request, error boundary, reply.

Theory of operation
-------------------
:class:`InboundRequests` is what the reader does with each request as it
arrives (:meth:`InboundRequests.start`): answer ``ping`` and ``initialize``
itself, refuse when closing or when the queue is full, or make the request's
cancel scope (attached to the request on the connection, where a peer's cancel
and shutdown find it), take the admission decision
(:mod:`trio_mcp._session._admission`) and start the request's task. It owns the
admission, the count of the tasks and the event that tells shutdown they have
settled.

Each request's task is :meth:`InboundRequest.run`: it either holds a slot
already or waits for its turn in arrival order. If the scope is cancelled
before the slot comes, the handler never starts and the record goes QUEUED →
CANCELLED.

Error boundary (nothing a handler does can tear the session down, except
``KeyboardInterrupt`` and ``SystemExit``, which are not ours to swallow: they
leave the session, cancelling it, and reach the caller of ``trio.run``):

* ``Cancelled`` always propagates to the request's scope, which absorbs it;
* :class:`RPCError` becomes that error response;
* any other ``Exception`` becomes -32603 with a generic message; the traceback
  goes to the log, never to the peer;
* a result that cannot be serialised (a value of no JSON form, a field of the
  wrong type) becomes -32603 too, logged the same way: the handler's bug fails
  its request, never the session;
* an exception group from the handler's own nursery is split: if it holds a
  ``Cancelled``, the cancellation wins (the rest is logged); otherwise a group of
  exactly one ``RPCError`` answers with it, anything else is -32603.

The reply goes through :meth:`Connection.respond` / ``respond_error`` /
``cancel_inbound``, which return None whenever no reply may be sent (the peer
cancelled: CN-05).

The requests know the session only through what they are built with: the
connection, the nursery, the ``queue_reply`` callable, a factory of handler
contexts and the handler itself.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Generic, Protocol, TypeVar

import trio

from .._errors import MiddlewareError, RPCError
from .._transport import FrameOrigin, OriginTransport
from ..protocol import (
    CancelOrigin,
    CancelReceived,
    Connection,
    Direction,
    ErrorCode,
    ErrorObject,
    ErrorResponse,
    JSONObject,
    Message,
    RequestId,
    RequestReceived,
)
from ._admission import Admission, Ticket
from ._middleware import Call, Chain, Middleware, replaced_params, suppressed

logger = logging.getLogger("trio_mcp.session")

#: The requests the reader answers itself, before any handler (promptly
#: however busy the handlers are).
SESSION_ANSWERED = frozenset({"ping", "initialize", "server/discover"})

_INTERNAL = ErrorObject(int(ErrorCode.INTERNAL_ERROR), "Internal error")
_CLOSING = ErrorObject(int(ErrorCode.SESSION_CLOSED), "The session is closing")
_TOO_MANY_REQUESTS = ErrorObject(
    int(ErrorCode.TOO_MANY_REQUESTS), "Too many requests are waiting; try again later"
)

#: The name of every inbound request's task (a constant: Trio would otherwise
#: derive one from the function, per task).
_TASK_NAME = "trio_mcp inbound request"


class NamesRequest(Protocol):
    """What the runner reads from a handler's context: which request it serves."""

    @property
    def request_id(self) -> RequestId: ...

    @property
    def method(self) -> str: ...

    #: The params, structured (a middleware may replace them).
    params: Any
    #: The request's ``_meta`` (a middleware may add one).
    meta: JSONObject | None

    #: The result a handler ended its request with by unwinding (see
    #: ``RequestContext.finish_with``), or None.
    final_result: Any


ContextT = TypeVar("ContextT", bound=NamesRequest)


class InboundRequests(Generic[ContextT]):
    """The peer's requests in flight on one session. Not constructed directly.

    Args:
        protocol: the session's connection.
        nursery: where each request's task runs (the session's).
        queue_reply: queues a reply owed to the peer (dropped once the session
            has closed its outgoing queue).
        make_context: builds the handler's context from a request's id, method,
            structured params and ``_meta``.
        handle: the dispatcher's request handler; returns the result.
        max_concurrent, max_queued: the admission limits (see ``open_session``).
        middleware: the chain each request's handler runs in (registration
            order, outermost first; empty: none).
        origins: the transport, when it says where each frame came from and
            there is middleware to tell (each :class:`Call`'s ``origin``).
    """

    __slots__ = (
        "_accepting",
        "_admission",
        "_handle",
        "_idle",
        "_make_context",
        "_middleware",
        "_nursery",
        "_origins",
        "_protocol",
        "_queue_reply",
        "_streams_idle",
        "_warned_reuse",
        "_work_idle",
        "streams",
        "tasks",
    )

    def __init__(
        self,
        protocol: Connection,
        nursery: trio.Nursery,
        queue_reply: Callable[[Message], Awaitable[None]],
        make_context: Callable[[RequestId, str, Any, JSONObject | None], ContextT],
        handle: Callable[[ContextT], Awaitable[Any]],
        *,
        max_concurrent: int | None,
        max_queued: int | None,
        middleware: tuple[Middleware, ...] = (),
        origins: OriginTransport | None = None,
    ) -> None:
        self._protocol = protocol
        self._middleware = middleware
        self._origins = origins
        self._nursery = nursery
        self._queue_reply = queue_reply
        self._make_context = make_context
        self._handle = handle
        self._admission = Admission(max_concurrent, max_queued) if max_concurrent else None
        self._accepting = True
        self._warned_reuse = False
        #: Requests whose task is running or waiting for a slot.
        self.tasks = 0
        #: Those of them that are long-lived streams (subscriptions/listen).
        self.streams = 0
        # Made only while somebody waits for the tasks to settle (an event per
        # request would cost a constructor and a set() each): all of them, or
        # all but the streams.
        self._idle: trio.Event | None = None
        self._work_idle: trio.Event | None = None
        self._streams_idle: trio.Event | None = None

    def start(self, event: RequestReceived) -> Message | None:
        """Act on a request as it arrives (called by the reader, in arrival order).

        Returns the reply to queue when the reader answers it itself: ``ping`` and
        ``initialize`` (prompt however busy the handlers are, PI-02), -32000 while
        the session closes, -32005 when ``max_queued`` requests already wait (no
        task is started: R-09). Otherwise makes the request's cancel scope, takes
        the admission decision (a slot now, or a ticket in FIFO order) and starts
        its task, and returns None.

        Spec: PI-02, R-09, C-02.
        """
        request = event.request
        method = request.method
        protocol = self._protocol
        self.note_reuse(event)
        if method == "ping" or method == "initialize" or method == "server/discover":
            protocol.start_inbound(request.id)
            return protocol.respond(request.id, self.answer_itself(event))
        if not self._accepting:
            return protocol.respond_error(request.id, _CLOSING)
        # A long-lived request (a 2026-07-28 subscriptions/listen stream) waits
        # for notices, not for work: it takes no handler slot, or one client's
        # subscription would starve a server with max_concurrent=1.
        admission = None if event.spec.long_lived else self._admission
        if admission is not None and admission.full:
            return protocol.respond_error(request.id, _TOO_MANY_REQUESTS)
        long_lived = event.spec.long_lived
        # A long-lived stream is shielded from a scope enclosing the session:
        # the owner's cancel must not cut it off before the session's shutdown
        # ends it with its final result (Session.aclose); every close of the
        # session still cancels its own scope.
        scope = trio.CancelScope(shield=long_lived)
        protocol.attach(request.id, scope)
        self.tasks += 1
        if long_lived:
            self.streams += 1
        params = request.params
        ctx = self._make_context(
            request.id, method, event.params, params.get("_meta") if params else None
        )
        ticket = admission.arrive() if admission is not None else None
        runner = InboundRequest(self, ctx, scope, ticket, admission, long_lived)
        if self._middleware:
            runner.call = Call(
                protocol,
                Direction.INBOUND,
                "request",
                method,
                request.id,
                params,
                context=ctx,
                spec=event.spec,
                origin=self.origin(),
            )
        self._nursery.start_soon(runner.run, name=_TASK_NAME)
        return None

    def origin(self) -> FrameOrigin | None:
        """Where the frame being taken came from, if the transport says
        (read while the reader takes it: the transport's frame received last)."""
        origins = self._origins
        return None if origins is None else origins.frame_origin

    def note_reuse(self, event: RequestReceived) -> None:
        """Log a request that reuses the id of an answered one (accepted).
        Spec: C-02."""
        if event.reused_id:
            # Once per session at WARNING (a client that reuses ids reuses them
            # all the time), then at DEBUG.
            level = logging.DEBUG if self._warned_reuse else logging.WARNING
            self._warned_reuse = True
            logger.log(
                level,
                "the peer reused request id %r (accepted: its first use was answered)",
                event.request.id,
            )

    def answer_itself(self, event: RequestReceived) -> JSONObject:
        """The result of a request the reader answers itself (one of
        :data:`SESSION_ANSWERED`, already started): ``ping``'s empty one, the
        ``server/discover`` result, or the negotiated ``initialize`` one."""
        method = event.request.method
        if method == "ping":
            return {}
        if method == "server/discover":
            return self._protocol.discover_result()
        return self._protocol.accept_initialize(event.params)

    def on_cancel(self, event: CancelReceived) -> None:
        """The peer cancelled one of its requests: cancel its scope (the
        connection has noted the peer as the asker). Spec: CN-02."""
        handle = self._protocol.handle(event.request_id)
        if handle is not None:
            handle.cancel(reason=f"cancelled by the peer: {event.reason or 'no reason'}")

    def stop_accepting(self) -> None:
        """From now on every new request is refused with -32000."""
        self._accepting = False

    def cancel_all(self, origin: CancelOrigin, reason: str) -> None:
        """Cancel every in-flight request's scope, noting *origin* on its record."""
        protocol = self._protocol
        for request_id in protocol.in_flight(Direction.INBOUND):
            handle = protocol.handle(request_id)
            if handle is None:
                continue
            protocol.request_cancel(Direction.INBOUND, request_id, origin, reason)
            handle.cancel(reason=f"{origin.value}: {reason}")

    def warn_still_running(self) -> None:
        """Name each handler still running after its shutdown cancel: one that
        shields itself (reliability T-07) holds up the session's exit, and the
        operator must be able to tell which."""
        for record in self._protocol.requests():
            if record.direction is Direction.INBOUND and not record.state.is_terminal:
                logger.warning(
                    "handler for %s (id %r) still runs after its cancellation at shutdown;"
                    " the session's exit waits for it",
                    record.method,
                    record.id,
                )

    async def wait_settled(self, *, streams: bool = True) -> None:
        """Block until no request's task is running or queued (with *streams*
        False, not counting long-lived streams: a ``subscriptions/listen``
        lasts until it is ended, and is no work to wait for).

        Cancellation: a plain wait; nothing changes if it is cancelled.
        """
        if self.tasks == 0 or (not streams and self.tasks == self.streams):
            await trio.lowlevel.checkpoint()
            return
        if streams:
            if self._idle is None:
                self._idle = trio.Event()
            await self._idle.wait()
        else:
            if self._work_idle is None:
                self._work_idle = trio.Event()
            await self._work_idle.wait()

    async def wait_streams_ended(self) -> None:
        """Block until no long-lived stream's task is running.

        Cancellation: a plain wait; nothing changes if it is cancelled.
        """
        if self.streams == 0:
            await trio.lowlevel.checkpoint()
            return
        if self._streams_idle is None:
            self._streams_idle = trio.Event()
        await self._streams_idle.wait()

    def _task_ended(self, long_lived: bool) -> None:
        self.tasks -= 1
        if long_lived:
            self.streams -= 1
            if self.streams == 0 and self._streams_idle is not None:
                self._streams_idle.set()
                self._streams_idle = None
        if self.tasks == 0 and self._idle is not None:
            self._idle.set()
            self._idle = None
        if self.tasks == self.streams and self._work_idle is not None:
            self._work_idle.set()
            self._work_idle = None


class InboundRequest(Generic[ContextT]):
    """One inbound request's task: made by :meth:`InboundRequests.start`, which
    it serves (it uses that object's connection, admission, handler and reply
    queue, and tells it when the task ends).

    *ticket* is None when the reader already took a slot for the request (or
    there is no limit), else its place in line.
    """

    __slots__ = ("admission", "call", "ctx", "long_lived", "requests", "scope", "ticket")

    def __init__(
        self,
        requests: InboundRequests[ContextT],
        ctx: ContextT,
        scope: trio.CancelScope,
        ticket: Ticket | None,
        admission: Admission | None,
        long_lived: bool = False,
    ) -> None:
        self.requests = requests
        self.long_lived = long_lived
        self.ctx = ctx
        self.scope = scope
        self.ticket = ticket
        #: The admission it takes a slot of (None: none, no limit or long-lived).
        self.admission = admission
        #: What the middleware chain sees (None: the session has none).
        self.call: Call | None = None

    async def run(self) -> None:
        """Run the request to its terminal state and queue its reply, if any.

        Cancellation:
            A long-lived request's scope is shielded: a cancel of a scope
            enclosing the session does not reach it, and it ends by its own
            scope (the peer's cancel, the session's close) or by returning
            when the session stops accepting, with a reply.
            The request's own scope absorbs its cancellation; the record ends
            CANCELLED with the origin noted by whoever cancelled it (the peer,
            shutdown, the transport) or DEADLINE when it was the scope's own
            deadline. If the session's nursery itself is being cancelled, the
            reply is not sent and the record ends CANCELLED (origin SHUTDOWN
            unless someone asked first).
        """
        requests = self.requests
        protocol = requests._protocol
        admission = self.admission
        ticket = self.ticket
        scope = self.scope
        request_id = self.ctx.request_id
        reply: Message | None = None
        try:
            try:
                try:
                    with scope:
                        # A request cancelled while queued stops here and never starts.
                        if ticket is None or admission is None:
                            await trio.lowlevel.checkpoint_if_cancelled()
                        else:
                            await admission.wait(ticket)
                        if protocol.start_inbound(request_id):
                            reply = await self._handle()
                finally:
                    # A reply means the request has ended. Without one: when a
                    # scope enclosing the session is cancelled, Cancelled passes
                    # through the request's scope, and the record must still end
                    # (the first asker, if any, stays its origin); no reply can
                    # be written then, since the writer is cancelled too.
                    if reply is None and not scope.cancelled_caught:
                        protocol.cancel_inbound(
                            request_id, CancelOrigin.SHUTDOWN, "the session was cancelled"
                        )
                if scope.cancelled_caught:
                    final = self.ctx.final_result
                    if final is not None and not protocol.cancel_requested(request_id):
                        # The handler ended its request with a result by
                        # unwinding (an input-required round); nobody else asked
                        # to cancel, so that result is the answer.
                        reply = self._respond(final)
                    else:
                        # The first asker, if any, stays the origin; else the
                        # scope's own deadline fired.
                        reply = protocol.cancel_inbound(
                            request_id, CancelOrigin.DEADLINE, "handler deadline"
                        )
                if reply is not None:
                    # A handler that finishes after shutdown closed the outgoing
                    # queue (it shielded itself past the grace) has its reply
                    # dropped there.
                    await requests._queue_reply(reply)
            finally:
                # The slot is held until the reply is queued, not just until the
                # handler returns: when the peer stops reading and the writer's
                # queue is full, replies wait here, so at most max_concurrent of
                # them pile up and new requests queue (then get -32005) instead
                # of running.
                if admission is not None and (ticket is None or ticket.granted):
                    admission.release()
        finally:
            requests._task_ended(self.long_lived)

    async def _handle(self) -> Message | None:
        ctx = self.ctx
        protocol = self.requests._protocol
        request_id = ctx.request_id
        try:
            call = self.call
            if call is None:
                result = await self.requests._handle(ctx)
            else:
                result = await self._handle_through(call)
        except trio.Cancelled:
            raise
        except MiddlewareError as exc:
            # Before RPCError, which it is: the peer learns nothing of it.
            logger.error(
                "%s (id %r): %s", ctx.method, request_id, exc, exc_info=exc.__cause__ or exc
            )
            return protocol.respond_error(request_id, _INTERNAL)
        except RPCError as exc:
            return protocol.respond_error(request_id, exc.to_error())
        except BaseExceptionGroup as group:
            # Before ``except Exception``, which also catches ExceptionGroup.
            return self._handle_group(group)
        except Exception:
            logger.exception("handler for %s (id %r) failed", ctx.method, request_id)
            return protocol.respond_error(request_id, _INTERNAL)
        return self._respond(result)

    async def _handle_through(self, call: Call) -> Any:
        """The handler, inside the session's middleware; returns the result
        (as JSON) the chain leaves in ``call.result``."""
        ctx = self.ctx
        requests = self.requests
        async with Chain(requests._middleware, call):
            replaced, params = replaced_params(call)
            if replaced:
                ctx.params = params
            if ctx.meta is None and call.params is not None:
                # A middleware added _meta to a request that had none.
                meta = call.params.get("_meta")
                if isinstance(meta, dict):
                    ctx.meta = meta
            result = await requests._handle(ctx)
            try:
                call.result = requests._protocol.to_json(result) or {}
            except Exception:
                # As without middleware: one bad value fails its request
                # (-32603, logged as such), and the chain sees that failure.
                logger.exception(
                    "the result of %s (id %r) cannot be serialised; answered -32603",
                    ctx.method,
                    ctx.request_id,
                )
                raise RPCError(_INTERNAL.code, _INTERNAL.message) from None
        if call.result is None:
            # The chain swallowed the handler's error and gave no result.
            raise suppressed(call)
        return call.result

    def _respond(self, result: Any) -> Message | None:
        """The reply for the handler's *result*: -32603 (logged) when it cannot
        be serialised, so that one bad value fails its request and nothing else."""
        ctx = self.ctx
        protocol = self.requests._protocol
        try:
            reply = protocol.respond(ctx.request_id, result)
        except Exception:
            logger.exception(
                "the result of %s (id %r) cannot be serialised; answered -32603",
                ctx.method,
                ctx.request_id,
            )
            return protocol.respond_error(ctx.request_id, _INTERNAL)
        if isinstance(reply, ErrorResponse):
            # The connection refused the result itself (not valid JSON, or
            # an input-required result the method may not give).
            logger.error(
                "the result of %s (id %r) was refused: %s",
                ctx.method,
                ctx.request_id,
                reply.error.message,
            )
        return reply

    def _handle_group(self, group: BaseExceptionGroup[Any]) -> Message | None:
        ctx = self.ctx
        protocol = self.requests._protocol
        cancelled, rest = group.split(trio.Cancelled)
        if cancelled is not None:
            if rest is not None:
                logger.error(
                    "handler for %s failed while being cancelled", ctx.method, exc_info=rest
                )
            raise cancelled
        assert rest is not None
        _, others = rest.split(Exception)
        if others is not None:  # KeyboardInterrupt, SystemExit: not ours to swallow
            raise group
        if len(rest.exceptions) == 1 and isinstance(rest.exceptions[0], RPCError):
            return protocol.respond_error(ctx.request_id, rest.exceptions[0].to_error())
        logger.error("handler for %s (id %r) failed", ctx.method, ctx.request_id, exc_info=rest)
        return protocol.respond_error(ctx.request_id, _INTERNAL)
