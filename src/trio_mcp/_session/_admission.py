"""FIFO admission of inbound requests under the session's concurrency limit.

Theory of operation
-------------------
The admission decision is made by the *reader*, which sees requests in arrival
order: :meth:`Admission.arrive` either takes a free slot for the request there
and then, or appends a :class:`Ticket` to a FIFO. Each request's task (started
at arrival, inside the request's cancel scope) then waits on its ticket, if it
got one; :meth:`Admission.release` hands a freed slot straight to the oldest
ticket still waiting. So requests take slots in arrival order, whatever order
Trio happens to start their tasks in.

A request cancelled while queued (its scope cancelled: by the peer, shutdown,
the transport) abandons its ticket and never starts; ``release`` skips
abandoned tickets. A ticket granted a slot whose task is cancelled before it
runs gives the slot back (the task's ``finally`` calls ``release``).

Without a limit (``limit`` None) there is no admission at all: every request
runs at once.
"""

from __future__ import annotations

from collections import deque
from functools import partial

import trio

from .._parking import Parking


class Ticket(Parking):
    """A queued request's place in line: the request's task parks on it until
    :meth:`Admission.release` wakes it with a slot. Not constructed directly."""

    __slots__ = ("abandoned",)

    def __init__(self) -> None:
        super().__init__()
        #: The waiter was cancelled while queued: skip it.
        self.abandoned = False

    @property
    def granted(self) -> bool:
        """A slot was handed to this ticket; its holder must release it."""
        return self.outcome is not None


class Admission:
    """Up to *limit* requests hold a slot at once; the rest wait in arrival order."""

    __slots__ = ("_queue", "in_use", "limit", "max_waiting", "waiting_now")

    def __init__(self, limit: int, max_waiting: int | None = None) -> None:
        self.limit = limit
        #: Bound on the requests waiting for a slot (None: unbounded).
        self.max_waiting = max_waiting
        self.in_use = 0
        #: Requests waiting for a slot now (abandoned tickets not counted).
        self.waiting_now = 0
        # Made when the first request has to wait, dropped when the line empties:
        # most sessions never queue anything, and an empty deque is not small.
        self._queue: deque[Ticket] | None = None

    @property
    def waiting(self) -> int:
        """Tickets in line (including abandoned ones not yet skipped)."""
        return len(self._queue) if self._queue is not None else 0

    @property
    def full(self) -> bool:
        """No free slot, and as many requests wait as may: :meth:`arrive` would
        exceed the bound, so the caller refuses the request instead."""
        return (
            self.max_waiting is not None
            and self.waiting_now >= self.max_waiting
            and (self.in_use >= self.limit or bool(self._queue))
        )

    def arrive(self) -> Ticket | None:
        """Called in arrival order. None: a slot was taken now. Else: wait on the ticket."""
        queue = self._queue
        if self.in_use < self.limit and not queue:
            self.in_use += 1
            return None
        self.waiting_now += 1
        ticket = Ticket()
        if queue is None:
            queue = self._queue = deque()
        queue.append(ticket)
        return ticket

    async def wait(self, ticket: Ticket) -> None:
        """Block until *ticket* is granted a slot.

        Cancellation:
            If cancelled before the slot is granted, the ticket is abandoned (no
            slot is held) and ``Cancelled`` propagates. If the slot was granted
            but the caller's scope is already cancelled, ``Cancelled`` propagates
            with the slot held: the caller releases it (``ticket.granted``).
        """
        try:
            if not ticket.granted:
                await trio.lowlevel.checkpoint_if_cancelled()
            if not ticket.granted:
                # Left the line at once if cancelled: release() never picks it.
                await ticket.park(partial(self._abandon, ticket))
            # Granted: a request whose scope was cancelled meanwhile still never
            # starts.
            await trio.lowlevel.checkpoint_if_cancelled()
        except BaseException:
            # Not granted: leave the line (release() skips us). Granted: the
            # caller holds the slot and releases it.
            if not ticket.granted:
                self._abandon(ticket)
            raise

    def _abandon(self, ticket: Ticket) -> None:
        if not ticket.abandoned:
            ticket.abandoned = True
            self.waiting_now -= 1

    def release(self) -> None:
        """Give a slot back: to the oldest waiting ticket, or to the pool."""
        queue = self._queue
        while queue:
            ticket = queue.popleft()
            if ticket.abandoned:
                continue
            if not queue:
                self._queue = None
            self.waiting_now -= 1
            ticket.wake()
            return
        self._queue = None
        self.in_use -= 1
