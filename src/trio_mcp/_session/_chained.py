"""The session's own messages inside the middleware chain.

Theory of operation
-------------------
The chain wraps every message (:mod:`._middleware`). Inbound requests a
handler answers are :class:`~._inbound.InboundRequests`' business (the chain
runs in the request's own task there); every other message passes through
:class:`ChainedMessages`, which the session holds only when it has middleware:

* the requests and notifications user code sends, in the caller's task: the
  middleware may edit a request's params before it is written and its result
  after; a notification is made from the params it leaves;
* the peer's notifications, around their handler, in the notifier's task;

* the requests the reader answers itself (``ping``, ``initialize``,
  ``server/discover``), in the reader's task, so each is still answered
  before the next frame is read;
* the peer's ``notifications/cancelled`` and its ``notifications/progress``
  for one of our requests, in the reader's task, around what the session does
  with them;
* the notifications the session or the protocol layer makes
  (``notifications/initialized``, a handler's progress, a task's progress, a
  cancel): sent with the params the middleware left.

A session makes one only when it has middleware: without, none of this runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, final

from .._errors import MiddlewareError, RPCError
from ..protocol import (
    CancelOrigin,
    CancelReceived,
    Connection,
    Direction,
    Message,
    Notification,
    NotificationReceived,
    Progress,
    ProgressReceived,
    Request,
    RequestReceived,
)
from ._inbound import InboundRequests
from ._middleware import Call, Chain, Middleware
from ._outbound import OutboundCalls


@final
class ChainedMessages:
    """Runs the session's own messages through its middleware. Not
    constructed directly.

    Args:
        session: the session (each :class:`Call`'s ``session``).
        protocol: its connection.
        middleware: its chain, not empty.
        inbound, outbound: its inbound requests and outbound calls (what the
            reader does with a cancel and a progress, the answers it makes).
        queue, queue_reply: its writer's ``queue`` and ``queue_reply``.
        send_notification: how the session sends a notification it made.
        handle_notification: its dispatcher's handler of the peer's
            notifications.
    """

    __slots__ = (
        "_handle_notification",
        "_inbound",
        "_middleware",
        "_outbound",
        "_protocol",
        "_queue",
        "_queue_reply",
        "_send_notification",
        "_session",
    )

    def __init__(
        self,
        session: Any,
        protocol: Connection,
        middleware: tuple[Middleware, ...],
        inbound: InboundRequests[Any],
        outbound: OutboundCalls,
        queue: Callable[[Message], Awaitable[None]],
        queue_reply: Callable[[Message], Awaitable[None]],
        send_notification: Callable[[Message], Awaitable[None]],
        handle_notification: Callable[[Any, NotificationReceived], Awaitable[None]],
    ) -> None:
        self._session = session
        self._protocol = protocol
        self._middleware = middleware
        self._inbound = inbound
        self._outbound = outbound
        self._queue = queue
        self._queue_reply = queue_reply
        self._send_notification = send_notification
        self._handle_notification = handle_notification

    def _inbound_call(self, method: str, request_id: Any, params: Any) -> Call:
        kind: Any = "notification" if request_id is None else "request"
        return Call(
            self._protocol,
            Direction.INBOUND,
            kind,
            method,
            request_id,
            params,
            session=self._session,
            origin=self._inbound.origin(),
        )

    async def request(
        self,
        message: Request,
        on_progress: Callable[[Progress], None] | None,
        idle: float | None,
        total: float | None,
    ) -> Any:
        """An outbound request inside the chain: the middleware may edit its
        params before it is written, and its result after.

        Cancellation: as the session's ``request``; a request failed or
        cancelled in a middleware before it was written ends its record
        there (the peer never saw it)."""
        protocol = self._protocol
        params = message.params
        call = Call(
            protocol,
            Direction.OUTBOUND,
            "request",
            message.method,
            message.id,
            # A copy: the caller's own dict is never written to.
            None if params is None else {**params},
            session=self._session,
        )
        if params is not None and isinstance(params.get("_meta"), dict):
            call.params["_meta"] = {**params["_meta"]}  # type: ignore[index]
        sent = False
        try:
            async with Chain(self._middleware, call):
                message = protocol.rewrite_request(message, call.params)
                sent = True
                call.result = await self._outbound.call(message, on_progress, idle, total)
        except MiddlewareError as exc:
            # Recorded on the request, unless it had ended already.
            protocol.fail_outbound(message.id, exc.to_error())
            raise
        except BaseException:
            if not sent:
                protocol.cancel_outbound(
                    message.id, CancelOrigin.CALLER, "ended by a middleware before it was sent"
                )
            raise
        return call.result

    async def notify(self, method: str, params: Any, custom: bool) -> None:
        """An outbound notification user code sends, inside the chain: made
        from the params as the middleware left them.

        Cancellation: as the session's ``notify``."""
        protocol = self._protocol
        raw = protocol.to_json(params)
        call = Call(
            protocol,
            Direction.OUTBOUND,
            "notification",
            method,
            None,
            None if raw is None else {**raw},
            session=self._session,
        )
        async with Chain(self._middleware, call):
            await self._send_notification(
                protocol.send_notification(method, call.params, custom=custom)
            )

    async def notification(self, event: NotificationReceived) -> None:
        """The peer's notification, its handler inside the chain, in the
        notifier's task. Cancellation: cancelled with the notifier."""
        # No origin: the notifier runs after the frame it came in has gone.
        call = Call(
            self._protocol,
            Direction.INBOUND,
            "notification",
            event.method,
            None,
            event.raw_params,
            session=self._session,
        )
        async with Chain(self._middleware, call):
            await self._handle_notification(self._session, event)

    async def through(
        self, message: Notification, send: Callable[[Message], Awaitable[None]]
    ) -> None:
        """An outbound notification the session or the protocol layer made
        inside the chain: sent with *send*, with the params the middleware
        left.

        Cancellation: as *send*; the chain's middleware see the cancel."""
        params = message.params
        call = Call(
            self._protocol,
            Direction.OUTBOUND,
            "notification",
            message.method,
            None,
            None if params is None else {**params},
            session=self._session,
        )
        async with Chain(self._middleware, call):
            if call.params != params:
                message = Notification(message.method, call.params)
            await send(message)

    async def queue(self, message: Message) -> None:
        """A handler's context's queue: its notifications (progress) pass
        through the chain. Cancellation: as the writer's ``queue``."""
        if type(message) is Notification:
            await self.through(message, self._queue)
        else:
            await self._queue(message)

    async def answer(self, event: RequestReceived) -> None:
        """A request the reader answers itself, inside the chain, in the
        reader's task. A middleware's error answers it as it answers any
        request.

        Cancellation: cancelled with the reader; then nothing is answered
        (the session is closing)."""
        request = event.request
        protocol = self._protocol
        self._inbound.note_reuse(event)
        call = self._inbound_call(request.method, request.id, request.params)
        protocol.start_inbound(request.id)
        reply: Message | None
        try:
            async with Chain(self._middleware, call):
                call.result = self._inbound.answer_itself(event)
        except RPCError as exc:
            reply = protocol.respond_error(request.id, exc.to_error())
        else:
            reply = protocol.respond(request.id, call.result)
        if reply is not None:
            await self._queue_reply(reply)

    async def cancel(self, event: CancelReceived) -> None:
        """The peer's ``notifications/cancelled``, acted on inside the chain.
        Cancellation: cancelled with the reader."""
        call = self._inbound_call("notifications/cancelled", None, event.raw_params)
        async with Chain(self._middleware, call):
            self._inbound.on_cancel(event)

    async def progress(self, event: ProgressReceived) -> None:
        """The peer's ``notifications/progress`` for one of our requests,
        acted on inside the chain. Cancellation: cancelled with the reader."""
        call = self._inbound_call("notifications/progress", None, event.raw_params)
        async with Chain(self._middleware, call):
            self._outbound.on_progress(event)
