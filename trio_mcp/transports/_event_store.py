"""Event stores: what makes Streamable HTTP streams resumable.

Every message the server sends on an SSE stream is first stored and gets an
event id; a client that lost the connection reconnects with ``Last-Event-ID``
and gets exactly the events of *that* stream after that id (HT-25, HT-26).

The store is pluggable (:class:`EventStore`, e.g. backed by Redis for a server
farm); :class:`MemoryEventStore` is the bounded in-memory default. Events are
keyed by session: an id from another session, or from a stream the session
never had, is unknown (no cross-session replay, reliability E-05).

Event ids have the form ``<stream id>.<sequence>``: they say which stream they
belong to (HT-24) and the sequence is unique across every stream of the session.

Spec: HT-10, HT-17, HT-24..HT-26.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from typing import Protocol

#: One stored event: its id and its data (None for a priming event).
StoredEvent = tuple[str, bytes | None]


class EventStore(Protocol):
    """What the HTTP server needs from an event store.

    Implementations must keep events of different sessions apart and must
    return the events of one stream in the order they were stored.
    """

    async def store_event(self, session_id: str, stream_id: str, data: bytes | None) -> str:
        """Store one event of *stream_id*; return its new, session-unique event id."""
        ...

    async def events_after(
        self, session_id: str, last_event_id: str
    ) -> tuple[str, list[StoredEvent]] | None:
        """The stream *last_event_id* belongs to and its events after it, oldest first.

        None when the id is unknown to this session or its successors were
        evicted (resuming would silently lose events).
        """
        ...

    async def forget_session(self, session_id: str) -> None:
        """Drop everything stored for *session_id* (the session ended)."""
        ...


def split_event_id(event_id: str) -> tuple[str, int] | None:
    """``"<stream>.<seq>"`` → ``(stream, seq)``; None if malformed."""
    stream, sep, seq = event_id.rpartition(".")
    if not sep or not stream or not seq.isascii() or not seq.isdigit() or len(seq) > 18:
        return None
    return stream, int(seq)


class _SessionEvents:
    __slots__ = ("next_seq", "streams")

    def __init__(self) -> None:
        self.next_seq = 1
        self.streams: OrderedDict[str, deque[tuple[int, bytes | None]]] = OrderedDict()


class MemoryEventStore:
    """A bounded in-memory :class:`EventStore`.

    Args:
        max_events_per_stream: older events of a stream are evicted beyond this.
        max_streams_per_session: the least recently written streams of a session
            are dropped beyond this.
        max_sessions: sessions beyond this evict the least recently written one.

    A resume from an evicted position is refused (None), never answered with a
    silently shortened replay.
    """

    def __init__(
        self,
        *,
        max_events_per_stream: int = 1024,
        max_streams_per_session: int = 256,
        max_sessions: int = 10_000,
    ) -> None:
        self.max_events_per_stream = max_events_per_stream
        self.max_streams_per_session = max_streams_per_session
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[str, _SessionEvents] = OrderedDict()

    async def store_event(self, session_id: str, stream_id: str, data: bytes | None) -> str:
        return self.store_event_nowait(session_id, stream_id, data)

    def store_event_nowait(self, session_id: str, stream_id: str, data: bytes | None) -> str:
        """Synchronous :meth:`store_event` (the memory store never blocks)."""
        session = self._sessions.get(session_id)
        if session is None:
            session = self._sessions[session_id] = _SessionEvents()
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
        else:
            self._sessions.move_to_end(session_id)
        events = session.streams.get(stream_id)
        if events is None:
            events = session.streams[stream_id] = deque(maxlen=self.max_events_per_stream)
            while len(session.streams) > self.max_streams_per_session:
                session.streams.popitem(last=False)
        else:
            session.streams.move_to_end(stream_id)
        seq = session.next_seq
        session.next_seq += 1
        events.append((seq, data))
        return f"{stream_id}.{seq}"

    async def events_after(
        self, session_id: str, last_event_id: str
    ) -> tuple[str, list[StoredEvent]] | None:
        return self.events_after_nowait(session_id, last_event_id)

    def events_after_nowait(
        self, session_id: str, last_event_id: str
    ) -> tuple[str, list[StoredEvent]] | None:
        """Synchronous :meth:`events_after`."""
        parsed = split_event_id(last_event_id)
        session = self._sessions.get(session_id)
        if parsed is None or session is None:
            return None
        stream_id, seq = parsed
        events = session.streams.get(stream_id)
        if events is None or not events:
            return None
        # The id must be one we stored for this stream and still hold.
        if seq < events[0][0] or seq >= session.next_seq:
            return None
        if not any(s == seq for s, _ in events):
            return None
        return stream_id, [(f"{stream_id}.{s}", d) for s, d in events if s > seq]

    async def forget_session(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)

    def __len__(self) -> int:
        """Events held, all sessions together."""
        return sum(len(e) for s in self._sessions.values() for e in s.streams.values())
