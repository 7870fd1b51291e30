"""A session's counters, as a frozen snapshot (trio's ``statistics()`` convention)."""

from __future__ import annotations

import attrs

from ..protocol import Connection, RequestState, SessionState
from ._writer import Writer


@attrs.frozen
class SessionStatistics:
    """A frozen snapshot of a session's counters (trio's ``statistics()`` convention)."""

    state: SessionState
    #: In-flight requests per state, both directions.
    queued: int
    running: int
    #: Totals since the session opened.
    completed: int
    failed: int
    cancelled: int
    #: Most inbound requests in flight at once.
    peak_in_flight: int
    max_concurrent: int | None
    outgoing_queue_used: int
    outgoing_queue_size: int
    frames_in: int
    frames_out: int
    invalid_messages: int
    ignored_events: int
    #: Requests accepted although the peer had used their id before (C-02).
    reused_ids: int = 0
    #: Of ``frames_out``, those their sender wrote itself while the writer was
    #: idle (write-through), not handed to the writer task.
    written_through: int = 0

    @classmethod
    def of(
        cls, protocol: Connection, writer: Writer, *, frames_in: int, max_concurrent: int | None
    ) -> SessionStatistics:
        """The counters of a session with this connection and writer now."""
        p = protocol.statistics()
        states = [r.state for r in protocol.requests() if not r.state.is_terminal]
        return cls(
            state=protocol.state,
            queued=states.count(RequestState.QUEUED),
            running=states.count(RequestState.RUNNING),
            completed=p.completed,
            failed=p.failed,
            cancelled=p.cancelled,
            peak_in_flight=p.peak_in_flight_inbound,
            max_concurrent=max_concurrent,
            outgoing_queue_used=writer.queue_used,
            outgoing_queue_size=writer.queue_size,
            frames_in=frames_in,
            frames_out=writer.frames_out,
            invalid_messages=p.invalid_messages,
            ignored_events=p.ignored_events,
            reused_ids=p.reused_ids,
            written_through=writer.written_through,
        )
