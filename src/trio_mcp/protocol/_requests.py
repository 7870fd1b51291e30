"""The request state machine, one table for both directions.

Theory of operation
-------------------
Every request a session sends or receives gets a record that walks this table::

    QUEUED  --start-->    RUNNING
    QUEUED  --cancel-->   CANCELLED      (an inbound handler never starts;
                                          an outbound request is never written)
    QUEUED  --fail-->     FAILED
    RUNNING --complete--> COMPLETED
    RUNNING --fail-->     FAILED
    RUNNING --cancel-->   CANCELLED

Terminal states never change. An event that arrives for a record in a terminal
state (a late response, a cancel that crossed the response on the wire, a
handler that finished after its cancel) is *ignored and recorded* in
``late_events``; it is never an error (CN-06, CN-07, CN-08, CN-10).

"Cancel requested" is separate from "cancelled". ``cancel_origin`` says who asked
(the peer, our caller, a deadline, shutdown, the transport) and is set even if
the work then finished anyway; the response policy reads it: once the peer asked,
no response is ever sent for that request (CN-05, A-01).

For outbound requests QUEUED means "handed to the writer, not yet written" and
RUNNING "written, awaiting the reply". For inbound requests QUEUED means "received,
waiting for a concurrency slot" and RUNNING "the handler is executing".
"""

from __future__ import annotations

from typing import Any

import attrs

from ._enum import _FastEnum
from ._messages import ErrorObject, RequestId


class RequestState(_FastEnum):
    """Where a request is in its life (spec_notes/requests.md)."""

    #: Received and waiting for a slot (inbound) / handed to the writer (outbound).
    QUEUED = "queued"
    #: The handler runs (inbound) / written and awaiting the reply (outbound).
    RUNNING = "running"
    #: Ended with a result.
    COMPLETED = "completed"
    #: Ended with an error (an error response, a handler failure, a lost transport).
    FAILED = "failed"
    #: Ended because it was cancelled; ``cancel_origin`` says by whom.
    #:
    #: Spec: CN-05.
    CANCELLED = "cancelled"

    @property
    def is_terminal(self) -> bool:
        return self in _TERMINAL


_TERMINAL = frozenset({RequestState.COMPLETED, RequestState.FAILED, RequestState.CANCELLED})


class RequestEvent(_FastEnum):
    """What can happen to a request."""

    START = "start"
    COMPLETE = "complete"
    FAIL = "fail"
    CANCEL = "cancel"


#: The whole state machine. A (state, event) pair that is missing is ignored and
#: recorded as a late event.
TRANSITIONS: dict[RequestState, dict[RequestEvent, RequestState]] = {
    RequestState.QUEUED: {
        RequestEvent.START: RequestState.RUNNING,
        RequestEvent.CANCEL: RequestState.CANCELLED,
        RequestEvent.FAIL: RequestState.FAILED,
    },
    RequestState.RUNNING: {
        RequestEvent.COMPLETE: RequestState.COMPLETED,
        RequestEvent.FAIL: RequestState.FAILED,
        RequestEvent.CANCEL: RequestState.CANCELLED,
    },
    RequestState.COMPLETED: {},
    RequestState.FAILED: {},
    RequestState.CANCELLED: {},
}


class Direction(_FastEnum):
    """Which way a request travels, seen from this side of the session."""

    #: The peer sent it; we answer it.
    INBOUND = "inbound"
    #: We sent it; the peer answers it.
    OUTBOUND = "outbound"


class CancelOrigin(_FastEnum):
    """Who asked for a request to be cancelled."""

    #: The peer sent ``notifications/cancelled`` (inbound requests only).
    PEER = "peer"
    #: Our caller's cancel scope was cancelled (outbound requests).
    CALLER = "caller"
    #: A deadline fired: the request timeout, or a handler's own time limit.
    DEADLINE = "deadline"
    #: The session was shutting down.
    SHUTDOWN = "shutdown"
    #: The transport was lost (EOF, broken pipe, dead process).
    TRANSPORT = "transport"


