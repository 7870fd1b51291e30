"""Graceful drain of one HTTP instance: what a rolling restart needs.

Theory of operation
-------------------
A :class:`Drain` is handed to :func:`serve_http_app` (``serve_http(...,
drain=...)``; each worker of ``serve_http(workers=N)`` makes its own and
starts it on SIGTERM). Started (:meth:`Drain.start`, or SIGTERM with
``drain_on_signal``), it takes the instance out of service in this order, each
step recorded in :attr:`Drain.steps`:

1. ``not ready``: the readiness probe (``/readyz``) answers 503, so the load
   balancer stops sending new requests; the health probe stays 200;
2. after *delay* seconds (the balancer's probe interval; 0 by default),
   ``not accepting``: the listening socket stops accepting (hypercorn's
   shutdown trigger); connections already open are served on;
3. ``listens completed``: every ``subscriptions/listen`` stream is answered with
   its ``complete`` result, so its client listens again elsewhere;
4. ``in-flight finished`` once no POST is being answered, or ``grace elapsed``
   after *grace* seconds;
5. ``sessions closed``: every handshake-era session's streams end (a request of
   theirs reaching another instance gets 404, and the client initializes again);
6. ``cancelled``: what is left (sessions, tasks) is cancelled, each request
   with origin SHUTDOWN and each task with cause SHUTDOWN, and serving ends.

Cancellation: the drain runs inside :func:`serve_http_app`; cancelling that
call skips the remaining steps and cancels everything at once, as without a
drain.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable
from typing import Protocol

import trio

logger = logging.getLogger("trio_mcp.http")

#: Default seconds the POSTs in flight get to finish.
GRACE = 30.0


class Drainable(Protocol):
    """What a drain uses of the application (``StreamableHTTPApp``)."""

    ready: bool
    on_drain: Callable[[], None] | None

    async def wait_idle(self) -> None: ...

    def close_sessions(self) -> None: ...


class Drain:
    """Take one serving instance out of service (see the module docstring).

    Args:
        grace: seconds the requests in flight get to finish (step 4).
        delay: seconds between readiness going false and the socket closing
            (step 2): the load balancer's probe interval, so that it stops
            routing here before connections are refused.
    """

    def __init__(self, *, grace: float = GRACE, delay: float = 0.0) -> None:
        if grace < 0 or delay < 0:
            raise ValueError("grace and delay must be at least 0")
        self.grace = grace
        self.delay = delay
        #: The steps taken so far, in order (see the module docstring).
        self.steps: list[str] = []
        self._started = trio.Event()
        self._done = trio.Event()
        self._stepped = trio.Event()

    @property
    def started(self) -> bool:
        return self._started.is_set()

    def start(self) -> None:
        """Begin draining (idempotent; never blocks)."""
        self._started.set()

    async def wait_done(self) -> None:
        """Return once the drain's last step is taken. Cancellation: a plain wait."""
        await self._done.wait()

    async def wait_step(self, name: str) -> None:
        """Return once the step *name* is taken. Cancellation: a plain wait."""
        while name not in self.steps:
            await self._stepped.wait()
        await trio.lowlevel.checkpoint()

    def _step(self, name: str) -> None:
        self.steps.append(name)
        logger.info("drain: %s", name)
        self._stepped.set()
        self._stepped = trio.Event()

    async def run(
        self, app: Drainable, stop_accepting: trio.Event, serving: trio.CancelScope
    ) -> None:
        """Wait to be started, then take the steps; *stop_accepting* closes the
        listener, *serving* is cancelled at the end.

        Cancellation: cancelled (with the serving it belongs to), it stops
        where it is; the remaining steps are not taken.
        """
        await self._started.wait()
        app.ready = False
        self._step("not ready")
        await trio.sleep(self.delay)
        stop_accepting.set()
        self._step("not accepting")
        if app.on_drain is not None:
            app.on_drain()
        self._step("listens completed")
        with trio.move_on_after(self.grace) as waited:
            await app.wait_idle()
        self._step("grace elapsed" if waited.cancelled_caught else "in-flight finished")
        app.close_sessions()
        self._step("sessions closed")
        serving.cancel(reason="the instance drained")
        self._step("cancelled")
        self._done.set()


async def drain_on_sigterm(
    drain: Drain, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Start *drain* on the first SIGTERM (then stop listening for it)."""
    with trio.open_signal_receiver(signal.SIGTERM) as signals:
        task_status.started()
        async for _ in signals:
            drain.start()
            return
