"""Where a server's tasks run: :class:`TaskRunner` (TK-07..TK-19).

Theory of operation
-------------------
A task is a request whose record lives past its response. When a request
becomes a task, its handler's work is started in a nursery the *server* owns
(:meth:`TaskRunner.running`), not in the request's, so the request can end with
its ``CreateTaskResult`` while the work goes on; the task's record
(:class:`~trio_mcp.protocol.TaskRecord`) lives in the server's
:class:`~trio_mcp._tasks._store.TaskStore`, where any worker sharing the
store serves ``tasks/get`` and the others from it.

Each task's work has its own cancel scope. Three things cancel it, in this
order of precedence and with these bounds:

1. ``tasks/cancel`` (cause ``REQUESTOR``): the ask is written to the store
   (the 2025-11-25 form also moves the task to ``CANCELLED`` before replying,
   TK-16; the extension's is cooperative); the worker running the task sees the
   ask through its watcher (:meth:`TaskStore.wait_changed`) and cancels the
   scope at once, whichever worker wrote it.
2. Its ttl (cause ``TTL``): the store drops the record when the ttl elapses
   (moving a running task ``EXPIRE`` to ``FAILED``) and the watcher, woken with
   None, cancels the work.
3. The server's shutdown (cause ``SHUTDOWN``): leaving :meth:`running` cancels
   every task still working; each records ``CANCELLED`` by shutdown, shielded
   and bounded by :data:`FINISH_BOUND` seconds, and the block returns once all
   have unwound.

The work's own end is the fourth way: its result completes the task (a
2025-11-25 tool result with ``isError`` fails it, TK-17), an
:class:`~trio_mcp.RPCError` fails it with that error, any other exception fails
it with -32603 (logged, details never sent). What the request would have
returned is kept in the record (``result`` or ``error``), which is what
``tasks/result`` and the extension's ``tasks/get`` give back (TK-12).

A store that fails (a shared store out of reach) never takes the runner down:
the failure is logged, the work goes on (a ``tasks/cancel`` served by this
worker still stops it), and an end that cannot be written is logged.

Input inside a task
-------------------
A handler asks for input through its ``Context`` as in a request; inside a task
the round is a :class:`~trio_mcp._server._task_input.TaskInputRound`. In the
2025-11-25 form each input is a request to the client tagged with the
related-task ``_meta`` (TK-09, TK-13), the task ``INPUT_REQUIRED`` while they
are out. In the extension form the
inputs are written to the record's ``input_requests`` (the task moves to
``INPUT_REQUIRED``); ``tasks/update`` moves each answered key from
``input_requests`` to ``input_responses`` (so the very next ``tasks/get``
shows only what is still missing) and the task back to ``WORKING`` once none
is; the work, waiting on the store, takes its answers and goes on. Nothing is
re-run: the handler's coroutine simply resumes.

Every write goes through one compare-and-set loop (:meth:`TaskRunner._move`):
read the record, compute the next one, write it if nobody wrote first.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from typing import TYPE_CHECKING, Any

import attrs
import trio

from .._errors import RPCError
from .._util import unwrapping
from ..protocol import (
    ErrorCode,
    JSONObject,
    TaskCause,
    TaskEvent,
    TaskForm,
    TaskRecord,
    TaskState,
    apply_task_event,
    new_task_id,
    start_task,
)
from ._store import (
    InvalidCursor,
    MemoryTaskStore,
    Owner,
    TaskConflict,
    TaskLimitExceeded,
    TaskStore,
    TaskStoreError,
    UnknownTask,
)

if TYPE_CHECKING:
    from .._session import RequestContext

logger = logging.getLogger("trio_mcp.server.tasks")

#: Seconds a task's last write may take once its work has ended (shielded).
FINISH_BOUND = 5.0
#: Default ttl of a task, in milliseconds, when the request names none (1 hour).
DEFAULT_TTL_MS = 3_600_000
#: Default cap on the ttl a request may ask for, in milliseconds (1 day, TK-18).
MAX_TTL_MS = 86_400_000
#: Default suggested milliseconds between polls (TK-10).
POLL_INTERVAL_MS = 1_000
#: Default bound on the tasks working at once in one runner (TK-18).
MAX_RUNNING = 256
#: Default page size of ``tasks/list``.
LIST_PAGE = 50
#: Default bound on the rate tasks are created at in one runner: this many a
#: second on average, in bursts of up to :data:`CREATION_BURST` (TK-18).
CREATION_RATE = 100.0
CREATION_BURST = 200


@attrs.frozen
class WorkEnd:
    """How a task's work ended: the event its task ends with, and what the
    request would have returned (its ``result``, or its JSON-RPC ``error``)."""

    event: TaskEvent
    result: JSONObject | None = None
    error: JSONObject | None = None

    @classmethod
    def tool_result(cls, form: TaskForm, result: JSONObject) -> WorkEnd:
        """A ``tools/call`` result: ``isError`` fails a 2025-11-25 task and
        completes an extension one (TK-17, TK-19)."""
        event = form.tool_result_event(is_error=result.get("isError") is True)
        return cls(event, result=result)


#: The work of a task, as started by :meth:`TaskRunner.start`.
Work = Callable[[], Awaitable[WorkEnd]]


def _error_object(exc: RPCError) -> JSONObject:
    error: JSONObject = {"code": exc.code, "message": exc.message}
    if exc.data is not None:
        error["data"] = exc.data
    return error


def _invalid_params(message: str) -> RPCError:
    return RPCError(int(ErrorCode.INVALID_PARAMS), message)


class TaskRunner:
    """Runs a server's tasks and serves their records (see the module docstring).

    Args:
        store: where the records live (default: a :class:`MemoryTaskStore`);
            give every worker of a scaled-out server the same shared store.
        default_ttl_ms: the ttl of a task whose request names none.
        max_ttl_ms: the cap on any ttl (a longer one asked for is lowered; the record
            says the ttl granted).
        poll_interval_ms: the ``pollInterval`` suggested to requestors.
        max_running: tasks working at once in this runner; one more is refused -32603
            naming the bound.
        creation_rate, creation_burst: tasks created a second on average, and
            at most in a burst (a token bucket on Trio's clock); one more is
            refused -32603 naming the bound and the seconds until the next is
            allowed (``data.retryAfter``). ``creation_rate=None``: no bound.
        list_page: tasks per ``tasks/list`` page.
        clock: seconds since the epoch (the store's clock should agree).

    Not thread-safe; one per :class:`~trio_mcp.Server`.

    Spec: TK-18, TK-15, TK-10.
    """

    def __init__(
        self,
        store: TaskStore | None = None,
        *,
        default_ttl_ms: int | None = DEFAULT_TTL_MS,
        max_ttl_ms: int = MAX_TTL_MS,
        poll_interval_ms: int | None = POLL_INTERVAL_MS,
        max_running: int = MAX_RUNNING,
        list_page: int = LIST_PAGE,
        creation_rate: float | None = CREATION_RATE,
        creation_burst: int = CREATION_BURST,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if max_running < 1 or list_page < 1 or max_ttl_ms < 1 or creation_burst < 1:
            raise ValueError(
                "max_running, list_page, max_ttl_ms and creation_burst must be at least 1"
            )
        if creation_rate is not None and not creation_rate > 0:
            raise ValueError("creation_rate must be positive (None: no bound)")
        self.creation_rate = creation_rate
        self.creation_burst = creation_burst
        # The token bucket: tokens left, and when (Trio's clock) they were counted.
        self._tokens = float(creation_burst)
        self._counted_at: float | None = None
        self.store: TaskStore = store if store is not None else MemoryTaskStore(clock=clock)
        self.default_ttl_ms = default_ttl_ms
        self.max_ttl_ms = max_ttl_ms
        self.poll_interval_ms = poll_interval_ms
        self.max_running = max_running
        self.list_page = list_page
        self.clock = clock
        self._nursery: trio.Nursery | None = None
        self._stopping = False
        #: The cancel scope of each task working here, by task id.
        self._scopes: dict[str, trio.CancelScope] = {}

    # ------------------------------------------------------------ lifetime

    @property
    def is_running(self) -> bool:
        """Whether :meth:`running` is open (tasks can be started)."""
        return self._nursery is not None

    @property
    def working(self) -> int:
        """Tasks whose work runs here now."""
        return len(self._scopes)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[TaskRunner]:
        """Own the nursery tasks work in, for the block's duration.

        The ``serve_*`` entry points open it around everything they serve;
        open it yourself when you serve sessions with the low-level API. A
        store that must be opened (``RedisTaskStore``) and is not yet is
        opened for the block and closed after the tasks have unwound.

        Cancellation: leaving the block (normally or by cancellation) cancels
        every task still working; each records ``CANCELLED`` with cause
        ``SHUTDOWN`` (bounded by :data:`FINISH_BOUND`) before the block returns.

        Raises:
            RuntimeError: it is open already. An exception leaving the block
                leaves it as itself (not in an exception group).
        """
        if self._nursery is not None:
            raise RuntimeError("the task runner is already running")
        self._stopping = False
        # A store that must be opened (a RedisTaskStore: its client and change
        # subscription) is opened for the runner's life, unless its owner has.
        store: object = self.store
        opening: AbstractAsyncContextManager[object] = nullcontext()
        if isinstance(store, AbstractAsyncContextManager) and not getattr(store, "is_open", False):
            opening = store
        # The block's own exception comes out as itself, not in a group of one.
        async with unwrapping(), opening, trio.open_nursery() as nursery:
            self._nursery = nursery
            try:
                yield self
            finally:
                self._stopping = True
                self._nursery = None
                nursery.cancel_scope.cancel(reason="the server is shutting down")

    def serving(self) -> AbstractAsyncContextManager[TaskRunner]:
        """:meth:`running`, unless it is open already (then the block just uses it):
        what each ``serve_*`` entry point and :func:`~trio_mcp.serve_session` open, so
        the outermost one owns the runner and everything inside shares it. Which of the
        two is decided when this is called (enter the result at once).

        The shared case is a plain ``nullcontext``: every session of an HTTP
        server enters it and holds it while it lives, and a generator-based
        context manager would be ~0.5 KiB of each idle session.

        Cancellation: as :meth:`running` for the owner; nothing for the others.
        """
        if self._nursery is not None:
            return nullcontext(self)
        return self.running()

    # ------------------------------------------------------------ starting

    def granted_ttl(self, asked_ms: int | None) -> int | None:
        """The ttl a task gets when *asked_ms* was asked for.

        Spec: TK-10, TK-18.
        """
        ttl = self.default_ttl_ms if asked_ms is None else asked_ms
        if ttl is None:
            return None
        return max(1, min(int(ttl), self.max_ttl_ms))

    async def start(
        self,
        request: RequestContext,
        work: Callable[[TaskRecord], Work],
        *,
        form: TaskForm,
        owner: Owner,
        ttl_ms: int | None = None,
    ) -> TaskRecord:
        """Create a task continuing *request* (which is running) and start its work,
        ``work(record)()``, in the runner's nursery. Returns the record as created: the
        task is in the store (a ``tasks/get`` finds it) before this returns, so the
        ``CreateTaskResult`` may be sent (SEP-2663's strong consistency).

        Raises:
            RPCError: -32603 when the runner is not running, or a bound is
                reached (``max_running``, the store's; ``data.limit`` names it).

        Cancellation: cancelled before the store write, nothing was created;
        after it, the work is started all the same (the write is shielded).

        Spec: TK-11.
        """
        nursery = self._nursery
        if nursery is None:
            raise RPCError(
                int(ErrorCode.INTERNAL_ERROR),
                "Internal error: tasks need the server's task runner "
                "(the serve_* functions run it; see Server.tasks.running())",
            )
        if len(self._scopes) >= self.max_running:
            raise RPCError(
                int(ErrorCode.INTERNAL_ERROR),
                f"Too many tasks working (max_running is {self.max_running}); try again later",
                {"limit": "max_running"},
            )
        self._take_creation_token()
        record = start_task(
            request.record,
            new_task_id(),
            self.clock(),
            form=form,
            ttl_ms=self.granted_ttl(ttl_ms),
            poll_interval_ms=self.poll_interval_ms,
        )
        try:
            await self.store.create(record, owner)
        except TaskLimitExceeded as exc:
            raise RPCError(
                int(ErrorCode.INTERNAL_ERROR),
                f"Too many tasks ({exc.bound} is {exc.limit}); try again later",
                {"limit": exc.bound},
            ) from None
        scope = trio.CancelScope()
        self._scopes[record.task_id] = scope
        nursery.start_soon(
            self._run, record, owner, scope, work(record), name=f"task {record.task_id}"
        )
        return record

    def _take_creation_token(self) -> None:
        """Spend one token of the creation bucket, or refuse (TK-18)."""
        rate = self.creation_rate
        if rate is None:
            return
        now = trio.current_time()
        if self._counted_at is not None:
            self._tokens = min(
                float(self.creation_burst), self._tokens + (now - self._counted_at) * rate
            )
        self._counted_at = now
        if self._tokens < 1:
            wait = (1 - self._tokens) / rate
            raise RPCError(
                int(ErrorCode.INTERNAL_ERROR),
                f"Tasks are created too fast (creation_rate is {rate:g} a second);"
                f" try again in {wait:.3g} s",
                {"limit": "creation_rate", "retryAfter": round(wait, 3)},
            )
        self._tokens -= 1

    async def _run(
        self, record: TaskRecord, owner: Owner, scope: trio.CancelScope, work: Work
    ) -> None:
        task_id = record.task_id
        outcome: WorkEnd | None = None
        try:
            with scope:
                async with trio.open_nursery() as inner:
                    inner.start_soon(self._watch, record, scope)
                    outcome = await self._capture(task_id, work)
                    inner.cancel_scope.cancel()
        finally:
            del self._scopes[task_id]
            with trio.CancelScope(shield=True) as bound:
                bound.deadline = trio.current_time() + FINISH_BOUND
                try:
                    await self._finish(task_id, owner, outcome)
                except TaskStoreError as exc:
                    # Nobody to raise to: the runner and its other tasks go on.
                    logger.error("task %s: its end could not be recorded: %s", task_id, exc)

    @staticmethod
    async def _capture(task_id: str, work: Work) -> WorkEnd:
        """The work's end: its own, or its exception as a JSON-RPC error."""
        try:
            return await work()
        except RPCError as exc:
            return WorkEnd(TaskEvent.FAIL, error=_error_object(exc))
        except Exception:
            logger.exception("task %s failed", task_id)
            error = {"code": int(ErrorCode.INTERNAL_ERROR), "message": "Internal error"}
            return WorkEnd(TaskEvent.FAIL, error=error)

    async def _watch(self, seen: TaskRecord | None, scope: trio.CancelScope) -> None:
        """Cancel the work when the record says to stop: a cancel ask, a
        terminal state someone else wrote, or the record gone (its ttl, a delete).
        Wakes on every write to the task, from any worker sharing the store."""
        assert seen is not None
        task_id = seen.task_id
        while True:
            if seen is None:
                scope.cancel(reason="the task is gone (its ttl elapsed, or it was deleted)")
                return
            if seen.cancel_requested or seen.is_terminal:
                scope.cancel(reason=f"tasks/cancel (the task is {seen.state.value})")
                return
            try:
                seen = await self.store.wait_changed(task_id, seen)
            except TaskStoreError as exc:
                # A store that fails (Redis gone) must not take the server
                # down: the work goes on, and a tasks/cancel served here
                # still stops it through its scope; only other workers' asks
                # are not seen.
                logger.warning("task %s: no longer watching its record: %s", task_id, exc)
                return

    async def _finish(self, task_id: str, owner: Owner, outcome: WorkEnd | None) -> None:
        """The work ended: write its end (or, cancelled, who cancelled it)."""
        if outcome is not None:
            message = outcome.error.get("message") if outcome.error is not None else None

            def end(record: TaskRecord) -> TaskRecord:
                moved = apply_task_event(
                    record,
                    outcome.event,
                    self.clock(),
                    TaskCause.WORK,
                    status_message=message if isinstance(message, str) else None,
                )
                if moved.state is record.state:
                    return moved  # already terminal (cancelled first): the late end is recorded
                return attrs.evolve(
                    moved,
                    input_requests=None,
                    input_responses=None,
                    result=outcome.result,
                    error=outcome.error,
                )

            await self._move(task_id, owner, end)
            return
        stopping = self._stopping

        def cancelled(record: TaskRecord) -> TaskRecord:
            if record.is_terminal:
                return record
            cause = (
                TaskCause.SHUTDOWN
                if stopping and not record.cancel_requested
                else (record.cancel_cause or TaskCause.REQUESTOR)
            )
            message = (
                "The server shut down before the task finished."
                if cause is TaskCause.SHUTDOWN
                else "The task was cancelled by request."
            )
            moved = apply_task_event(
                record, TaskEvent.CANCEL, self.clock(), cause, status_message=message
            )
            return attrs.evolve(moved, input_requests=None, input_responses=None)

        await self._move(task_id, owner, cancelled)

    async def _move(
        self, task_id: str, owner: Owner, change: Callable[[TaskRecord], TaskRecord]
    ) -> TaskRecord | None:
        """Compare-and-set *change* onto the stored record until it sticks; the
        record now stored, or None if the task is gone. A change that returns
        the record unchanged writes nothing."""
        while True:
            record = await self.store.get(task_id, owner)
            if record is None:
                return None
            new = change(record)
            if new == record:
                return record
            try:
                return await self.store.update(task_id, record, new)
            except TaskConflict:
                continue  # someone wrote first: compute again from theirs
            except UnknownTask:
                return None

    # ------------------------------------------------------------- input

    async def await_inputs(self, task_id: str, owner: Owner, pending: JSONObject) -> dict[str, Any]:
        """Extension form: publish *pending* (key -> ``{method, params}``) in the
        record, the task ``INPUT_REQUIRED``, and wait until ``tasks/update``
        has answered every key; the raw answers by key (taken out of the record).

        Cancellation: cancellable while waiting (the task's own scope, at
        ``tasks/cancel``, its ttl or shutdown); the record keeps what it had.
        """

        def ask(record: TaskRecord) -> TaskRecord:
            moved = apply_task_event(record, TaskEvent.NEED_INPUT, self.clock(), TaskCause.WORK)
            asked = {**(record.input_requests or {}), **pending}
            return attrs.evolve(moved, input_requests=asked)

        record = await self._move(task_id, owner, ask)
        while True:
            if record is None or record.is_terminal:
                await trio.sleep_forever()  # the watcher cancels the work
            responses = record.input_responses or {}
            if all(key in responses for key in pending):
                break
            record = await self.store.wait_changed(task_id, record)
        taken = {key: responses[key] for key in pending}

        def take(record: TaskRecord) -> TaskRecord:
            left = {k: v for k, v in (record.input_responses or {}).items() if k not in pending}
            return attrs.evolve(record, input_responses=left or None)

        await self._move(task_id, owner, take)
        return taken

    async def note_input(self, task_id: str, owner: Owner, *, waiting: bool) -> None:
        """2025-11-25 form: the work sent (*waiting*) or got back its input requests:
        ``INPUT_REQUIRED`` then ``WORKING``.

        Cancellation: cancelled before the write, nothing changed.

        Spec: TK-09.
        """
        event = TaskEvent.NEED_INPUT if waiting else TaskEvent.INPUT_RECEIVED
        cause = TaskCause.WORK if waiting else TaskCause.REQUESTOR
        await self._move(task_id, owner, lambda r: apply_task_event(r, event, self.clock(), cause))

    # ----------------------------------------------------- the task methods

    async def get(self, task_id: str, owner: Owner) -> TaskRecord:
        """*owner*'s task *task_id* (``tasks/get``).

        Raises:
            RPCError: -32602 for an unknown, expired or another owner's task (the same
                answer: a task's existence does not leak).

        Cancellation: a read; nothing to undo.

        Spec: TK-17, TK-18.
        """
        record = await self.store.get(task_id, owner)
        if record is None:
            if await self.store.expired(task_id, owner):
                raise _invalid_params(f"Task {task_id!r} has expired")
            raise _invalid_params(f"Task not found: {task_id!r}")
        return record

    async def wait_terminal(self, task_id: str, owner: Owner) -> TaskRecord:
        """Block until the task is terminal; its record (``tasks/result``).

        Raises:
            RPCError: -32602 as :meth:`get`, also when the task goes while waited for.

        Cancellation: cancellable while waiting; nothing changes.

        Spec: TK-12.
        """
        record: TaskRecord | None = await self.get(task_id, owner)
        while record is not None and not record.is_terminal:
            record = await self.store.wait_changed(task_id, record)
        if record is None:
            raise _invalid_params(f"Task {task_id!r} is gone (expired or deleted)")
        return record

    async def cancel(self, task_id: str, owner: Owner, *, form: TaskForm) -> TaskRecord:
        """``tasks/cancel``: record the ask (cause ``REQUESTOR``) and stop the work.

        2025-11-25: the task is ``CANCELLED`` before this returns, and a terminal task
        is -32602. The extension: the ask only (cooperative); a terminal task is
        acknowledged as it is.

        Raises:
            RPCError: -32602 as :meth:`get`; for a terminal task (2025-11-25).

        Cancellation: cancelled before the write, nothing was asked; once the
        ask is written it stands (the work is stopped by its watcher).

        Spec: TK-16.
        """
        record = await self.get(task_id, owner)
        if record.is_terminal:
            if form.cancel_is_immediate:
                raise _invalid_params(
                    f"Task {task_id!r} is already {record.state.value}: it cannot be cancelled"
                )
            return record
        now = self.clock()

        def ask(record: TaskRecord) -> TaskRecord:
            if record.is_terminal:
                return record
            if record.cancel_cause is None:
                record = attrs.evolve(
                    record,
                    cancel_cause=TaskCause.REQUESTOR,
                    cancel_reason="tasks/cancel",
                    cancel_requested_at=now,
                )
            if form.cancel_is_immediate:
                moved = apply_task_event(
                    record,
                    TaskEvent.CANCEL,
                    now,
                    TaskCause.REQUESTOR,
                    status_message="The task was cancelled by request.",
                )
                record = attrs.evolve(moved, input_requests=None, input_responses=None)
            return record

        moved = await self._move(task_id, owner, ask)
        if moved is None:
            raise _invalid_params(f"Task not found: {task_id!r}")
        if form.cancel_is_immediate and moved.state is not TaskState.CANCELLED:
            # It ended on its own between our read and our write: TK-16's
            # "already terminal" after all.
            raise _invalid_params(
                f"Task {task_id!r} is already {moved.state.value}: it cannot be cancelled"
            )
        scope = self._scopes.get(task_id)
        if scope is not None:
            # Ours: stop it now rather than when the watcher next runs.
            scope.cancel(reason="tasks/cancel")
        return moved

    async def update(self, task_id: str, owner: Owner, responses: Mapping[str, Any]) -> None:
        """The extension's ``tasks/update``: answers for some of the task's
        outstanding inputs. An answered key leaves ``input_requests`` at once
        (the next ``tasks/get`` shows only what is missing); once none is
        left the task is ``WORKING`` again. Keys not outstanding are ignored.

        Raises:
            RPCError: -32602 as :meth:`get`.

        Cancellation: cancelled before the write, no answer was recorded.
        """
        await self.get(task_id, owner)
        now = self.clock()

        def give(record: TaskRecord) -> TaskRecord:
            outstanding = record.input_requests or {}
            accepted = {k: v for k, v in responses.items() if k in outstanding}
            if not accepted or record.is_terminal:
                return record
            left = {k: v for k, v in outstanding.items() if k not in accepted}
            record = attrs.evolve(
                record,
                input_requests=left or None,
                input_responses={**(record.input_responses or {}), **accepted},
            )
            if not left:
                record = apply_task_event(
                    record, TaskEvent.INPUT_RECEIVED, now, TaskCause.REQUESTOR
                )
            return record

        await self._move(task_id, owner, give)

    async def list(
        self, owner: Owner, cursor: str | None
    ) -> tuple[Sequence[TaskRecord], str | None]:
        """One page of *owner*'s tasks (``tasks/list``).

        Raises:
            RPCError: -32602 for a cursor the store did not make.

        Cancellation: a read; nothing to undo.

        Spec: TK-15.
        """
        try:
            return await self.store.list(owner, cursor, self.list_page)
        except InvalidCursor:
            raise _invalid_params(f"Invalid cursor {cursor!r}") from None