@attrs.frozen(slots=True)
class Progress:
    """The last progress notification seen or sent for a request.

    Spec: PG-03..PG-05.
    """

    #: The progress value so far; it increases with each notification.
    progress: float
    #: The total the progress counts towards, when the sender knows it.
    total: float | None = None
    #: A human-readable status (not sent to a 2024-11-05 peer).
    message: str | None = None


@attrs.frozen(slots=True)
class RequestRecord:
    """A frozen snapshot of one request. Not constructed directly.

    Timestamps are on the session's clock (Trio's clock in a session, so
    ``autojump_clock`` tests read exact values). ``late_events`` lists what arrived
    after the record was terminal and was ignored.
    """

    #: The JSON-RPC id: ours for an outbound request, the peer's for an inbound one.
    id: RequestId
    #: The MCP method, such as ``tools/call``.
    method: str
    #: INBOUND (the peer sent it, we answer) or OUTBOUND (we sent it).
    direction: Direction
    #: Where it is in the request state machine at the time of the snapshot.
    state: RequestState
    #: When it was received (inbound) or made (outbound).
    queued_at: float
    #: When it became RUNNING: its handler started (inbound) or it was written
    #: (outbound); None if it never did.
    started_at: float | None = None
    #: When it reached a terminal state; None while in flight.
    finished_at: float | None = None
    #: The ``_meta.progressToken`` it carries, or None when no progress was asked for.
    progress_token: str | int | None = None
    #: The last progress notification seen (outbound) or sent (inbound) for it.
    progress: Progress | None = None
    #: Who asked first for it to be cancelled (set even when it then finished
    #: anyway); None if nobody asked.
    cancel_origin: CancelOrigin | None = None
    #: The reason given with that cancel, if any.
    cancel_reason: str | None = None
    #: The error it ended with (an error response, sent or received, or a
    #: handler failure); None otherwise.
    error: ErrorObject | None = None
    #: What arrived after it was terminal and was ignored, one short line each
    #: (a late response, a cancel that crossed the answer, ...).
    late_events: tuple[str, ...] = ()
    #: The handler ran (or runs) a plain function in a worker thread; on
    #: cancellation that thread was abandoned, not interrupted.
    in_worker_thread: bool = False
    #: 2026-07-28: it COMPLETED with an ``InputRequiredResult``: the round of a
    #: multi round-trip call, which the client may retry with the inputs.
    input_required: bool = False
    #: 2026-07-28: the id of the round this request retries (inbound: read from
    #: its verified ``requestState``; outbound: the request it answered), so the
    #: rounds of one logical call read as one story.
    follows: RequestId | None = None

    @property
    def cancel_requested(self) -> bool:
        """True once anyone asked for cancellation, whatever the state says."""
        return self.cancel_origin is not None

    @property
    def duration(self) -> float | None:
        """Seconds from queued to finished, once finished."""
        if self.finished_at is None:
            return None
        return self.finished_at - self.queued_at


