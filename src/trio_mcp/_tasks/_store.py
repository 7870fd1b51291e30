"""Task stores: where a server keeps its tasks (TK-07, TK-10, TK-15, TK-17, TK-18).

Theory of operation
-------------------
A task outlives the request that started it and, with several workers behind
one endpoint, the process too: whichever worker serves ``tasks/get``,
``tasks/result`` or ``tasks/cancel`` must see the same record. So the server
keeps its tasks behind the :class:`TaskStore` protocol, as it keeps its SSE
events behind ``EventStore``: :class:`MemoryTaskStore`, bounded and in memory,
is the default; a shared backend (Redis) can follow with the same methods.

The store holds frozen :class:`~trio_mcp.protocol.TaskRecord` snapshots and
never decides a move itself (except the ttl's): a caller reads a record,
computes the next one with :func:`~trio_mcp.protocol.apply_task_event` (or
``attrs.evolve`` for a cancel ask) and writes it back with
:meth:`TaskStore.update`, a compare-and-set on the *whole* record it read. Two
writers that raced both read the same record; the second one gets
:class:`TaskConflict` carrying the record as it is now, re-applies its event
to that and retries. The compare is on the whole snapshot, not only on the
state, because some writes change no state: the extension's cooperative
``tasks/cancel`` only records the ask (``cancel_cause``), and an ignored late
event only appends to ``late_events``; a compare on the state alone would let a
concurrent move by the work (``WORKING`` to ``INPUT_REQUIRED``, computed from
the record before the ask) silently erase the ask. A compare on the whole record
implies the compare on the state.

Owners (TK-18)
--------------
Every task is bound to an *owner*: an opaque hashable naming the
authorization context it was created in (a token's subject, a client id).
Another owner's task is invisible: :meth:`TaskStore.get` answers None, as for
an unknown id, and :meth:`TaskStore.list` never shows it, so a task's
existence does not leak across owners. ``None`` is the anonymous owner: every
request without an authorization context shares it, so the task id is all that
guards an anonymous task; ids are 128 random bits
(:func:`~trio_mcp.protocol.new_task_id`), and the server layer will leave
``tasks/list`` off by default for anonymous requestors (it would list every
anonymous task). The per-owner bound counts all anonymous tasks together.

Expiry (TK-10)
--------------
A record whose ttl has elapsed (:meth:`TaskRecord.expired`) is dropped when it
is next touched and by :meth:`TaskStore.expire_due`; one still running is first
moved ``EXPIRE`` (to ``FAILED``, cause ``TTL``), and that last snapshot is what
``expire_due`` returns, so the layer above stops its work. The memory store
remembers a dropped task's id and owner for ``remember_expired`` seconds (and
at most ``max_remembered`` ids), so :meth:`TaskStore.expired` can tell the
owner "expired" rather than "unknown" (both are -32602, TK-17; only the
message differs). A task removed with :meth:`TaskStore.delete` is simply
unknown afterwards.

Times are wall-clock seconds since the epoch, from the injectable ``clock``
(default :func:`time.time`), as a task's ``createdAt`` is a calendar time and a
shared store compares times written by several processes.
"""

from __future__ import annotations

import base64
import binascii
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Protocol

import attrs
import trio

from ..protocol import TaskRecord
from ..protocol._errors import MCPError
from ..protocol._tasks import expire_task

#: What an owner is: any hashable naming an authorization context; None is anonymous.
Owner = Hashable

#: Default bound on the tasks held in total.
MAX_TASKS = 10_000
#: Default bound on the tasks one owner holds (all anonymous tasks count as one owner).
MAX_TASKS_PER_OWNER = 1_000
#: Default seconds an expired task is remembered as expired rather than unknown.
REMEMBER_EXPIRED = 600.0
#: Default bound on the expired task ids remembered.
MAX_REMEMBERED = 10_000


class TaskStoreError(MCPError):
    """Base of the task store's errors (an :class:`~trio_mcp.MCPError`, as every
    error trio_mcp raises on purpose)."""


class TaskStoreUnavailable(TaskStoreError):
    """The store could not be reached, or answered with an error (the cause is
    attached): Redis, for :class:`~trio_mcp.tasks.RedisTaskStore`. For a
    write, whether it was done is unknown."""


class UnknownTask(TaskStoreError, LookupError):
    """The task is not (or no longer) in the store: never created, deleted, or expired."""

    def __init__(self, task_id: str) -> None:
        super().__init__(f"unknown task {task_id!r}")
        self.task_id = task_id


class TaskConflict(TaskStoreError):
    """A compare-and-set lost: the stored record is not the one the update was computed from.

    ``current`` is the record as stored now; re-apply the event to it and retry.
    """

    def __init__(self, current: TaskRecord) -> None:
        super().__init__(
            f"task {current.task_id!r} changed concurrently (now {current.state.value})"
        )
        self.current = current


