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

Bounds (reliability E-09): a session's events are bounded in count (per stream,
and streams per session), in bytes (the payloads a session keeps) and, if asked,
in age; the store holds at most ``max_sessions`` sessions, and a session that
ends is forgotten at once. Whatever a bound drops, it drops oldest first, so a
stream always keeps a *suffix* of its events: a resume from an event still held
replays everything after it, and a resume from a dropped one is refused (the
server answers 400), never served a shortened replay.

Spec: HT-10, HT-17, HT-24..HT-26.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from typing import Protocol

import trio

#: One stored event: its id and its data (None for a priming event).
StoredEvent = tuple[str, bytes | None]


class EventStore(Protocol):
    """What the HTTP server needs from an event store.

    Implementations must keep events of different sessions apart and must
    return the events of one stream in the order they were stored.
    """

    async def store_event(self, session_id: str, stream_id: str, data: bytes | None) -> str:
        """Store one event of *stream_id*; return its new, session-unique event id.

        Cancellation:
            Called from the session's writer, which is cancelled only at
            shutdown; a store cancelled part-way may or may not have kept the
            event, and the frame is then not sent.
        """
        ...

    async def events_after(
        self, session_id: str, last_event_id: str
    ) -> tuple[str, list[StoredEvent]] | None:
        """The stream *last_event_id* belongs to and its events after it, oldest first.

        None when the id is unknown to this session or its successors were
        evicted (resuming would silently lose events).

        Cancellation:
            Cancelled (the client went away while resuming), nothing is
            replayed and the store is unchanged.
        """
        ...

    async def forget_session(self, session_id: str) -> None:
        """Drop everything stored for *session_id* (the session ended).

        Cancellation:
            Called shielded and bounded (one second) when a session ends; a
            store cut off by the bound may keep some events until they age out.
        """
        ...


def split_event_id(event_id: str) -> tuple[str, int] | None:
    """``"<stream>.<seq>"`` → ``(stream, seq)``; None if malformed."""
    stream, sep, seq = event_id.rpartition(".")
    if not sep or not stream or not seq.isascii() or not seq.isdigit() or len(seq) > 18:
        return None
    return stream, int(seq)


#: One kept event: its sequence, its data, and when it was stored (0.0 when
#: the store has no age bound: no clock is read then).
_Kept = tuple[int, bytes | None, float]

#: Default bound on the payload bytes one session keeps.
MAX_BYTES_PER_SESSION = 8 * 1024 * 1024


def _nbytes(data: bytes | None) -> int:
    return 0 if data is None else len(data)


class _SessionEvents:
    __slots__ = ("next_seq", "size", "streams")

    def __init__(self) -> None:
        self.next_seq = 1
        #: Payload bytes held, all streams together.
        self.size = 0
        self.streams: OrderedDict[str, deque[_Kept]] = OrderedDict()

    def drop_stream(self, stream_id: str) -> None:
        events = self.streams.pop(stream_id)
        self.size -= sum(_nbytes(data) for _, data, _ in events)

    def drop_oldest(self) -> None:
        """Drop the session's oldest event (the lowest sequence of any stream).

        Each stream's events are in sequence order, so the oldest of the
        session is the first of some stream: dropping it keeps every stream a
        suffix of what it sent. O(streams of the session).
        """
        stream_id, events = min(self.streams.items(), key=lambda item: item[1][0][0])
        _, data, _ = events.popleft()
        self.size -= _nbytes(data)
        if not events:
            del self.streams[stream_id]

    def oldest_stamp(self) -> float:
        return min(events[0][2] for events in self.streams.values())


