"""The notifier: notification handlers run one at a time, in receive order.

The reader hands each notification (other than cancellation and progress, which
it applies itself) to :meth:`Notifier.queue`. The notifier's task exists only
while notifications wait: the first one starts it, and it ends when its FIFO is
empty, so an idle session holds neither a task nor a queue for them, only the
small :class:`Notifier` itself. The FIFO is bounded by the session's
``outgoing_buffer``; beyond that the reader waits for room, as it would on a
channel, so a flood of notifications slows the reader down instead of growing
memory.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable

import trio

from ..protocol import NotificationReceived

logger = logging.getLogger("trio_mcp.session")


class Notifier:
    """Runs *handle* for each notification, one at a time, in receive order.

    Args:
        nursery: where the notifier's task runs (the session's).
        handle: the dispatcher's notification handler, bound to the session.
        bound: notifications that may wait before :meth:`queue` blocks.
    """

    __slots__ = ("_bound", "_handle", "_notes", "_nursery", "_room")

    def __init__(
        self,
        nursery: trio.Nursery,
        handle: Callable[[NotificationReceived], Awaitable[None]],
        bound: int,
    ) -> None:
        self._nursery = nursery
        self._handle = handle
        self._bound = bound
        # Notifications waiting, oldest first; None while no notifier task runs.
        self._notes: deque[NotificationReceived] | None = None
        # Made only while the reader waits for room in ``_notes``.
        self._room: trio.Event | None = None

    async def queue(self, event: NotificationReceived) -> None:
        """Hand *event* to the notifier task (started if none runs), in receive order.

        Waits while more than *bound* notifications wait (the bound the
        notifier's channel had).

        Cancellation: a checkpoint, as a channel send was. If cancelled while
        waiting for room, *event* stays queued and is still handled.
        """
        notes = self._notes
        if notes is None:
            notes = self._notes = deque()
            self._nursery.start_soon(self._run, notes, name="trio_mcp notifier")
        notes.append(event)
        if len(notes) <= self._bound:
            await trio.lowlevel.checkpoint()
            return
        while len(notes) > self._bound and self._notes is notes:
            if self._room is None:
                self._room = trio.Event()
            await self._room.wait()

    async def _run(self, notes: deque[NotificationReceived]) -> None:
        """Run notification handlers one at a time, oldest first, until *notes*
        is empty; then end (the next notification starts a new task).

        A failing handler is logged; the next notification still runs.

        Cancellation: cancelled with the session's nursery; notifications still
        waiting are dropped, as they were on a channel.
        """
        try:
            while notes:
                event = notes.popleft()
                room = self._room
                if room is not None and len(notes) <= self._bound:
                    self._room = None
                    room.set()
                try:
                    await self._handle(event)
                except Exception:
                    logger.exception("notification handler for %s failed", event.method)
                del event
                if notes:
                    # A checkpoint between notifications, as a channel receive was.
                    await trio.lowlevel.checkpoint()
        finally:
            if self._notes is notes:
                self._notes = None
            if self._room is not None:
                self._room.set()
                self._room = None
