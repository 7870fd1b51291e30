"""What a handler gets and what answers the peer: :class:`RequestContext` and
:class:`Dispatcher`.

A session (:mod:`trio_mcp._session._engine`) serves each inbound request by
handing a :class:`RequestContext` to its :class:`Dispatcher`; the session is
given this module's :class:`RequestContext` as its context factory by
:func:`~trio_mcp._session._open.open_session`, so the engine itself never
names the classes here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, NoReturn, Protocol, final

import trio

from .._transport import Caller
from ..protocol import (
    REVISIONS,
    Connection,
    Direction,
    JSONObject,
    LocalProtocolError,
    Message,
    NotificationReceived,
    RequestId,
    RequestMeta,
    RequestRecord,
    Revision,
)
from ._engine import Session


class Dispatcher(Protocol):
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
            Runs in the session's notifier, one at a time: it is cancelled only
            when the session shuts down, and while it blocks later
            notifications wait (requests and responses do not).
        """
        ...


@final
class RequestContext:
    """What a handler knows about the request it is serving. Not constructed directly.

    A handler's task runs inside the request's own cancel scope: a peer's
    ``notifications/cancelled``, the session's shutdown and the loss of the
    transport all arrive as :class:`trio.Cancelled` at the handler's next
    checkpoint. :attr:`cancel_requested` tells a handler that finished its work
    after the last checkpoint that its result will not be sent.
    """

    __slots__ = (
        "_protocol",
        "_queue",
        "caller",
        "final_result",
        "meta",
        "method",
        "params",
        "request_id",
        "session",
        "user_data",
    )

    def __init__(
        self,
        session: Session,
        protocol: Connection,
        queue: Callable[[Message], Awaitable[None]],
        request_id: RequestId,
        method: str,
        params: Any,
        meta: JSONObject | None,
        caller: Caller,
    ) -> None:
        #: The session the request arrived on.
        self.session = session
        #: Who sent the request (principal and verified access token), as the
        #: session's identity named it when the request arrived; a token
        #: refreshed later by another request does not change it.
        self.caller = caller
        self._protocol = protocol
        self._queue = queue
        self.request_id = request_id
        self.method = method
        #: The params, structured into the method's params type.
        self.params = params
        #: The request's raw ``_meta`` object, if it had one.
        self.meta = meta
        #: Set by :meth:`finish_with`: the result the request ends with once its
        #: scope has unwound the handler.
        self.final_result: Any = None
        #: Free for the layer above (the server keeps the request's input round here).
        self.user_data: Any = None

    @property
    def revision(self) -> Revision | None:
        """The revision this request is served in: its own ``_meta`` version in the
        modern era, the session's negotiated one in the handshake era.

        Spec: ST-01.
        """
        request_meta = self._protocol.request_meta(self.request_id)
        if request_meta is not None:
            return REVISIONS[request_meta.protocol_version]
        return self._protocol.revision

    @property
    def request_meta(self) -> RequestMeta | None:
        """What a 2026-07-28 request declared in its ``_meta`` (None in the handshake era)."""
        return self._protocol.request_meta(self.request_id)

    @property
    def client_capabilities(self) -> JSONObject:
        """The capabilities the peer declared *for this request*: its own ``_meta`` in
        the modern era (never an earlier request's), the handshake's in the handshake
        era.

        Spec: ME-09.
        """
        request_meta = self._protocol.request_meta(self.request_id)
        if request_meta is not None:
            return request_meta.client_capabilities
        return self._protocol.peer_capabilities

    def peer_declares(self, extension: str) -> bool:
        """Whether the peer declared the extension named *extension* in its
        ``capabilities.extensions``: for this request, in 2026-07-28 (its own
        ``_meta``); for the session, in the handshake era (its ``initialize``
        or, on a client, the server's answer)."""
        extensions = self.client_capabilities.get("extensions")
        return isinstance(extensions, dict) and isinstance(extensions.get(extension), dict)

    def note_follows(self, previous: RequestId) -> None:
        """Record that this request retries round *previous* of a multi
        round-trip call (the record's ``follows``)."""
        self._protocol.note_follows(self.request_id, previous)

    async def finish_with(self, result: Any) -> NoReturn:
        """End the request now with *result*, unwinding the handler by its own
        scope's cancellation (so its ``finally`` blocks and shields run, and an
        ``except Exception`` cannot swallow it). The record ends COMPLETED with
        *result*; a cancel someone asked for first (the peer, a deadline,
        shutdown) still wins and no result is sent.

        This is how a 2026-07-28 handler ends its round with an
        ``InputRequiredResult`` from deep inside the code that needs the input.

        Raises:
            LocalProtocolError: the request is not in flight (it has ended).

        Cancellation: never returns; raises :class:`trio.Cancelled`.
        """
        handle = self._protocol.handle(self.request_id)
        if handle is None:
            # Not in flight: no scope to unwind, and waiting would hang the handler.
            raise LocalProtocolError(
                f"finish_with() for {self.request_id!r}, which is not in flight"
            )
        self.final_result = result
        handle.cancel(reason="the request ended with a result (input required)")
        await trio.sleep_forever()
        raise AssertionError("unreachable")  # pragma: no cover

    @property
    def record(self) -> RequestRecord:
        """A snapshot of this request's record."""
        record = self._protocol.record(Direction.INBOUND, self.request_id)
        assert record is not None  # the record outlives the handler
        return record

    @property
    def cancel_requested(self) -> bool:
        """True once anyone (the peer, a deadline, shutdown) asked to cancel this request."""
        return self._protocol.cancel_requested(self.request_id)

    @property
    def may_send(self) -> bool:
        """Whether a message about this request may still be sent: it has not ended and
        the peer has not cancelled it, even if a deadline or shutdown asked first.

        Spec: CN-05, CN-16.
        """
        return self._protocol.may_send_for(self.request_id)

    @property
    def progress_token(self) -> str | int | None:
        """The token the requester supplied, or None (then progress is not sent)."""
        return self._protocol.progress_token(self.request_id)

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress`` for this request.

        Sends nothing when the request carried no progress token or has already ended,
        nor when the session's ``progress_interval`` rate limit holds it back.
        ``message`` is dropped for 2024-11-05 peers.

        Raises:
            LocalProtocolError: *progress* is not greater than the last one.

        Cancellation:
            A checkpoint (so a loop that only reports progress can still be
            cancelled). If already cancelled, nothing is recorded or sent; if
            cancelled while the outgoing queue is full, the notification is not
            queued.

        Spec: PG-03, PG-04, PG-07, PG-09, PG-10.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        note = self._protocol.progress_notification(self.request_id, progress, total, message)
        if note is not None:
            await self._queue(note)
        # A schedule point too (the queue's fast path does not yield).
        await trio.lowlevel.cancel_shielded_checkpoint()
