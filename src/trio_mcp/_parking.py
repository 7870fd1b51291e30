"""One task waits, another wakes it: the only hand scheduling in trio_mcp.

:class:`Parking` wraps ``trio.lowlevel.wait_task_rescheduled`` and
``trio.lowlevel.reschedule`` once, so the session's outbound calls, its
admission queue and the HTTP server transport's inbox each say *what* they
wait for, never *how* a task is parked. It exists because a ``trio.Event`` per
waiter, or a memory channel, costs allocations and a scheduler pass that
these paths take on every request; it is a leaf (it imports nothing from
trio_mcp), so every layer may use it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio
from outcome import Outcome, Value


class Parking:
    """A one-shot hand-off of an outcome to one task that parks for it.

    The waker records an outcome with :meth:`wake`; the waiter gets it from
    :meth:`park`, whether it parked before the wake (it is rescheduled) or
    after (it returns at once). The first wake wins; a spot is used once.

    Cancellation:
        :meth:`park` is a checkpoint. A task cancelled while parked is
        forgotten at once, before any other task runs: a later :meth:`wake`
        still records its outcome (for whoever looks at :attr:`outcome`) but
        wakes nobody. Then the *on_cancel* given to :meth:`park`, if any, is
        called, still synchronously (the place to take the waiter out of a
        queue, so that no waker picks it), and ``Cancelled`` propagates.
        :meth:`wake` never yields.
    """

    __slots__ = ("_task", "outcome")

    def __init__(self) -> None:
        self._task: trio.lowlevel.Task | None = None
        #: What :meth:`wake` recorded (None: not woken yet).
        self.outcome: Outcome[Any] | None = None

    @property
    def parked(self) -> bool:
        """Whether a task is parked here now."""
        return self._task is not None

    def park(self, on_cancel: Callable[[], object] | None = None) -> Awaitable[None]:
        """``await spot.park()`` blocks until :meth:`wake`; the outcome is then
        in :attr:`outcome`, not unwrapped (the caller decides where an error is
        raised).

        A plain method returning the wait itself: a task parked for the whole
        life of an idle session keeps no frame of this method.

        Raises ``RuntimeError`` if another task is parked here.

        Cancellation: see the class. Woken before it parks, it is a plain
        checkpoint (a cancellation there raises ``Cancelled`` and leaves the
        outcome recorded).
        """
        if self.outcome is not None:
            return trio.lowlevel.checkpoint()  # noqa: ASYNC105 (awaited by the caller)
        if self._task is not None:
            raise RuntimeError("another task is already parked here")
        self._task = trio.lowlevel.current_task()
        if on_cancel is None:
            # A bound method, not a closure: the smallest object a parked
            # task keeps alive.
            return trio.lowlevel.wait_task_rescheduled(self._abort)  # noqa: ASYNC105

        def abort(raise_cancel: trio.lowlevel.RaiseCancelT) -> trio.lowlevel.Abort:
            self._abort(raise_cancel)
            on_cancel()
            return trio.lowlevel.Abort.SUCCEEDED

        return trio.lowlevel.wait_task_rescheduled(abort)  # noqa: ASYNC105

    def _abort(self, _: trio.lowlevel.RaiseCancelT) -> trio.lowlevel.Abort:
        self._task = None
        return trio.lowlevel.Abort.SUCCEEDED

    def wake(self, result: Outcome[Any] | None = None) -> bool:
        """Record *result* (None: ``Value(None)``, a fresh one, since an
        outcome is unwrapped only once) and reschedule the parked task, if any
        (one that parks later returns it at once).

        Returns False, changing nothing, when an outcome was recorded already.

        Cancellation: never yields.
        """
        if self.outcome is not None:
            return False
        self.outcome = Value(None) if result is None else result
        task = self._task
        if task is not None:
            self._task = None
            trio.lowlevel.reschedule(task)
        return True
