"""The notifier: notification handlers run one at a time, in receive order.

The reader hands each notification (other than cancellation and progress, which
it applies itself) to :func:`queue`. The notifier task exists only while
notifications wait: the first one starts it, and it ends when its FIFO is
empty, so an idle session holds neither a task nor a queue for them. The FIFO is
bounded by the session's ``outgoing_buffer``; beyond that the reader waits for
room, as it would on a channel, so a flood of notifications slows the reader
down instead of growing memory.

The FIFO and the room event live on the session (``_notes``, ``_notes_room``)
so that an idle session carries no notifier object at all.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import TYPE_CHECKING

import trio

from ..protocol import NotificationReceived

if TYPE_CHECKING:
    from ._engine import Session

logger = logging.getLogger("trio_mcp.session")


async def queue(session: Session, event: NotificationReceived) -> None:
    """Hand *event* to the notifier (started if none runs), in receive order.

    Waits while more than ``outgoing_buffer`` notifications wait (the bound
    the notifier's channel had).

    Cancellation: a checkpoint, as a channel send was. If cancelled while
    waiting for room, *event* stays queued and is still handled.
    """
    notes = session._notes
    if notes is None:
        notes = session._notes = deque()
        session._nursery.start_soon(_run, session, notes, name="trio_mcp notifier")
    notes.append(event)
    if len(notes) <= session._outgoing_buffer:
        await trio.lowlevel.checkpoint()
        return
    while len(notes) > session._outgoing_buffer and session._notes is notes:
        if session._notes_room is None:
            session._notes_room = trio.Event()
        await session._notes_room.wait()


async def _run(session: Session, notes: deque[NotificationReceived]) -> None:
    """Run notification handlers one at a time, oldest first, until *notes*
    is empty; then end (the reader starts a new notifier for the next one).

    A failing handler is logged; the next notification still runs.

    Cancellation: cancelled with the session's nursery; notifications still
    waiting are dropped, as they were on a channel.
    """
    try:
        while notes:
            event = notes.popleft()
            room = session._notes_room
            if room is not None and len(notes) <= session._outgoing_buffer:
                session._notes_room = None
                room.set()
            try:
                await session.dispatcher.handle_notification(session, event)
            except Exception:
                logger.exception("notification handler for %s failed", event.method)
            del event
            if notes:
                # A checkpoint between notifications, as a channel receive was.
                await trio.lowlevel.checkpoint()
    finally:
        if session._notes is notes:
            session._notes = None
        if session._notes_room is not None:
            session._notes_room.set()
            session._notes_room = None