class TaskExists(TaskStoreError, ValueError):
    """A task with this id is already held (or was, recently): ids are unique (TK-07)."""


class TaskLimitExceeded(TaskStoreError):
    """A bound on the tasks held was reached (TK-18). ``bound`` names it:
    ``"max_tasks"`` or ``"max_tasks_per_owner"``; ``limit`` is its value."""

    def __init__(self, bound: str, limit: int) -> None:
        super().__init__(f"too many tasks: {bound} is {limit}")
        self.bound = bound
        self.limit = limit


class InvalidCursor(TaskStoreError, ValueError):
    """A ``tasks/list`` cursor this store did not make (the server answers -32602, TK-15, TK-17)."""


_Records = list[TaskRecord]


class TaskStore(Protocol):
    """What the server needs from a task store (see the module docstring).

    Every method is a checkpoint. A store must keep owners apart, keep creation order
    for :meth:`list`, and never hand out a record past its ttl.

    Spec: TK-18.
    """

    async def create(self, record: TaskRecord, owner: Owner) -> None:
        """Hold a new task, bound to *owner*.

        Raises:
            TaskExists: its ``task_id`` is held.
            TaskLimitExceeded: a bound is reached (expired tasks are dropped first).

        Cancellation:
            Cancelled, the task was not created; returned, it was.

        Spec: TK-07.
        """
        ...

    async def get(self, task_id: str, owner: Owner) -> TaskRecord | None:
        """The task's record; None when unknown, expired, or another owner's.

        Cancellation:
            Nothing to undo: a cancelled get changes nothing but may have dropped
            expired records, as any access may.

        Spec: TK-18.
        """
        ...

    async def expired(self, task_id: str, owner: Owner) -> bool:
        """Whether *owner*'s task *task_id* was dropped for its ttl recently (so the
        reply can say "expired" rather than "unknown"; both are -32602).

        Cancellation:
            Nothing to undo.

        Spec: TK-17.
        """
        ...

    async def update(
        self, task_id: str, expected: TaskRecord, new_record: TaskRecord
    ) -> TaskRecord:
        """Compare-and-set: store *new_record* if the stored record is *expected*.

        The caller has looked the task up with its owner (:meth:`get`) and
        computed *new_record* from that record, usually with
        :func:`~trio_mcp.protocol.apply_task_event`. Returns the record now
        stored (*new_record*). Waiters of :meth:`wait_changed` wake.

        Raises:
            TaskConflict: the stored record differs from *expected* (a concurrent
                update won); ``current`` is the stored record.
            UnknownTask: the task is gone (deleted or expired).
            ValueError: *new_record* is for another task id.

        Cancellation:
            Cancelled, nothing was written; returned, the write is done.
        """
        ...

    async def delete(self, task_id: str) -> TaskRecord | None:
        """Remove a task (a receiver may delete a cancelled task at any time); its last
        record, or None if unknown. Waiters wake with None.

        Cancellation:
            Cancelled, nothing was removed; returned, it was.

        Spec: TK-16.
        """
        ...

    async def list(
        self, owner: Owner, cursor: str | None, limit: int
    ) -> tuple[Sequence[TaskRecord], str | None]:
        """One page of *owner*'s tasks, oldest first, and the cursor of the next page
        (None at the end). A task created or dropped between pages neither shifts nor
        repeats the others.

        Raises:
            InvalidCursor: *cursor* was not made by this store's :meth:`list`.
            ValueError: *limit* is not positive.

        Cancellation:
            Nothing to undo.

        Spec: TK-15.
        """
        ...

    async def wait_changed(self, task_id: str, seen: TaskRecord) -> TaskRecord | None:
        """Block until the task's record differs from *seen*; the new record, or None
        once the task is gone (deleted, expired, never held). Returns at once if it
        already differs. What a waiting ``tasks/result`` or a status push uses; the
        caller got *seen* with its owner.

        Cancellation:
            Cancellable at any point while waiting; the store is unchanged.

        Spec: TK-12, TK-14.
        """
        ...

    async def expire_due(self, now: float | None = None) -> Sequence[TaskRecord]:
        """Drop every task whose ttl has elapsed at *now* (default: the store's clock),
        oldest first (expired tasks are cleaned up). One still running is moved
        ``EXPIRE`` (to ``FAILED``) first; the returned records are the last snapshots,
        for the layer above to stop their work.

        Cancellation:
            Cancelled, nothing was dropped; returned, all of them were.

        Spec: TK-10, TK-18.
        """
        ...


