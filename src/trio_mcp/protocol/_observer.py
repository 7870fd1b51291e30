"""The observer interface: sees every request transition and every frame.

Observers are plain synchronous callbacks (shaped like ``trio.abc.Instrument``):
they must not block and cannot change behaviour, because they receive frozen
snapshots. The ``trio-mcp trace`` command and the demo are built on this.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._requests import RequestRecord, RequestState


class FrameDirection(enum.Enum):
    """Which way a frame went on the wire."""

    #: Received from the peer.
    IN = "in"
    #: Written to the peer.
    OUT = "out"


class RequestObserver:
    """Base class for observers; override what you need (every method is a no-op).

    Exceptions raised by an observer propagate: an observer is part of the
    program, not a plugin to be second-guessed.
    """

    def on_transition(self, record: RequestRecord, old: RequestState | None) -> None:
        """A request moved to ``record.state`` (``old`` is None when it was created)."""

    def on_update(self, record: RequestRecord) -> None:
        """A request's record changed without a transition (a cancel was asked
        for, its handler went to a worker thread)."""

    def on_frame(self, direction: FrameDirection, data: bytes, at: float) -> None:
        """A frame was read (IN) or written (OUT) at time *at* (the session clock)."""

    def on_close(self, reason: str, at: float) -> None:
        """The session closed for *reason*."""


class NullObserver(RequestObserver):
    """The default observer: does nothing."""


class MultiObserver(RequestObserver):
    """Fans every callback out to several observers, in order."""

    def __init__(self, *observers: RequestObserver) -> None:
        self.observers = observers

    def on_transition(self, record: RequestRecord, old: RequestState | None) -> None:
        for observer in self.observers:
            observer.on_transition(record, old)

    def on_update(self, record: RequestRecord) -> None:
        for observer in self.observers:
            observer.on_update(record)

    def on_frame(self, direction: FrameDirection, data: bytes, at: float) -> None:
        for observer in self.observers:
            observer.on_frame(direction, data, at)

    def on_close(self, reason: str, at: float) -> None:
        for observer in self.observers:
            observer.on_close(reason, at)
