"""A session's counters, as a frozen snapshot (trio's ``statistics()`` convention)."""

from __future__ import annotations

import attrs

from ..protocol import Connection, RequestState, SessionState
from ._writer import Writer


@attrs.frozen
class SessionStatistics:
    """A frozen snapshot of a session's counters (trio's ``statistics()`` convention),
    from :meth:`Session.statistics`. Taking one is cheap and never blocks."""

    #: Where the session is in its lifecycle (``OPERATING``, ``MODERN``, ``CLOSED``...).
    state: SessionState
    #: Requests in flight now, in both directions, that are waiting to start
    #: (inbound: admitted but not yet running; outbound: not yet written).
    queued: int
    #: Requests in flight now, in both directions, that are running (inbound:
    #: the handler runs; outbound: written, the answer not yet in).
    running: int
    #: Requests finished since the session opened, both directions, by how
    #: they ended.
    completed: int
    #: See ``completed``: ended with an error answer or a handler failure.
    failed: int
    #: See ``completed``: ended by a cancel, whoever asked.
    cancelled: int
    #: The most requests from the peer (inbound only) in flight at once since
    #: the session opened; a client that only calls keeps it at 0.
    peak_in_flight: int
    #: The bound on inbound requests run at once (``max_concurrent=``), or
    #: None for no bound.
    max_concurrent: int | None
    #: Messages waiting in the outgoing queue for the writer now.
    outgoing_queue_used: int
    #: The outgoing queue's size (``outgoing_buffer=``): a sender waits when
    #: it is full.
    outgoing_queue_size: int
    #: Frames read from the transport since the session opened.
    frames_in: int
    #: Frames written to the transport since the session opened.
    frames_out: int
    #: Messages from the peer that were refused: not JSON, not JSON-RPC, or not
    #: allowed now (each answered with an error when it had an id).
    invalid_messages: int
    #: Messages from the peer that were ignored without an answer: a cancel or
    #: progress for an unknown or finished request, a late response.
    ignored_events: int
    #: Requests accepted although the peer had used their id before (after
    #: the first use was answered): a peer bug tolerated for compatibility.
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