@attrs.define(slots=True)
class _Held:
    record: TaskRecord
    owner: Owner
    #: Creation sequence: the list order and what a cursor points after.
    seq: int


_CURSOR_PREFIX = "tasks:"


def _encode_cursor(seq: int) -> str:
    return base64.urlsafe_b64encode(f"{_CURSOR_PREFIX}{seq}".encode()).decode("ascii")


def _decode_cursor(cursor: str) -> int:
    try:
        text = base64.b64decode(cursor.encode("ascii"), altchars=b"-_", validate=True).decode(
            "ascii"
        )
    except (ValueError, UnicodeError, binascii.Error):
        raise InvalidCursor(f"invalid cursor {cursor!r}") from None
    prefix, _, number = text.partition(":")
    if f"{prefix}:" != _CURSOR_PREFIX or not number.isascii() or not number.isdigit():
        raise InvalidCursor(f"invalid cursor {cursor!r}")
    return int(number)


class MemoryTaskStore:
    """A bounded in-memory :class:`TaskStore`: the default, for one process.

    Args:
        clock: seconds since the epoch (default :func:`time.time`); injectable
            so that tests are exact.
        max_tasks: tasks held in total (default 10 000); beyond it
            :meth:`create` raises :class:`TaskLimitExceeded`.
        max_tasks_per_owner: tasks one owner holds (default 1 000; all
            anonymous tasks share one owner, None).
        remember_expired: seconds an expired task's id is remembered, so
            :meth:`expired` can answer (default 600; 0: not remembered).
        max_remembered: expired ids remembered at most, oldest forgotten first
            (default 10 000).

    Terminal tasks count against the bounds until their ttl drops them (or they are
    deleted): the server caps the ttl. Memory: a record is a few hundred bytes plus its
    moves; with the defaults, 10 000 of them.

    Waiting (:meth:`wait_changed`) uses Trio: a waiter parks on an event that
    every write to its task sets, and, for a task with a ttl, also sleeps on
    Trio's clock until its expiry is due by the store's clock.

    Spec: TK-18.
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.time,
        max_tasks: int = MAX_TASKS,
        max_tasks_per_owner: int = MAX_TASKS_PER_OWNER,
        remember_expired: float = REMEMBER_EXPIRED,
        max_remembered: int = MAX_REMEMBERED,
    ) -> None:
        if max_tasks < 1 or max_tasks_per_owner < 1:
            raise ValueError("max_tasks and max_tasks_per_owner must be at least 1")
        self.clock = clock
        self.max_tasks = max_tasks
        self.max_tasks_per_owner = max_tasks_per_owner
        self.remember_expired = remember_expired
        self.max_remembered = max_remembered
        # Insertion order is creation order: expire_due and list walk it.
        self._held: dict[str, _Held] = {}
        self._per_owner: dict[Owner, int] = {}
        self._next_seq = 1
        #: Expired task id -> (owner, when it was dropped), oldest first.
        self._expired: OrderedDict[str, tuple[Owner, float]] = OrderedDict()
        #: Task id -> the event its current waiters park on; set (and replaced) by every write.
        self._changed: dict[str, trio.Event] = {}

    # -- bookkeeping (synchronous; every public method is a checkpoint around it)

    def _wake(self, task_id: str) -> None:
        event = self._changed.pop(task_id, None)
        if event is not None:
            event.set()

    def _drop(self, task_id: str) -> _Held:
        held = self._held.pop(task_id)
        left = self._per_owner[held.owner] - 1
        if left:
            self._per_owner[held.owner] = left
        else:
            del self._per_owner[held.owner]
        self._wake(task_id)
        return held

    def _expire(self, held: _Held, now: float) -> TaskRecord:
        """Drop *held* for its ttl; its last snapshot (moved EXPIRE if running)."""
        record = expire_task(held.record, now)
        self._drop(record.task_id)
        if self.remember_expired > 0 and self.max_remembered > 0:
            self._expired[record.task_id] = (held.owner, now)
            while len(self._expired) > self.max_remembered:
                self._expired.popitem(last=False)
        return record

    def _prune_remembered(self, now: float) -> None:
        cutoff = now - self.remember_expired
        while self._expired:
            _, dropped_at = next(iter(self._expired.values()))
            if dropped_at > cutoff:
                break
            self._expired.popitem(last=False)

    def _live(self, task_id: str, now: float) -> _Held | None:
        """The held task, dropping it first if its ttl has elapsed."""
        held = self._held.get(task_id)
        if held is not None and held.record.expired(now):
            self._expire(held, now)
            return None
        return held

    def _expire_all(self, now: float) -> _Records:
        due = [held for held in self._held.values() if held.record.expired(now)]
        return [self._expire(held, now) for held in due]

    # -- the TaskStore methods

    async def create(self, record: TaskRecord, owner: Owner) -> None:
        await trio.lowlevel.checkpoint_if_cancelled()
        now = self.clock()
        self._prune_remembered(now)
        task_id = record.task_id
        if self._live(task_id, now) is not None or task_id in self._expired:
            raise TaskExists(f"task id {task_id!r} is already in use")
        if len(self._held) >= self.max_tasks or self._per_owner.get(owner, 0) >= (
            self.max_tasks_per_owner
        ):
            # Expired tasks do not count against the bounds.
            self._expire_all(now)
        if len(self._held) >= self.max_tasks:
            raise TaskLimitExceeded("max_tasks", self.max_tasks)
        if self._per_owner.get(owner, 0) >= self.max_tasks_per_owner:
            raise TaskLimitExceeded("max_tasks_per_owner", self.max_tasks_per_owner)
        self._held[task_id] = _Held(record=record, owner=owner, seq=self._next_seq)
        self._next_seq += 1
        self._per_owner[owner] = self._per_owner.get(owner, 0) + 1
        await trio.lowlevel.cancel_shielded_checkpoint()

    async def get(self, task_id: str, owner: Owner) -> TaskRecord | None:
        await trio.lowlevel.checkpoint()
        held = self._live(task_id, self.clock())
        if held is None or held.owner != owner:
            return None
        return held.record

    async def expired(self, task_id: str, owner: Owner) -> bool:
        await trio.lowlevel.checkpoint()
        now = self.clock()
        self._live(task_id, now)  # a task due now counts as expired
        self._prune_remembered(now)
        remembered = self._expired.get(task_id)
        return remembered is not None and remembered[0] == owner

    async def update(
        self, task_id: str, expected: TaskRecord, new_record: TaskRecord
    ) -> TaskRecord:
        await trio.lowlevel.checkpoint_if_cancelled()
        if new_record.task_id != task_id or expected.task_id != task_id:
            raise ValueError(f"an update of task {task_id!r} must carry its records")
        held = self._live(task_id, self.clock())
        if held is None:
            raise UnknownTask(task_id)
        if held.record is not expected and held.record != expected:
            raise TaskConflict(held.record)
        held.record = new_record
        if new_record != expected:
            self._wake(task_id)
        await trio.lowlevel.cancel_shielded_checkpoint()
        return new_record

    async def delete(self, task_id: str) -> TaskRecord | None:
        await trio.lowlevel.checkpoint_if_cancelled()
        held = self._held.get(task_id)
        if held is not None:
            self._drop(task_id)
        await trio.lowlevel.cancel_shielded_checkpoint()
        return None if held is None else held.record

    async def list(
        self, owner: Owner, cursor: str | None, limit: int
    ) -> tuple[Sequence[TaskRecord], str | None]:
        await trio.lowlevel.checkpoint()
        if limit < 1:
            raise ValueError("limit must be at least 1")
        after = 0
        if cursor is not None:
            after = _decode_cursor(cursor)
            # Only a position this store handed out: past 0, not past the newest task.
            if after < 1 or after >= self._next_seq:
                raise InvalidCursor(f"invalid cursor {cursor!r}")
        self._expire_all(self.clock())
        page: list[_Held] = []
        more = False
        for held in self._held.values():
            if held.owner != owner or held.seq <= after:
                continue
            if len(page) == limit:
                more = True
                break
            page.append(held)
        next_cursor = _encode_cursor(page[-1].seq) if more else None
        return [held.record for held in page], next_cursor

    async def wait_changed(self, task_id: str, seen: TaskRecord) -> TaskRecord | None:
        await trio.lowlevel.checkpoint()
        while True:
            now = self.clock()
            held = self._live(task_id, now)
            if held is None:
                return None
            if held.record != seen:
                return held.record
            event = self._changed.get(task_id)
            if event is None:
                event = self._changed[task_id] = trio.Event()
            expires_at = held.record.expires_at
            # A write sets the event; the ttl needs no write, so sleep until it
            # is due (on Trio's clock, for the store's clock's remaining time),
            # then look again: the loop wakes once per deadline, never polls.
            timeout = float("inf") if expires_at is None else max(0.0, expires_at - now)
            with trio.move_on_after(timeout):
                await event.wait()

    async def expire_due(self, now: float | None = None) -> Sequence[TaskRecord]:
        await trio.lowlevel.checkpoint_if_cancelled()
        when = self.clock() if now is None else now
        dropped = self._expire_all(when)
        self._prune_remembered(when)
        await trio.lowlevel.cancel_shielded_checkpoint()
        return dropped

    def __len__(self) -> int:
        """Tasks held (expired ones not yet dropped included)."""
        return len(self._held)