class RequestEntry:
    """The mutable twin of :class:`RequestRecord`, owned by the connection.

    Invariant: ``state`` only changes through :meth:`apply`, which follows
    :data:`TRANSITIONS`; terminal states are final.
    """

    __slots__ = (
        "cancel_origin",
        "cancel_reason",
        "direction",
        "encoded",
        "envelope",
        "error",
        "finished_at",
        "follows",
        "id",
        "in_worker_thread",
        "input_required",
        "late_events",
        "method",
        "peer_cancelled",
        "progress",
        "progress_sent_at",
        "progress_token",
        "queued_at",
        "reply_written",
        "request_meta",
        "started_at",
        "state",
        "task_allowed",
        "user_data",
    )

    def __init__(
        self,
        request_id: RequestId,
        method: str,
        direction: Direction,
        now: float,
        progress_token: str | int | None = None,
    ) -> None:
        self.id = request_id
        self.method = method
        self.direction = direction
        self.state = RequestState.QUEUED
        self.queued_at = now
        self.started_at: float | None = None
        self.finished_at: float | None = None
        self.progress_token = progress_token
        self.progress: Progress | None = None
        # Inbound only: when the last progress notification was sent (PG-09).
        self.progress_sent_at: float | None = None
        self.cancel_origin: CancelOrigin | None = None
        self.cancel_reason: str | None = None
        self.error: ErrorObject | None = None
        # A tuple, replaced on each (rare) late event: the shared empty one
        # costs a finished record nothing (a list was ~56 bytes each, kept for
        # every remembered request).
        self.late_events: tuple[str, ...] = ()
        self.in_worker_thread = False
        # The serialized frame: for an inbound request its response, made when
        # the handler finished; for an outbound one the request, made when it
        # was created (so what is not JSON fails there, never in the writer).
        self.encoded: bytes | None = None
        # Inbound only. The peer sent ``notifications/cancelled`` for it before its
        # reply was written: no reply may be written any more (CN-05), even when
        # the record already ended (cancel_origin then keeps the first asker).
        self.peer_cancelled = False
        # Inbound only. Its reply has been handed to the transport (by encode()).
        self.reply_written = False
        # Free slot for the layer above (the session keeps its scope/waiter here).
        self.user_data: Any = None
        # Inbound, 2026-07-28: what this request's own _meta declared (ST-01),
        # as checked: version, capabilities, clientInfo, logLevel. Not None
        # marks a request of the modern era.
        self.envelope: tuple[str, dict[str, Any], dict[str, Any] | None, str | None] | None = None
        # Its RequestMeta, made from the envelope when first asked for: most
        # handlers never read it, and a frozen record costs a setattr call per
        # field.
        self.request_meta: RequestMeta | None = None
        self.input_required = False
        # Outbound only: it asked for a task (2025-11-25 ``params.task``, or the
        # tasks extension declared in its own ``_meta``), so a task may answer it.
        self.task_allowed = False
        self.follows: RequestId | None = None

    def note_late(self, event: str) -> None:
        """Record what arrived too late to change the state (never an error)."""
        self.late_events = (*self.late_events, event)

    def apply(self, event: RequestEvent, now: float, *, note: str = "") -> RequestState | None:
        """Apply *event*; return the old state, or None if it was ignored (and recorded)."""
        old = self.state
        new = TRANSITIONS[old].get(event)
        if new is None:
            self.note_late(f"{event.value} in {old.value}" + (f": {note}" if note else ""))
            return None
        self.state = new
        if new is RequestState.RUNNING:
            self.started_at = now
        elif new in _TERMINAL:
            self.finished_at = now
        return old

    def request_cancel(self, origin: CancelOrigin, reason: str | None) -> bool:
        """Note who asked to cancel; the first asker wins. False if already terminal."""
        if self.state in _TERMINAL:
            self.note_late(f"cancel by {origin.value} in {self.state.value}")
            return False
        if self.cancel_origin is None:
            self.cancel_origin = origin
            self.cancel_reason = reason
        if origin is CancelOrigin.PEER:
            self.peer_cancelled = True
        return True

    def snapshot(self) -> RequestRecord:
        return RequestRecord(
            id=self.id,
            method=self.method,
            direction=self.direction,
            state=self.state,
            queued_at=self.queued_at,
            started_at=self.started_at,
            finished_at=self.finished_at,
            progress_token=self.progress_token,
            progress=self.progress,
            cancel_origin=self.cancel_origin,
            cancel_reason=self.cancel_reason,
            error=self.error,
            late_events=self.late_events,
            in_worker_thread=self.in_worker_thread,
            input_required=self.input_required,
            follows=self.follows,
        )


@attrs.frozen(slots=True)
class RequestMeta:
    """What a 2026-07-28 request declared about itself in its ``_meta``.

    Read from *this* request only, never inferred from an earlier one: a server handler
    reads the client's capabilities here.

    Spec: ME-06..ME-15, ST-01.
    """

    #: ``io.modelcontextprotocol/protocolVersion``.
    protocol_version: str
    #: ``io.modelcontextprotocol/clientCapabilities`` (``{}``: none).
    client_capabilities: dict[str, Any]
    #: ``io.modelcontextprotocol/clientInfo``, if sent (self-reported).
    #:
    #: Spec: ME-12.
    client_info: dict[str, Any] | None = None
    #: ``io.modelcontextprotocol/logLevel``, if sent: the least severe level of
    #: ``notifications/message`` wanted for this request.
    #:
    #: Spec: ME-15, LG-06.
    log_level: str | None = None
