"""``RequestBook``: the records of one session's requests, both directions.

:class:`~trio_mcp.protocol.Connection` decides what the protocol allows; the
book it has keeps the records it decides with: the in-flight entries per
direction (the two sides' ids are separate namespaces, A-14), the bounded
history of finished records that :meth:`RequestBook.requests` returns, the
finished and refused inbound ids a peer may not reuse (BP-04), the inbound
progress tokens, and the counters of :meth:`RequestBook.statistics`. Every state
change of an entry goes through :meth:`RequestBook.transition` or
:meth:`RequestBook.finish`, which stamp the time, tell the observer and, for a
terminal state, move the entry from its table to the history.

Nothing here does I/O or imports trio.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from ._messages import ErrorObject, RequestId
from ._observer import NullObserver, RequestObserver
from ._requests import (
    CancelOrigin,
    Direction,
    RequestEntry,
    RequestEvent,
    RequestRecord,
    RequestState,
)

#: The history is a plain list while it is short (a deque costs ~760 bytes even
#: with one entry, and an idle session's history holds its initialize); past
#: this length it becomes a ``deque(maxlen=history)``.
_SHORT_HISTORY = 32


@attrs.frozen
class ProtocolStatistics:
    """Counters kept by :class:`Connection` (the session adds its own on top)."""

    #: Requests from the peer not yet finished (queued or running).
    in_flight_inbound: int
    #: Our requests not yet finished (not yet written, or awaiting the answer).
    in_flight_outbound: int
    #: The most requests from the peer (inbound only) in flight at once so far.
    peak_in_flight_inbound: int
    #: Requests finished COMPLETED so far, both directions.
    completed: int
    #: Requests finished FAILED so far, both directions.
    failed: int
    #: Requests finished CANCELLED so far, both directions, whoever asked.
    cancelled: int
    #: Messages from the peer ignored without an answer (a late response, a
    #: cancel or progress for an unknown or finished request).
    ignored_events: int
    #: Messages from the peer refused as invalid (not JSON, not JSON-RPC, or
    #: not allowed now).
    invalid_messages: int
    #: Requests accepted although the peer had used their id before (after the first use
    #: was answered): a peer bug tolerated for compatibility.
    #:
    #: Spec: BP-04.
    reused_ids: int = 0


class RequestBook:
    """The request records of one side of one session. Not thread-safe.

    Args:
        clock: where timestamps come from.
        history: how many finished records :meth:`requests` keeps.
        remember_ids: how many finished inbound entries are kept after they end
            (their replies may still wait in the writer's queue).
        observer: sees every request transition.
    """

    # Slots: one book per session.
    __slots__ = (
        "_cancelled",
        "_completed",
        "_failed",
        "_finished_inbound",
        "_history",
        "_history_size",
        "_ignored",
        "_inbound",
        "_inbound_tokens",
        "_invalid",
        "_outbound",
        "_peak_inbound",
        "_refusals_owed",
        "_remember_ids",
        "_reused",
        "clock",
        "observer",
        "observing",
    )

    def __init__(
        self,
        *,
        clock: Callable[[], float],
        history: int,
        remember_ids: int,
        observer: RequestObserver | None,
    ) -> None:
        if history < 0:
            raise ValueError("history must be >= 0")
        self.clock = clock
        self.observer: RequestObserver = observer or NullObserver()
        #: False when nobody observes: snapshots are then not built at all.
        self.observing = observer is not None
        self._inbound: dict[RequestId, RequestEntry] = {}
        self._outbound: dict[RequestId, RequestEntry] = {}
        # Finished records, oldest first, at most history of them (see
        # _SHORT_HISTORY: a list while short, then a bounded deque).
        self._history: list[RequestEntry] | deque[RequestEntry] = []
        self._history_size = history
        # Finished inbound entries, oldest first, bounded by remember_ids: their ids
        # may not be reused (BP-04) and their responses may still sit in the
        # writer's queue, where encode() reads their cancel_origin.
        self._finished_inbound: OrderedDict[RequestId, RequestEntry] = OrderedDict()
        # Progress tokens of inbound requests (in flight or remembered).
        self._inbound_tokens: dict[str | int, RequestEntry] = {}
        # Ids of refusals made and not yet written, with how many of each: a
        # refused request has no entry, yet its id is in use until its answer
        # is written, like that of a request whose reply waits in the queue.
        self._refusals_owed: dict[RequestId, int] = {}
        self._remember_ids = remember_ids
        self._peak_inbound = 0
        # Finished requests per terminal state.
        self._completed = 0
        self._failed = 0
        self._cancelled = 0
        self._ignored = 0
        self._invalid = 0
        # Requests accepted although their id was used before (C-02).
        self._reused = 0

    # ---------------------------------------------------------- observation

    def requests(self) -> list[RequestRecord]:
        """Snapshots: recent finished records, then in-flight ones."""
        entries: Iterable[RequestEntry] = [
            *self._history,
            *self._inbound.values(),
            *self._outbound.values(),
        ]
        return [entry.snapshot() for entry in entries]

    def record(self, direction: Direction, request_id: RequestId) -> RequestRecord | None:
        """The record of one request, in flight or in the history."""
        table = self._inbound if direction is Direction.INBOUND else self._outbound
        entry = table.get(request_id)
        if entry is None:
            for old in reversed(self._history):
                if old.direction is direction and old.id == request_id:
                    return old.snapshot()
            return None
        return entry.snapshot()

    def outbound_entry(self, request_id: RequestId) -> RequestEntry | None:
        return self._outbound.get(request_id)

    def inbound_entry(self, request_id: RequestId) -> RequestEntry | None:
        return self._inbound.get(request_id)

    def in_flight(self, direction: Direction) -> list[RequestId]:
        table = self._inbound if direction is Direction.INBOUND else self._outbound
        return list(table)

    def statistics(self) -> ProtocolStatistics:
        return ProtocolStatistics(
            in_flight_inbound=len(self._inbound),
            in_flight_outbound=len(self._outbound),
            peak_in_flight_inbound=self._peak_inbound,
            completed=self._completed,
            failed=self._failed,
            cancelled=self._cancelled,
            ignored_events=self._ignored,
            invalid_messages=self._invalid,
            reused_ids=self._reused,
        )

    # ------------------------------------------------------------- lookups

    def known_inbound(self, request_id: RequestId | None) -> RequestEntry | None:
        """The inbound entry for *request_id*: in flight, or finished and still
        remembered (its reply may wait in the writer's queue)."""
        if request_id is None:
            return None
        return self._finished_inbound.get(request_id) or self._inbound.get(request_id)

    def inbound_by_token(self, token: str | int | None) -> RequestEntry | None:
        """The inbound entry (in flight or remembered) whose progress token is *token*."""
        return None if token is None else self._inbound_tokens.get(token)

    def remembers(self, request_id: RequestId) -> bool:
        """Whether *request_id* is a finished inbound id still remembered (BP-04)."""
        return request_id in self._finished_inbound

    def id_in_use(self, request_id: RequestId | None) -> bool:
        """Whether a request from the peer with *request_id* would be a
        duplicate: its first use is in flight, or finished with its reply still
        owed (the peer cannot have read it yet)."""
        if request_id is None:
            return False
        if request_id in self._inbound or request_id in self._refusals_owed:
            return True
        old = self._finished_inbound.get(request_id)
        return old is not None and reply_owed(old)

    def refusal_owed(self, request_id: RequestId) -> None:
        """A request with *request_id* was refused: its id is in use until the
        refusal is written (:meth:`refusal_written`). A refusal the owner never
        writes keeps the id in use: only a peer reusing it is refused for that."""
        self._refusals_owed[request_id] = self._refusals_owed.get(request_id, 0) + 1

    def refusal_written(self, request_id: RequestId | None) -> bool:
        """Whether an error response with *request_id* being written is a
        refusal owed (then no longer owed), rather than an entry's reply.

        While a refusal is owed no request can take its id (:meth:`id_in_use`),
        and it is written before any later answer with that id (the one
        writer's queue keeps their order), so the first error response with a
        refused id is that refusal.
        """
        owed = None if request_id is None else self._refusals_owed.get(request_id)
        if owed is None:
            return False
        assert request_id is not None
        if owed == 1:
            del self._refusals_owed[request_id]
        else:
            self._refusals_owed[request_id] = owed - 1
        return True

    def note_late_response(self, request_id: RequestId) -> bool:
        """Record a response for a finished outbound request on its record; False
        if no finished outbound request in the history has *request_id*."""
        for old in self._history:
            if old.direction is Direction.OUTBOUND and old.id == request_id:
                old.note_late("late response")
                return True
        return False

    # ------------------------------------------------------------- changes

    def add_outbound(self, entry: RequestEntry) -> None:
        """Keep a new outbound entry (QUEUED) and tell the observer."""
        self._outbound[entry.id] = entry
        if self.observing:
            self.observer.on_transition(entry.snapshot(), None)

    def add_inbound(self, entry: RequestEntry, *, reused: bool) -> None:
        """Keep a new inbound entry (QUEUED) and tell the observer.

        *reused*: the peer used its id before and that request was answered
        (C-02): the old entry is forgotten and the reuse counted.
        """
        request_id = entry.id
        if reused:
            self.forget_finished(request_id)
            self._reused += 1
        inbound = self._inbound
        inbound[request_id] = entry
        token = entry.progress_token
        if token is not None:
            self._inbound_tokens[token] = entry
        if len(inbound) > self._peak_inbound:
            self._peak_inbound = len(inbound)
        if self.observing:
            self.observer.on_transition(entry.snapshot(), None)

    def forget_finished(self, request_id: RequestId) -> None:
        """Drop a finished inbound entry whose id the peer reuses (its record
        stays in the history)."""
        old = self._finished_inbound.pop(request_id, None)
        token = None if old is None else old.progress_token
        if token is not None and self._inbound_tokens.get(token) is old:
            del self._inbound_tokens[token]

    def count_ignored(self) -> None:
        """Count an inbound message that was ignored (``statistics().ignored_events``)."""
        self._ignored += 1

    def count_invalid(self) -> None:
        """Count an inbound message that was refused (``statistics().invalid_messages``)."""
        self._invalid += 1

    def transition(
        self, entry: RequestEntry, event: RequestEvent, *, error: ErrorObject | None = None
    ) -> RequestState | None:
        """Apply a non-terminal *event*; the old state, or None if it was ignored."""
        old = entry.apply(event, self.clock())
        if old is not None:
            if error is not None:
                entry.error = error
            if self.observing:
                self.observer.on_transition(entry.snapshot(), old)
        return old

    def finish(
        self, entry: RequestEntry, event: RequestEvent, *, error: ErrorObject | None = None
    ) -> None:
        """Apply a terminal *event* and move the entry to the history."""
        # The steps of transition(), then the move to the history.
        old_state = entry.apply(event, self.clock())
        if old_state is None:
            return
        if error is not None:
            entry.error = error
        if self.observing:
            self.observer.on_transition(entry.snapshot(), old_state)
        state = entry.state
        if state is RequestState.COMPLETED:
            self._completed += 1
        elif state is RequestState.FAILED:
            self._failed += 1
        else:
            self._cancelled += 1
        history = self._history
        history.append(entry)
        if type(history) is list and len(history) > min(_SHORT_HISTORY, self._history_size):
            self._history = deque(history, maxlen=self._history_size)
        if entry.direction is Direction.OUTBOUND:
            # A request that ended before it was written keeps no frame.
            entry.encoded = None
            self._outbound.pop(entry.id, None)
        else:
            inbound = self._inbound
            inbound.pop(entry.id, None)
            if not inbound:
                # Made afresh when it empties: a dict keeps the size it grew
                # to, and an idle session holds it empty.
                self._inbound = {}
            # Its cancel handle (the session's scope) is read only while in
            # flight (Connection.handle); the remembered entry need not keep it.
            entry.user_data = None
            finished = self._finished_inbound
            finished[entry.id] = entry
            if len(finished) > self._remember_ids:
                _, old = finished.popitem(last=False)
                if old.progress_token is not None and (
                    self._inbound_tokens.get(old.progress_token) is old
                ):
                    del self._inbound_tokens[old.progress_token]

    # ------------------------------------- the session layer's handles on a record
    #
    # The layer above never holds a RequestEntry: what it keeps with a request
    # (its cancel handle) and what it writes to a record goes through these
    # (by way of the Connection), and every change reaches the observer.

    def _updated(self, entry: RequestEntry) -> None:
        if self.observing:
            self.observer.on_update(entry.snapshot())

    def fail_outbound(self, request_id: RequestId, error: ErrorObject) -> None:
        """Fail an outbound request locally (e.g. the transport was lost)."""
        entry = self._outbound.get(request_id)
        if entry is not None:
            self.finish(entry, RequestEvent.FAIL, error=error)

    def handle(self, request_id: RequestId) -> Any:
        """The handle attached to an in-flight inbound request, or None."""
        entry = self._inbound.get(request_id)
        return None if entry is None else entry.user_data

    def request_cancel(
        self, direction: Direction, request_id: RequestId, origin: CancelOrigin, reason: str | None
    ) -> bool:
        """Note that *origin* asked to cancel an in-flight request (the first
        asker wins); False when it is not in flight."""
        table = self._inbound if direction is Direction.INBOUND else self._outbound
        entry = table.get(request_id)
        if entry is None:
            return False
        first = entry.cancel_origin is None
        if not entry.request_cancel(origin, reason):
            return False
        if first:
            self._updated(entry)
        return True

    def note_worker_thread(self, request_id: RequestId) -> None:
        """Record that an in-flight inbound request's handler runs in a worker thread."""
        entry = self._inbound.get(request_id)
        if entry is not None and not entry.in_worker_thread:
            entry.in_worker_thread = True
            self._updated(entry)

    def note_follows(self, request_id: RequestId, previous: RequestId) -> None:
        """Record that an in-flight inbound request retries round *previous*."""
        entry = self._inbound.get(request_id)
        if entry is not None and entry.follows is None:
            entry.follows = previous
            self._updated(entry)

    def may_send_for(self, request_id: RequestId) -> bool:
        """Whether an inbound request is in flight and not cancelled by the peer."""
        entry = self._inbound.get(request_id)
        return entry is not None and not entry.state.is_terminal and not entry.peer_cancelled

    def progress_token(self, request_id: RequestId) -> str | int | None:
        """The progress token of an in-flight inbound request, or None."""
        entry = self._inbound.get(request_id)
        return None if entry is None else entry.progress_token

    def refusing(self, request_id: RequestId | None) -> None:
        """A refusal with *request_id* is to be written.

        Until it is, the id is in use (BP-04): a request reusing it is a
        duplicate, as while an accepted request's reply waits; accepted, its
        entry would take the refusal for its own reply, and one of the two
        answers would be lost. A remembered entry of an earlier use (answered,
        or the refusal would carry a null id) goes, for the same reason.
        """
        if request_id is None:
            return
        if self.remembers(request_id):
            self.forget_finished(request_id)
        self.refusal_owed(request_id)


def reply_owed(entry: RequestEntry) -> bool:
    """Whether a finished inbound request's reply is still to be written: not yet
    written, and not suppressed (a peer cancel, CN-05; a lost transport)."""
    return not (
        entry.reply_written or entry.peer_cancelled or entry.cancel_origin is CancelOrigin.TRANSPORT
    )
