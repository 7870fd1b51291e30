"""Cancellation (``basic/utilities/cancellation``), both directions, both eras.

Theory of operation
-------------------
Either side may ask the other to stop a request it sent, with
``notifications/cancelled`` naming its id (CN-01). The rules, as
:class:`Cancellation` applies them to a connection's :class:`RequestBook`:

* **Ours** (:meth:`Cancellation.outbound`): a request our caller gave up on
  ends CANCELLED. The notification goes only for a request that was written
  (one still queued is simply never written), that may be cancelled
  (``initialize`` may not, CN-03: tear the transport down instead), on a
  session still open.
* **Theirs** (:meth:`Cancellation.receive`): a cancel for an unknown id is
  ignored (CN-04); for a request that may not be cancelled it is ignored and
  noted (CN-03); otherwise the cancel is *requested* (the first asker wins)
  and the session cancels the handler's scope. After the peer's cancel no
  response is ever sent (CN-05): a reply still waiting in the writer's queue is
  suppressed (:meth:`Cancellation.late`); one already written crossed the
  cancel on the wire, which is then ignored and noted (CN-06).
* **Our handler's end** (:meth:`Cancellation.inbound`): the request ends
  CANCELLED. A peer cancel, or the transport being gone, gets no reply; a
  local cancel (a deadline, shutdown) while the peer still waits gets -32001,
  so it is never left hanging. A 2026-07-28 ``subscriptions/listen`` the
  server abandons is ended with ``notifications/cancelled`` instead (SB-10,
  CN-15, A-12), the one use a server has for it there.
* **A 2026-07-28 client** receives ``notifications/cancelled`` only for its
  ``subscriptions/listen`` streams, which then fail with -32000 saying so
  (SB-10); a cancel naming anything else is ignored (CN-15)
  (:meth:`Cancellation.receive`).
"""

from __future__ import annotations

from ._book import RequestBook
from ._codec import encode
from ._errors import ErrorCode, LocalProtocolError
from ._events import CancelReceived, ErrorReceived, Event, Ignored, IgnoredReason
from ._messages import (
    ErrorObject,
    ErrorResponse,
    JSONObject,
    Notification,
    RequestId,
    is_valid_request_id,
)
from ._methods import cancellable, long_lived
from ._requests import CancelOrigin, RequestEntry, RequestEvent, RequestState


