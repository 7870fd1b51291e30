"""A server's changes through a :class:`~trio_mcp.bus.Bus`, so that every
instance's listeners hear them.

Theory of operation
-------------------
Without a bus, :meth:`Server._changed` and :meth:`Server.resource_updated`
push to this process's listen streams and sessions directly. With one
(``Server(bus=...)``), while the server is serving (:meth:`Server.running`)
a :class:`Fanout` stands between: a change is queued (the registry's methods
stay synchronous, never a checkpoint), one publisher task sends the queue in
order on the bus's ``changes`` topic, and one receiver task hands every
message it gets, this instance's own included, to the local delivery. So a
change reaches local listeners the way it reaches remote ones, once.

When the bus reports a gap (:class:`~trio_mcp.bus.Resync`: Redis came back,
or this receiver fell behind), the receiver calls the server's resync: every
list-changed notice and a resource update for every subscribed URI, on every
local stream and session, so clients re-read rather than miss a change. When
publishing fails (the bus is unreachable), the change is delivered locally at
once and logged; the other instances' subscriptions are down too, so they
resync when the bus is back.

Cancellation: the two tasks run in :meth:`run`'s nursery until it is
cancelled; changes still queued then are delivered locally only.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import Final

import orjson
import trio

from .._bus._base import Bus, BusMessage, BusUnavailable

logger = logging.getLogger("trio_mcp.bus")

#: The topic a server's changes travel on.
TOPIC: Final = "changes"


class Fanout:
    """The bus relay of one server in one process (see the module docstring)."""

    def __init__(
        self,
        bus: Bus,
        deliver: Callable[[str, str | None], None],
        resync: Callable[[], None],
        topic: str = TOPIC,
    ) -> None:
        self.bus = bus
        self.topic = topic
        self._deliver = deliver
        self._resync = resync
        self._queue: deque[tuple[str, str | None]] = deque()
        self._wake = trio.Event()
        #: Whether changes go through the bus now (the receiver is subscribed).
        self.active = False
        #: Counters for statistics and tests.
        self.published = 0
        self.received = 0
        self.resyncs = 0
        self.publish_failures = 0

    def change(self, method: str, uri: str | None = None) -> None:
        """Queue a change for the bus (never blocks)."""
        self._queue.append((method, uri))
        self._wake.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Subscribe, then publish and receive until cancelled."""
        async with self.bus.subscribe(self.topic) as subscription, trio.open_nursery() as nursery:
            self.active = True
            try:
                nursery.start_soon(self._publish)
                task_status.started()
                async for event in subscription:
                    if isinstance(event, BusMessage):
                        self.received += 1
                        method, uri = orjson.loads(event.data)
                        self._deliver(method, uri)
                    else:
                        self.resyncs += 1
                        logger.info("bus: %s; every listener is told to re-read", event.reason)
                        self._resync()
            finally:
                self.active = False
                # Not sent: this instance's listeners hear them all the same.
                while self._queue:
                    self._deliver(*self._queue.popleft())

    async def _publish(self) -> None:
        while True:
            while not self._queue:
                await self._wake.wait()
                self._wake = trio.Event()
            method, uri = self._queue[0]
            try:
                await self.bus.publish(self.topic, orjson.dumps([method, uri]))
            except BusUnavailable as error:
                self.publish_failures += 1
                logger.warning("bus: %s; delivering %s here only", error, method)
                self._deliver(method, uri)
            else:
                self.published += 1
            self._queue.popleft()
