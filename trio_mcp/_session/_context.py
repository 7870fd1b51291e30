"""The per-request context a session hands to its dispatcher's handler."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, final

import trio

from ..protocol import Direction, RequestRecord

if TYPE_CHECKING:
    from ..protocol import JSONObject, RequestId
    from ._engine import Session


@final
class RequestContext:
    """What a handler knows about the request it is serving. Not constructed directly.

    A handler's task runs inside the request's own cancel scope: a peer's
    ``notifications/cancelled``, the session's shutdown and the loss of the
    transport all arrive as :class:`trio.Cancelled` at the handler's next
    checkpoint. :attr:`cancel_requested` tells a handler that finished its work
    after the last checkpoint that its result will not be sent.
    """

    __slots__ = ("meta", "method", "params", "request_id", "session")

    def __init__(
        self,
        session: Session,
        request_id: RequestId,
        method: str,
        params: Any,
        meta: JSONObject | None,
    ) -> None:
        self.session = session
        self.request_id = request_id
        self.method = method
        #: The params, structured into the method's params type.
        self.params = params
        #: The request's raw ``_meta`` object, if it had one.
        self.meta = meta

    @property
    def record(self) -> RequestRecord:
        """A snapshot of this request's record."""
        record = self.session.protocol.record(Direction.INBOUND, self.request_id)
        assert record is not None  # the record outlives the handler
        return record

    @property
    def cancel_requested(self) -> bool:
        """True once anyone (the peer, a deadline, shutdown) asked to cancel this request."""
        entry = self.session.protocol.inbound_entry(self.request_id)
        return entry is None or entry.cancel_origin is not None

    @property
    def progress_token(self) -> str | int | None:
        """The token the requester supplied, or None (then progress is not sent)."""
        entry = self.session.protocol.inbound_entry(self.request_id)
        return None if entry is None else entry.progress_token

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress`` for this request.

        Sends nothing when the request carried no progress token (PG-07) or has
        already ended (PG-10), nor when the session's ``progress_interval``
        rate limit holds it back (PG-09). ``message`` is dropped for 2024-11-05
        peers.

        Raises:
            LocalProtocolError: *progress* is not greater than the last one (PG-04).

        Cancellation:
            A checkpoint (so a loop that only reports progress can still be
            cancelled). If already cancelled, nothing is recorded or sent; if
            cancelled while the outgoing queue is full, the notification is not
            queued.

        Spec: PG-03, PG-04, PG-07, PG-09, PG-10.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        note = self.session.protocol.progress_notification(
            self.request_id, progress, total, message
        )
        if note is not None:
            await self.session._queue(note)
        # A schedule point too (the queue's fast path does not yield).
        await trio.lowlevel.cancel_shielded_checkpoint()
