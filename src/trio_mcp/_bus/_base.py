"""The publish/subscribe bus: the seam through which the instances of one
server hear each other's changes.

Theory of operation
-------------------
A :class:`Bus` has two methods. :meth:`Bus.publish` sends bytes on a *topic*;
:meth:`Bus.subscribe` is an async context manager yielding a
:class:`Subscription`, a Trio receive channel of :class:`BusEvent` for one topic.
A server (``Server(bus=...)``) publishes each list change and resource update
on its bus and fans out what it receives to its own listen streams and
handshake-era sessions, so a change made on any instance reaches every
listener on every instance (``trio_mcp._server._fanout``).

Delivery promise: **at most once, never silently**. Each message published
after a subscription is open reaches it once, in the order its publisher sent
it, unless a gap happens: the subscriber fell more than ``max_buffer`` events
behind, or (Redis) the connection was lost. A gap is never silent: the
subscription drops what it still held and yields one :class:`Resync`, which
means "messages may have been missed: read everything again". The server
turns a resync into a notice for every list and every subscribed resource,
so a client re-reads instead of missing a change. Change notices are hints
to re-read, not data, so a duplicate costs a read and a resync costs one read
per list; that is why at most once plus resync is enough here, and why
nothing is retained for replay.

:class:`MemoryBus` joins the servers of one process (tests, several
``Server`` objects in one program); ``RedisBus`` (the ``redis`` extra) joins
processes and machines.

Cancellation: :meth:`Subscription.receive` is cancellable at any point and
loses nothing when cancelled (an event is taken only when it is returned).
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Final, Protocol

import attrs
import trio

from .._errors import MCPError

__all__ = [
    "MAX_BUFFER",
    "Bus",
    "BusEvent",
    "BusMessage",
    "BusUnavailable",
    "MemoryBus",
    "Resync",
    "Subscription",
]

#: Events a subscription holds before it drops them for one :class:`Resync`.
MAX_BUFFER: Final = 10_000


class BusUnavailable(MCPError):
    """The bus could not be reached; the message was not published."""


@attrs.frozen
class BusMessage:
    """One published message."""

    topic: str
    data: bytes


@attrs.frozen
class Resync:
    """Messages on *topic* may have been missed (see the delivery promise):
    the subscriber reads its state again. *reason* says why, for logs."""

    topic: str
    reason: str


#: What a subscription yields.
BusEvent = BusMessage | Resync


class Subscription(trio.abc.ReceiveChannel[BusEvent]):
    """The events of one topic for one subscriber, in arrival order.

    Fed without blocking (:meth:`deliver`, :meth:`gap`) by the bus; holds at
    most *max_buffer* events: one more drops them all for a :class:`Resync`.
    """

    def __init__(self, topic: str, max_buffer: int = MAX_BUFFER) -> None:
        if max_buffer < 1:
            raise ValueError("max_buffer must be at least 1")
        self.topic = topic
        self.max_buffer = max_buffer
        self._events: deque[BusEvent] = deque()
        self._arrived = trio.Event()
        self._closed = False
        #: Gaps this subscription reported (a statistic for tests and logs).
        self.resyncs = 0

    def deliver(self, data: bytes) -> None:
        """Queue a message (never blocks; an overflow becomes a resync)."""
        if len(self._events) >= self.max_buffer:
            self.gap("the subscriber fell behind")
            return
        self._push(BusMessage(self.topic, data))

    def gap(self, reason: str) -> None:
        """Messages may have been lost: drop what is queued, queue one resync."""
        self._events.clear()
        self.resyncs += 1
        self._push(Resync(self.topic, reason))

    def _push(self, event: BusEvent) -> None:
        if self._closed:
            return
        self._events.append(event)
        self._arrived.set()

    async def receive(self) -> BusEvent:
        """The next event; waits for one. Raises ``trio.EndOfChannel`` once the
        bus has closed the subscription, ``trio.ClosedResourceError`` after
        :meth:`aclose`."""
        await trio.lowlevel.checkpoint_if_cancelled()
        while not self._events:
            if self._closed:
                raise trio.EndOfChannel
            await self._arrived.wait()
            self._arrived = trio.Event()
        event = self._events.popleft()
        await trio.lowlevel.cancel_shielded_checkpoint()
        return event

    def end(self) -> None:
        """The bus is closing: the subscriber gets what is queued, then the end."""
        self._closed = True
        self._arrived.set()

    async def aclose(self) -> None:
        self._closed = True
        self._events.clear()
        self._arrived.set()
        await trio.lowlevel.checkpoint()


class Bus(Protocol):
    """A publish/subscribe bus (see the module docstring for the promise)."""

    async def publish(self, topic: str, data: bytes) -> None:
        """Send *data* to every subscription of *topic* open now (this
        process's included). Raises :class:`BusUnavailable` when the bus cannot
        be reached. Cancellation: cancelled before it is sent, nothing is
        published; a backend may shield the round trip once sent."""
        ...

    def subscribe(self, topic: str) -> AbstractAsyncContextManager[Subscription]:
        """Receive what is published on *topic* from the moment the context is
        entered until it is left."""
        ...


class MemoryBus:
    """A :class:`Bus` within one process: publishing delivers at once to the
    open subscriptions of the topic (no I/O; a checkpoint)."""

    def __init__(self, *, max_buffer: int = MAX_BUFFER) -> None:
        self.max_buffer = max_buffer
        self._subscriptions: dict[str, set[Subscription]] = {}

    async def publish(self, topic: str, data: bytes) -> None:
        await trio.lowlevel.checkpoint_if_cancelled()
        for subscription in tuple(self._subscriptions.get(topic, ())):
            subscription.deliver(data)
        await trio.lowlevel.cancel_shielded_checkpoint()

    def subscribe(self, topic: str) -> AbstractAsyncContextManager[Subscription]:
        return self._subscribe(topic)

    @asynccontextmanager
    async def _subscribe(self, topic: str) -> AsyncIterator[Subscription]:
        subscription = Subscription(topic, self.max_buffer)
        self._subscriptions.setdefault(topic, set()).add(subscription)
        try:
            yield subscription
        finally:
            subscribers = self._subscriptions[topic]
            subscribers.discard(subscription)
            if not subscribers:
                del self._subscriptions[topic]
            subscription.end()

    def gap(self, reason: str) -> None:
        """Tell every open subscription that messages may have been missed
        (what a backend does after a lost connection; for tests)."""
        for subscribers in self._subscriptions.values():
            for subscription in subscribers:
                subscription.gap(reason)
