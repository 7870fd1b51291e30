"""Diagnostics: report handlers that block the event loop (reliability H-09).

Trio is cooperative: a handler that calls ``time.sleep``, does CPU-bound work or
blocking I/O without ``await`` holds up every other task, so pings go
unanswered, cancellations wait and other requests stall. Nothing in trio_mcp can
prevent that (it is Python's and Trio's nature, and documented as a
limitation); :class:`SlowStepReporter` makes it visible. It is a Trio
instrument that times every task step and logs a warning for each one longer
than a threshold, naming the task and, for a request's task, the method and id
of the request it was serving::

    trio.run(main, instruments=[trio_mcp.lowlevel.SlowStepReporter(threshold=0.1)])

or, inside a running program, ``trio.lowlevel.add_instrument(reporter)``.

Cost: two clock readings per task step while installed; nothing when not. The
request is found only for a step already found slow.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import trio

__all__ = ["SlowStepReporter"]

logger = logging.getLogger("trio_mcp.diagnostics")


class SlowStepReporter(trio.abc.Instrument):
    """A Trio instrument that warns about task steps longer than *threshold*.

    Args:
        threshold: seconds a single step (the code between two checkpoints of
            one task) may take before it is reported; 0.1 by default.
        clock: the wall clock it reads (``time.perf_counter``); tests pass
            their own.
        log: where reports go (the ``trio_mcp.diagnostics`` logger at WARNING).

    :attr:`reports` keeps the last 100 reports as ``(task name, seconds,
    request description or None)``.
    """

    def __init__(
        self,
        threshold: float = 0.1,
        *,
        clock: Callable[[], float] = time.perf_counter,
        log: logging.Logger = logger,
    ) -> None:
        if not threshold > 0:
            raise ValueError("threshold must be > 0")
        self.threshold = threshold
        self._clock = clock
        self._log = log
        # task -> (when its step began, its coroutine's frame): the frame is
        # kept for the step only, so a request's task that blocks and returns
        # in one step can still be named (a finished coroutine has no frame).
        self._started: dict[trio.lowlevel.Task, tuple[float, Any]] = {}
        self.reports: list[tuple[str, float, str | None]] = []

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self._started[task] = (self._clock(), getattr(task.coro, "cr_frame", None))

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        self._end_step(task)

    def task_exited(self, task: trio.lowlevel.Task) -> None:
        # A task's last step ends here, before after_task_step (which then
        # finds nothing): a handler that blocks and returns is reported too.
        self._end_step(task)

    def _end_step(self, task: trio.lowlevel.Task) -> None:
        step = self._started.pop(task, None)
        if step is None:
            return
        started, frame = step
        seconds = self._clock() - started
        if seconds <= self.threshold:
            return
        request = _request_in(frame)
        self.reports.append((task.name, seconds, request))
        del self.reports[:-100]
        self._log.warning(
            "task %r blocked the event loop for %.3f s%s (a blocking call without "
            "await? run it with trio.to_thread.run_sync)",
            task.name,
            seconds,
            f" while serving {request}" if request else "",
        )


def _request_in(frame: Any) -> str | None:
    """``"tools/call (id 7)"`` when *frame* is an inbound request's task (the
    ``ctx`` of the :class:`~trio_mcp._session._inbound.InboundRequest` whose
    ``run`` it is), else None.

    Only ever read for a step already found slow: the request path pays
    nothing for it.
    """
    owner = frame.f_locals.get("self") if frame is not None else None
    ctx = getattr(owner, "ctx", None)
    method = getattr(ctx, "method", None)
    if not isinstance(method, str):
        return None
    return f"{method} (id {getattr(ctx, 'request_id', None)!r})"