class Cancellation:
    """The cancellation rules, applied to the requests of one :class:`RequestBook`."""

    __slots__ = ("_book",)

    def __init__(self, book: RequestBook) -> None:
        self._book = book

    def _ignore(self, reason: IgnoredReason, detail: str) -> Ignored:
        self._book.count_ignored()
        return Ignored(reason, detail)

    # ------------------------------------------------------------------ ours

    def outbound(
        self, request_id: RequestId, origin: CancelOrigin, reason: str | None, *, closed: bool
    ) -> Notification | None:
        """Our caller gave up on outbound request *request_id*: it ends CANCELLED.

        Returns the ``notifications/cancelled`` to send, or None when none may
        or need be sent: the request was never written, it already ended, it
        is not cancellable (CN-03), or the session is *closed*.
        """
        book = self._book
        entry = book.outbound_entry(request_id)
        if entry is None or not entry.request_cancel(origin, reason):
            return None
        was_written = entry.state is RequestState.RUNNING
        book.finish(entry, RequestEvent.CANCEL)
        if not was_written or not cancellable(entry.method) or closed:
            return None
        params: JSONObject = {"requestId": request_id}
        note = Notification("notifications/cancelled", params)
        if reason:
            params["reason"] = reason
            try:
                encode(note)
            except LocalProtocolError:
                # Runs on cancellation paths, which must not fail: a reason
                # that is not JSON (a lone surrogate) is left out.
                del params["reason"]
        return note

    # ---------------------------------------------------------------- theirs

    def receive(self, params: JSONObject | None, *, modern_client: bool) -> Event:
        """The peer's ``notifications/cancelled``: for one of its requests, or,
        to a *modern_client* (2026-07-28), for one of our subscriptions."""
        request_id = (params or {}).get("requestId")
        reason = (params or {}).get("reason")
        if not is_valid_request_id(request_id) or not isinstance(reason, str | None):
            return self._ignore(
                IgnoredReason.MALFORMED, "notifications/cancelled without a valid requestId"
            )
        if modern_client:
            return self._end_subscription(request_id, reason)  # type: ignore[arg-type]
        entry = self._book.known_inbound(request_id)
        if entry is None:
            return self._ignore(IgnoredReason.UNKNOWN_ID, f"cancel for unknown id {request_id!r}")
        if not cancellable(entry.method):
            entry.note_late(f"peer cancel refused: {entry.method} is not cancellable")
            return self._ignore(
                IgnoredReason.NOT_CANCELLABLE, f"{entry.method} cannot be cancelled (CN-03)"
            )
        if entry.state.is_terminal:
            return self.late(entry, reason, params)
        entry.request_cancel(CancelOrigin.PEER, reason)  # sets peer_cancelled
        return CancelReceived(entry.id, reason, params)

    def late(
        self, entry: RequestEntry, reason: str | None, params: JSONObject | None = None
    ) -> Event:
        """A peer cancel for a request whose handler already finished.

        If its reply has not been written yet (it waits in the writer's queue),
        the reply is suppressed: after the peer's cancel no response is ever sent
        (CN-05, A-01). The record keeps its terminal state (cancel requested is
        not cancelled) and notes the cancel. If the reply was already written,
        the cancel crossed it on the wire and is ignored (CN-06), and recorded.
        """
        if entry.reply_written or entry.peer_cancelled:
            entry.note_late(f"cancel by peer in {entry.state.value}: ignored")
            return self._ignore(IgnoredReason.LATE, f"cancel for finished id {entry.id!r}")
        entry.peer_cancelled = True
        if entry.cancel_origin is None:
            entry.cancel_origin = CancelOrigin.PEER
            entry.cancel_reason = reason
        entry.note_late(f"cancel by peer in {entry.state.value}: the unwritten reply is suppressed")
        return CancelReceived(entry.id, reason, params)

    def _end_subscription(self, request_id: RequestId, reason: str | None) -> Event:
        """Client, 2026-07-28: the server tore down one of our
        ``subscriptions/listen`` streams (SB-10). The call fails with -32000
        saying so; a cancel naming anything else is ignored (CN-15)."""
        book = self._book
        entry = book.outbound_entry(request_id)
        if entry is None or not long_lived(entry.method):
            return self._ignore(
                IgnoredReason.UNEXPECTED,
                f"the server cancelled {request_id!r}, which is no subscription (CN-15)",
            )
        if entry.state is not RequestState.RUNNING:
            entry.note_late(f"server cancel in {entry.state.value}")
            return self._ignore(IgnoredReason.LATE, f"server cancel for {request_id!r}")
        error = ErrorObject(
            int(ErrorCode.SESSION_CLOSED),
            f"The server ended the subscription: {reason or 'no reason given'}",
        )
        book.finish(entry, RequestEvent.FAIL, error=error)
        return ErrorReceived(entry.id, error, remote=True)

    # ------------------------------------------------------ our handler's end

    def inbound(
        self, request_id: RequestId, origin: CancelOrigin, reason: str | None
    ) -> ErrorResponse | Notification | None:
        """The handler of inbound request *request_id* was cancelled: it ends
        CANCELLED. Returns what to write: nothing after a peer cancel or with
        the transport gone, a ``notifications/cancelled`` ending a 2026-07-28
        long-lived request, else the -32001 error response."""
        book = self._book
        entry = book.inbound_entry(request_id)
        if entry is None:
            return None
        entry.request_cancel(origin, reason)
        book.finish(entry, RequestEvent.CANCEL)
        if entry.peer_cancelled or entry.cancel_origin in (
            CancelOrigin.PEER,
            CancelOrigin.TRANSPORT,
        ):
            return None
        who = (entry.cancel_origin or origin).value
        message = f"Request cancelled by the {who}"
        if entry.cancel_reason:
            message += f": {entry.cancel_reason}"
        if entry.envelope is not None and long_lived(entry.method):
            entry.reply_written = True
            return Notification(
                "notifications/cancelled", {"requestId": request_id, "reason": message}
            )
        return ErrorResponse(
            request_id, ErrorObject(int(ErrorCode.REQUEST_CANCELLED_LOCALLY), message)
        )