class MemoryEventStore:
    """A bounded in-memory :class:`EventStore`.

    Args:
        max_events_per_stream: older events of a stream are evicted beyond this
            (default 1024).
        max_streams_per_session: the least recently written streams of a session
            are dropped beyond this (default 256).
        max_bytes_per_session: the payload bytes (event data; a priming event
            counts 0) a session keeps, all its streams together; beyond it the
            session's oldest events are dropped, whichever stream they belong
            to (default 8 MiB; None: no byte bound). An event larger than this
            is sent but not kept, and neither is anything before it.
        max_age: seconds an event is kept (None, the default: no age bound).
            Older events are dropped when their session next stores an event or
            a client resumes it (the session ending drops them all anyway).
            Read on Trio's clock, so the store must then be used inside Trio.
        max_sessions: sessions beyond this evict the least recently written one
            (default 10 000).

    A resume from an evicted position is refused (None), never answered with a
    silently shortened replay, whichever bound evicted it.

    Memory: with the defaults a session keeps at most 8 MiB of payloads (plus
    about 100 bytes of bookkeeping per event); its events go when it ends.
    """

    def __init__(
        self,
        *,
        max_events_per_stream: int = 1024,
        max_streams_per_session: int = 256,
        max_bytes_per_session: int | None = MAX_BYTES_PER_SESSION,
        max_age: float | None = None,
        max_sessions: int = 10_000,
    ) -> None:
        if max_events_per_stream < 1:
            raise ValueError("max_events_per_stream must be at least 1")
        self.max_events_per_stream = max_events_per_stream
        self.max_streams_per_session = max_streams_per_session
        self.max_bytes_per_session = max_bytes_per_session
        self.max_age = max_age
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[str, _SessionEvents] = OrderedDict()

    async def store_event(self, session_id: str, stream_id: str, data: bytes | None) -> str:
        await trio.lowlevel.checkpoint_if_cancelled()
        event_id = self.store_event_nowait(session_id, stream_id, data)
        await trio.lowlevel.cancel_shielded_checkpoint()
        return event_id

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
            events = session.streams[stream_id] = deque()
            while len(session.streams) > self.max_streams_per_session:
                session.drop_stream(next(iter(session.streams)))
        else:
            session.streams.move_to_end(stream_id)
            if len(events) >= self.max_events_per_stream:
                _, dropped, _ = events.popleft()
                session.size -= _nbytes(dropped)
        seq = session.next_seq
        session.next_seq += 1
        now = 0.0 if self.max_age is None else trio.current_time()
        events.append((seq, data, now))
        session.size += _nbytes(data)
        self._trim(session, now)
        return f"{stream_id}.{seq}"

    def _trim(self, session: _SessionEvents, now: float) -> None:
        """Drop *session*'s oldest events while it is over its byte or age bound."""
        limit = self.max_bytes_per_session
        if limit is not None:
            while session.size > limit:
                session.drop_oldest()
        if self.max_age is not None:
            cutoff = now - self.max_age
            while session.streams and session.oldest_stamp() < cutoff:
                session.drop_oldest()

    async def events_after(
        self, session_id: str, last_event_id: str
    ) -> tuple[str, list[StoredEvent]] | None:
        await trio.lowlevel.checkpoint()
        return self.events_after_nowait(session_id, last_event_id)

    def events_after_nowait(
        self, session_id: str, last_event_id: str
    ) -> tuple[str, list[StoredEvent]] | None:
        """Synchronous :meth:`events_after`."""
        parsed = split_event_id(last_event_id)
        session = self._sessions.get(session_id)
        if parsed is None or session is None:
            return None
        if self.max_age is not None:
            self._trim(session, trio.current_time())
        stream_id, seq = parsed
        events = session.streams.get(stream_id)
        if events is None or not events:
            return None
        # The id must be one we stored for this stream and still hold.
        if seq < events[0][0] or seq >= session.next_seq:
            return None
        if not any(s == seq for s, _, _ in events):
            return None
        return stream_id, [(f"{stream_id}.{s}", d) for s, d, _ in events if s > seq]

    async def forget_session(self, session_id: str) -> None:
        await trio.lowlevel.checkpoint()
        self._sessions.pop(session_id, None)

    def __len__(self) -> int:
        """Events held, all sessions together."""
        return sum(len(e) for s in self._sessions.values() for e in s.streams.values())

    def held_bytes(self, session_id: str | None = None) -> int:
        """Payload bytes held for *session_id* (None: all sessions together)."""
        if session_id is not None:
            session = self._sessions.get(session_id)
            return 0 if session is None else session.size
        return sum(s.size for s in self._sessions.values())
