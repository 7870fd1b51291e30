"""A :class:`~trio_mcp.bus.Bus` on Redis pub/sub, shared by every process
given the same Redis and ``prefix``.

Theory of operation
-------------------
Why pub/sub and not streams: what travels on the bus are change notices,
hints to re-read a list or a resource, published often and worth nothing once
every listener has re-read. Pub/sub delivers each message to the connections
subscribed at that moment, in the order one connection published them, and
keeps nothing: no trimming, no consumer cursors, no memory growing with a
slow reader. Streams would add replay after a short disconnection, but not
after Redis itself restarts without persistence (the stream is gone too), so
a subscriber needs a "read everything again" path in any case; with it, the
replay buys nothing that a resync does not. The promise is the bus's (see
:mod:`trio_mcp._bus._base`): at most once, in order per publisher, and a gap
is always followed by a :class:`~trio_mcp.bus.Resync`.

One connection subscribes, by pattern, to every channel under the prefix
(``<prefix>*``), whatever the number of local subscriptions; a listener task
hands each message to the subscriptions of its topic. Publishing uses the
bus's client (one ``PUBLISH``, never retried: a retried publish could arrive
twice).

When Redis goes away (a restart, a failover, a killed connection) the
listener reconnects, with a backoff from 0.05 s doubling to 2 s, for as long
as the bus is open; once subscribed again it gives every local subscription a
:class:`~trio_mcp.bus.Resync` ("reconnected to Redis"): whatever was published
in between is not replayed, but the subscriber is told to re-read. While
Redis is down, :meth:`RedisBus.publish` raises :class:`BusUnavailable`.

Cancellation: :meth:`publish` is cancelled only before its command is sent;
once sent, the round trip is shielded. Leaving ``async with`` ends every
subscription (their receivers see the end), unsubscribes and closes the
client, in that order, in a task of the bus's own (the pattern of
``RedisTaskStore``), so an outside cancellation never tears coredis down
midway.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from types import TracebackType
from typing import Final, Self

import anyio
import attrs
import coredis
import coredis.exceptions
import trio

from .._redis import RedisService, redis_client
from ._base import MAX_BUFFER, BusUnavailable, Subscription

__all__ = ["DEFAULT_PREFIX", "RedisBus", "RedisBusStatistics"]

logger = logging.getLogger("trio_mcp.bus")

#: Default channel prefix.
DEFAULT_PREFIX: Final = "trio_mcp:bus:"
#: Seconds between reconnection attempts: the first, and the most.
BACKOFF: Final = (0.05, 2.0)

_CONNECTION_GONE: Final = (
    coredis.exceptions.RedisError,
    TimeoutError,
    OSError,
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
)


@attrs.frozen
class RedisBusStatistics:
    """What one :class:`RedisBus` object has seen."""

    #: Messages received on the bus's subscription.
    messages: int
    #: Times the subscription was made again after a loss (each a resync).
    reconnections: int
    #: Local subscriptions open now.
    subscriptions: int
    #: Whether the subscription is established now.
    connected: bool


class RedisBus:
    """A :class:`~trio_mcp.bus.Bus` on Redis pub/sub (see the module docstring).

    Args:
        redis: a connection URL (``redis://host:port/db``, ``unix:///path``),
            from which the bus makes its own client, or a ready
            ``coredis.Redis`` client (``decode_responses=False``) that the
            caller has entered and keeps open around the bus (the connection
            setup the task store takes, so both can share one client).
        prefix: the start of every channel; servers sharing a Redis but not a
            bus use different prefixes.
        max_buffer: events a slow local subscription holds before it drops
            them for one resync.

    A server given it (``Server(bus=...)``) opens it while it runs. Used on
    its own, enter it, ``async with RedisBus(url) as bus:``, in the task that will
    leave it: that opens the client, checks that Redis answers
    (:class:`~trio_mcp.bus.BusUnavailable` at once if not) and subscribes.
    """

    def __init__(
        self,
        redis: str | coredis.Redis[bytes],
        *,
        prefix: str = DEFAULT_PREFIX,
        max_buffer: int = MAX_BUFFER,
    ) -> None:
        if not prefix:
            raise ValueError("the channel prefix must not be empty")
        self._client, self._owns_client = redis_client(redis, "messages")
        self.prefix = prefix
        self.max_buffer = max_buffer
        # Glob characters in the prefix match themselves.
        self._pattern = re.sub(r"([*?\[\]\\])", r"\\\1", prefix).encode() + b"*"
        self._subscriptions: dict[str, set[Subscription]] = {}
        self._service = RedisService(BusUnavailable)
        self._first_subscribed = trio.Event()
        self._stopping = False
        self._waiting = trio.CancelScope()
        self._connected = False
        self._messages = 0
        self._reconnections = 0

    @property
    def is_open(self) -> bool:
        """Whether the bus has been entered and not left."""
        return self._service.is_open

    def statistics(self) -> RedisBusStatistics:
        return RedisBusStatistics(
            messages=self._messages,
            reconnections=self._reconnections,
            subscriptions=sum(len(s) for s in self._subscriptions.values()),
            connected=self._connected,
        )

    # -- publish and subscribe

    async def publish(self, topic: str, data: bytes) -> None:
        """``PUBLISH`` *data* on *topic*. Raises :class:`BusUnavailable` when
        the bus is not open or Redis cannot be reached (then the message may
        or may not have been sent; it is never sent twice)."""
        if not self._service.is_open:
            raise BusUnavailable("the RedisBus is not open: use 'async with RedisBus(...)'")
        await trio.lowlevel.checkpoint_if_cancelled()
        with trio.CancelScope(shield=True):
            try:
                await self._client.publish(self.prefix + topic, data)
            except _CONNECTION_GONE as error:
                raise BusUnavailable(f"cannot publish on the bus: {error}") from error

    def subscribe(self, topic: str) -> AbstractAsyncContextManager[Subscription]:
        if not self._service.is_open:
            raise BusUnavailable("the RedisBus is not open: use 'async with RedisBus(...)'")
        return self._subscribe(topic)

    @asynccontextmanager
    async def _subscribe(self, topic: str) -> AsyncIterator[Subscription]:
        subscription = Subscription(topic, self.max_buffer)
        self._subscriptions.setdefault(topic, set()).add(subscription)
        try:
            await trio.lowlevel.checkpoint()
            yield subscription
        finally:
            subscribers = self._subscriptions.get(topic)
            if subscribers is not None:
                subscribers.discard(subscription)
                if not subscribers:
                    del self._subscriptions[topic]
            subscription.end()

    # -- the bus's life

    async def __aenter__(self) -> Self:
        self._first_subscribed = trio.Event()
        self._stopping = False
        await self._service.open(self._serve, "RedisBus")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        for subscribers in self._subscriptions.values():
            for subscription in subscribers:
                subscription.end()
        return await self._service.close(exc_type, exc, traceback)

    async def _serve(
        self, stop: trio.Event, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        async with self._service.connected(
            self._client, self._owns_client, _CONNECTION_GONE, BusUnavailable
        ) as scope:
            # Shielded once open: the exit ends it in order (see the module docstring).
            scope.shield = True
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._keep_subscribed)
                await self._first_subscribed.wait()
                task_status.started()
                await stop.wait()
                # Only the wait is cancelled: the subscription then ends
                # in order (unsubscribe, leave coredis's pubsub).
                self._stopping = True
                self._waiting.cancel()

    async def _keep_subscribed(self) -> None:
        """Subscribe; on a loss, wait (backoff), subscribe again, resync."""
        delay = BACKOFF[0]
        first = True
        while not self._stopping:
            try:
                async with self._client.pubsub(patterns=[self._pattern]) as pubsub:
                    with self._cancellable():
                        await self._listen(pubsub, first)
                    self._connected = False
                    with suppress(*_CONNECTION_GONE):
                        await pubsub.punsubscribe()
            except _CONNECTION_GONE as error:
                self._connected = False
                logger.warning("bus: lost Redis (%s); reconnecting", error)
            first = False
            with self._cancellable():
                await trio.sleep(delay)
            delay = min(delay * 2, BACKOFF[1])

    def _cancellable(self) -> trio.CancelScope:
        """A scope that stopping the bus cancels (made cancelled if it has)."""
        self._waiting = trio.CancelScope()
        if self._stopping:
            self._waiting.cancel()
        return self._waiting

    async def _listen(self, pubsub: coredis.patterns.pubsub.PubSub[bytes], first: bool) -> None:
        subscribed = False
        while True:
            message = await pubsub.get_message()
            if message is None:
                continue
            kind = message["type"]
            if kind == "pmessage":
                self._messages += 1
                channel = message["channel"]
                name = channel.decode() if isinstance(channel, bytes) else str(channel)
                data = message["data"]
                payload = data if isinstance(data, bytes) else str(data).encode()
                for subscription in tuple(self._subscriptions.get(name[len(self.prefix) :], ())):
                    subscription.deliver(payload)
            elif kind == "psubscribe":
                self._connected = True
                self._first_subscribed.set()
                if subscribed or not first:
                    # Made again after a loss: messages may have been missed.
                    self._reconnections += 1
                    logger.info("bus: subscribed to Redis again; resync")
                    for subscribers in tuple(self._subscriptions.values()):
                        for subscription in tuple(subscribers):
                            subscription.gap("reconnected to Redis")
                subscribed = True
