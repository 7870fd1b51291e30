"""The task state machine, one table for both wire forms (TK-08).

Theory of operation
-------------------
A task is a request whose record lives past its response. Both wire forms of
tasks (the 2025-11-25 utility, ``basic/utilities/tasks``, and the 2026-07-28
extension ``io.modelcontextprotocol/tasks``, TK-19) walk this table::

    WORKING        --need_input-->     INPUT_REQUIRED
    INPUT_REQUIRED --input_received--> WORKING
    WORKING | INPUT_REQUIRED --complete--> COMPLETED
    WORKING | INPUT_REQUIRED --fail-->     FAILED
    WORKING | INPUT_REQUIRED --cancel-->   CANCELLED
    WORKING | INPUT_REQUIRED --expire-->   FAILED      (its ttl elapsed)

A task starts ``WORKING``; ``COMPLETED``, ``FAILED`` and ``CANCELLED`` never change
(TK-08). As in the request table (``_requests.py``), an event with no cell, such
as work that finishes after ``tasks/cancel`` put its task in ``CANCELLED``
(TK-16), is *ignored and recorded* in ``late_events``, never an error. So is a
second ``need_input`` while input is already awaited: whoever asks for input
counts the requests it has outstanding, the task only says that it waits.

The request continued, not a second bookkeeping
-----------------------------------------------
A task-augmented request is an ordinary request in the request table. The
receiver creates the task while the request is ``RUNNING`` (the extension
requires the task to exist before its ``CreateTaskResult`` is sent), then the
request ``COMPLETES``: its result *is* the ``CreateTaskResult`` (TK-11). For the
requestor the outbound request has ``COMPLETED`` with that result when the task
becomes known. The request's record ends there, like any other; the
:class:`TaskRecord` starts there, naming the request it continues (its id,
method and direction) and carrying no copy of its states. Everything after
the hand-off (the work running on, asking for input, ending) is a move of the
task. In consequence a ``notifications/cancelled`` for the request's id after
the hand-off is a late event on the *request's* record (CN-06) and never
touches the task; a task is cancelled with ``tasks/cancel`` only (A-19).

Who moved it
------------
Every move keeps its time and its :class:`TaskCause`: the task's own work, the
requestor (``tasks/cancel``, an answer to an input request), its ttl, the
receiver's shutdown, or, on the requestor's side, the receiver's report of the
status. A lost transport is not a cause: a task outlives its connection.
"Cancel requested" is kept apart from "cancelled", as on a request: the
2025-11-25 ``tasks/cancel`` must leave the task ``CANCELLED`` before its reply
(TK-16): :meth:`TaskBook.request_cancel` then :meth:`TaskBook.apply` ``CANCEL``,
while the extension's is cooperative (only the ask is recorded and acknowledged;
the task ends when the work stops, possibly ``COMPLETED`` if it won the race).

Times are wall-clock seconds since the epoch, not the session's clock: a task's
``createdAt``/``lastUpdatedAt`` are calendar times (TK-10), its ttl outlives the
session, and a store shared by several workers compares them.

Nothing here does I/O or imports trio.
"""

from __future__ import annotations

import datetime
import secrets
from collections.abc import Callable

import attrs

from ._enum import _FastEnum
from ._messages import JSONObject, RequestId
from ._requests import Direction, RequestRecord, RequestState


class TaskState(_FastEnum):
    """Where a task is in its life.

    The values are the wire ``status`` strings, the same in both forms
    (2025-11-25's ``TaskStatus`` and the extension's ``Task.status``).

    Spec: TK-08.
    """

    #: The request is being processed. Every task starts here.
    WORKING = "working"
    #: The receiver waits for input from the requestor.
    #:
    #: Spec: TK-09.
    INPUT_REQUIRED = "input_required"
    #: Ended with a result.
    COMPLETED = "completed"
    #: Ended with a JSON-RPC error (or, in 2025-11-25, a tool result with
    #: ``isError``: see :meth:`TaskForm.tool_result_event`), or its ttl elapsed.
    FAILED = "failed"
    #: Ended because it was cancelled; ``cancel_cause`` says who asked.
    CANCELLED = "cancelled"

    @property
    def is_terminal(self) -> bool:
        return self in _TERMINAL


_TERMINAL = frozenset({TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELLED})


class TaskEvent(_FastEnum):
    """What can happen to a task."""

    #: The work needs the requestor's input (an elicitation or a sampling request
    #: related to the task).
    #:
    #: Spec: TK-09.
    NEED_INPUT = "need_input"
    #: The input it waited for has arrived; the work goes on.
    #:
    #: Spec: TK-09.
    INPUT_RECEIVED = "input_received"
    #: The work returned its result.
    COMPLETE = "complete"
    #: The work ended with an error.
    FAIL = "fail"
    #: The task was cancelled (``tasks/cancel``, the receiver's shutdown).
    CANCEL = "cancel"
    #: Its ttl elapsed while it was not finished (the extension lets the server mark it
    #: failed then; either form may delete it).
    #:
    #: Spec: TK-10.
    EXPIRE = "expire"


#: The whole state machine (TK-08). A (state, event) pair that is missing is
#: ignored and recorded as a late event.
TASK_TRANSITIONS: dict[TaskState, dict[TaskEvent, TaskState]] = {
    TaskState.WORKING: {
        TaskEvent.NEED_INPUT: TaskState.INPUT_REQUIRED,
        TaskEvent.COMPLETE: TaskState.COMPLETED,
        TaskEvent.FAIL: TaskState.FAILED,
        TaskEvent.CANCEL: TaskState.CANCELLED,
        TaskEvent.EXPIRE: TaskState.FAILED,
    },
    TaskState.INPUT_REQUIRED: {
        TaskEvent.INPUT_RECEIVED: TaskState.WORKING,
        TaskEvent.COMPLETE: TaskState.COMPLETED,
        TaskEvent.FAIL: TaskState.FAILED,
        TaskEvent.CANCEL: TaskState.CANCELLED,
        TaskEvent.EXPIRE: TaskState.FAILED,
    },
    TaskState.COMPLETED: {},
    TaskState.FAILED: {},
    TaskState.CANCELLED: {},
}

#: The event that brings a task into each state, for the requestor's mirror of
#: a status the receiver reported (:meth:`TaskBook.observe`).
_EVENT_TO_REACH: dict[TaskState, TaskEvent] = {
    TaskState.WORKING: TaskEvent.INPUT_RECEIVED,
    TaskState.INPUT_REQUIRED: TaskEvent.NEED_INPUT,
    TaskState.COMPLETED: TaskEvent.COMPLETE,
    TaskState.FAILED: TaskEvent.FAIL,
    TaskState.CANCELLED: TaskEvent.CANCEL,
}


class TaskCause(_FastEnum):
    """Who or what moved a task, or asked for it to be cancelled."""

    #: The task's own work: its handler returned, raised, or asked for input.
    WORK = "work"
    #: The requestor: ``tasks/cancel``, or its answer to an input request.
    REQUESTOR = "requestor"
    #: Its ttl elapsed.
    TTL = "ttl"
    #: The receiver was shutting down with the task unfinished.
    SHUTDOWN = "shutdown"
    #: Requestor side: the receiver reported this status (``tasks/get``,
    #: ``tasks/result``, a status notification).
    REPORTED = "reported"


class TaskForm(_FastEnum):
    """Which of the two wire forms a task speaks.

    Spec: TK-19.
    """

    #: The 2025-11-25 utility (``basic/utilities/tasks``, handshake era).
    V2025_11_25 = "2025-11-25"
    #: The 2026-07-28 extension ``io.modelcontextprotocol/tasks``.
    EXTENSION = "io.modelcontextprotocol/tasks"

    @property
    def ttl_field(self) -> str:
        """The wire name of the ttl: ``ttl`` (2025-11-25) or ``ttlMs``."""
        return "ttl" if self is TaskForm.V2025_11_25 else "ttlMs"

    @property
    def poll_interval_field(self) -> str:
        """The wire name of the poll interval: ``pollInterval`` or ``pollIntervalMs``."""
        return "pollInterval" if self is TaskForm.V2025_11_25 else "pollIntervalMs"

    @property
    def cancel_is_immediate(self) -> bool:
        """Whether ``tasks/cancel`` must leave the task ``CANCELLED`` before it is
        answered: yes in 2025-11-25; the extension's is cooperative.

        Spec: TK-16.
        """
        return self is TaskForm.V2025_11_25

    def tool_result_event(self, *, is_error: bool) -> TaskEvent:
        """The event a ``tools/call`` result ends its task with.

        A result with ``isError: true`` fails the task in 2025-11-25 but completes it,
        result inline, in the extension.

        Spec: TK-17, TK-19.
        """
        if is_error and self is TaskForm.V2025_11_25:
            return TaskEvent.FAIL
        return TaskEvent.COMPLETE


@attrs.frozen(slots=True)
class TaskMove:
    """One move of a task through :data:`TASK_TRANSITIONS`."""

    #: What happened (the row of :data:`TASK_TRANSITIONS` that was taken).
    event: TaskEvent
    #: The state before the move.
    old: TaskState
    #: The state after it.
    new: TaskState
    #: When, in seconds since the epoch.
    at: float
    #: Who or what made the move.
    cause: TaskCause
    #: Why, in words (for logs; not sent).
    note: str | None = None


@attrs.frozen(slots=True)
class TaskRecord:
    """A frozen snapshot of one task. Made by :class:`TaskBook`, not directly.

    ``request_id``, ``method`` and ``direction`` name the request the task
    continues (its record ended ``COMPLETED`` with the ``CreateTaskResult``);
    ``direction`` is that request's: ``INBOUND``, we are the receiver and run
    the task; ``OUTBOUND``, we are the requestor and mirror the peer's.
    """

    #: The task's id, as on the wire.
    task_id: str
    #: The id of the request the task continues.
    request_id: RequestId
    #: That request's method, such as ``tools/call``.
    method: str
    #: That request's direction: INBOUND, we run the task; OUTBOUND, we mirror
    #: the peer's.
    direction: Direction
    #: Which wire form it speaks (2025-11-25 tasks, or the extension's).
    form: TaskForm
    #: Where it is in the task state machine at the time of the snapshot.
    state: TaskState
    #: When it was created, in seconds since the epoch.
    created_at: float
    #: When the status last changed (the creation, then each move).
    last_updated_at: float
    #: Milliseconds from creation it is kept; None: unlimited.
    #:
    #: Spec: TK-10.
    ttl_ms: int | None
    #: Suggested milliseconds between polls, if any.
    #:
    #: Spec: TK-10.
    poll_interval_ms: int | None = None
    #: The wire ``statusMessage`` of the current state, if any.
    status_message: str | None = None
    #: Every move so far, oldest first.
    moves: tuple[TaskMove, ...] = ()
    #: Who asked for cancellation first, set even if the work then ended otherwise.
    cancel_cause: TaskCause | None = None
    #: The reason given with that ask, if any.
    cancel_reason: str | None = None
    #: When cancellation was first asked for, in seconds since the epoch.
    cancel_requested_at: float | None = None
    #: Events that arrived when no move was allowed, ignored (never errors).
    late_events: tuple[str, ...] = ()
    #: Once terminal, what the request would have returned: its JSON ``result`` (a tool
    #: result with ``isError`` too), or ``error``, a JSON-RPC error object (``code``,
    #: ``message``, ``data``). At most one is set.
    #:
    #: Spec: TK-12.
    result: JSONObject | None = None
    #: See ``result``: the JSON-RPC error object, once it failed.
    error: JSONObject | None = None
    #: While ``INPUT_REQUIRED``: the inputs the work waits for, by key
    #: (``{"method": ..., "params": ...}``, as an ``InputRequiredResult`` has them).
    input_requests: JSONObject | None = None
    #: Answers the requestor sent for them (``tasks/update``), by key, until the
    #: work takes them.
    input_responses: JSONObject | None = None

    @property
    def is_terminal(self) -> bool:
        return self.state.is_terminal

    @property
    def cancel_requested(self) -> bool:
        """True once anyone asked for cancellation, whatever the state says."""
        return self.cancel_cause is not None

    @property
    def finished_at(self) -> float | None:
        """When it reached its terminal state, once terminal."""
        return self.moves[-1].at if self.state.is_terminal and self.moves else None

    @property
    def expires_at(self) -> float | None:
        """When its ttl elapses (seconds since the epoch); None: never."""
        if self.ttl_ms is None:
            return None
        return self.created_at + self.ttl_ms / 1000

    def expired(self, now: float) -> bool:
        """Whether its ttl has elapsed at *now*."""
        expires_at = self.expires_at
        return expires_at is not None and now >= expires_at

    def wire_fields(self) -> JSONObject:
        """The wire ``Task`` fields of its form: ``taskId``, ``status``,
        ``statusMessage`` if any, ``createdAt``, ``lastUpdatedAt`` (ISO 8601), the ttl
        (``null``: unlimited) and the poll interval if any.

        The fields each message adds (2025-11-25's ``CreateTaskResult.task``
        wrapper, the extension's ``resultType`` and inline ``result``/``error``)
        are the caller's.

        Spec: TK-10.
        """
        fields: JSONObject = {"taskId": self.task_id, "status": self.state.value}
        if self.status_message is not None:
            fields["statusMessage"] = self.status_message
        fields["createdAt"] = iso8601(self.created_at)
        fields["lastUpdatedAt"] = iso8601(self.last_updated_at)
        fields[self.form.ttl_field] = self.ttl_ms
        if self.poll_interval_ms is not None:
            fields[self.form.poll_interval_field] = self.poll_interval_ms
        return fields


def start_task(
    request: RequestRecord,
    task_id: str,
    now: float,
    *,
    form: TaskForm,
    ttl_ms: int | None,
    poll_interval_ms: int | None = None,
    status_message: str | None = None,
) -> TaskRecord:
    """A new task's record, ``WORKING``, continuing *request*; pure.

    An inbound *request* (we are the receiver) must be ``RUNNING``: the task
    exists before its ``CreateTaskResult`` is sent, then the request completes
    with it. An outbound one (we are the requestor) must have ``COMPLETED``:
    its result was the ``CreateTaskResult``. Anything else is a ValueError.

    Spec: TK-08.
    """
    inbound = request.direction is Direction.INBOUND
    wanted = RequestState.RUNNING if inbound else RequestState.COMPLETED
    if request.state is not wanted:
        raise ValueError(
            f"a task continues an {request.direction.value} request that is"
            f" {wanted.value}, not {request.state.value}"
        )
    return TaskRecord(
        task_id=task_id,
        request_id=request.id,
        method=request.method,
        direction=request.direction,
        form=form,
        state=TaskState.WORKING,
        created_at=now,
        last_updated_at=now,
        ttl_ms=ttl_ms,
        poll_interval_ms=poll_interval_ms,
        status_message=status_message,
    )


def iso8601(seconds: float) -> str:
    """*seconds* since the epoch as an RFC 3339 UTC timestamp: ``2025-11-25T10:30:00Z``,
    with milliseconds when it has a fraction.

    Spec: TK-10.
    """
    moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    spec = "milliseconds" if moment.microsecond else "seconds"
    return moment.isoformat(timespec=spec).replace("+00:00", "Z")


def parse_iso8601(text: object) -> float | None:
    """An RFC 3339 timestamp (``createdAt``, ``lastUpdatedAt``) as seconds since
    the epoch, the inverse of :func:`iso8601`; None for anything unreadable (a
    peer's bad timestamp is not worth failing a poll over). A time without a
    zone is read as UTC."""
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


@attrs.frozen(slots=True)
class TaskReport:
    """What a receiver said about one of our tasks, in either form (its
    ``CreateTaskResult``, a ``tasks/get`` result, a status notification): the
    requestor's input to :meth:`TaskBook.adopt` and :meth:`TaskBook.receive`.

    Times are seconds since the epoch, None when not given or unreadable;
    ``result``, ``error`` and ``input_requests`` are what the report carried
    inline (the extension's ``DetailedTask``), JSON as on the wire.
    """

    #: The task's id.
    task_id: str
    #: The status the receiver reported.
    state: TaskState
    #: Milliseconds from creation the receiver keeps it; None: unlimited.
    ttl_ms: int | None
    #: When the receiver created it.
    created_at: float | None = None
    #: When its status last changed, as the receiver says.
    last_updated_at: float | None = None
    #: The receiver's suggested milliseconds between polls, if given.
    poll_interval_ms: int | None = None
    #: The receiver's ``statusMessage``, if given.
    status_message: str | None = None
    #: The task's JSON result, when the report carried it inline.
    result: JSONObject | None = None
    #: The JSON-RPC error object it failed with, when carried inline.
    error: JSONObject | None = None
    #: The inputs the task waits for, by key, when carried inline.
    input_requests: JSONObject | None = None


def new_task_id() -> str:
    """A fresh task id: 128 random bits as 32 hex digits, unguessable (without an
    authorization context the id is all that guards a task).

    Spec: TK-07, TK-18.
    """
    return secrets.token_hex(16)


def apply_task_event(
    record: TaskRecord,
    event: TaskEvent,
    now: float,
    cause: TaskCause,
    *,
    note: str | None = None,
    status_message: str | None = None,
) -> TaskRecord:
    """The record after *event*, by :data:`TASK_TRANSITIONS`; pure.

    A move stamps ``last_updated_at`` and sets ``status_message`` (None clears
    the previous state's). An event with no cell returns the record unchanged
    but for a new entry in ``late_events``. Compare ``state`` (or the length of
    ``moves``) to tell which happened.
    """
    old = record.state
    new = TASK_TRANSITIONS[old].get(event)
    if new is None:
        late = f"{event.value} by {cause.value} in {old.value}" + (f": {note}" if note else "")
        return attrs.evolve(record, late_events=(*record.late_events, late))
    move = TaskMove(event=event, old=old, new=new, at=now, cause=cause, note=note)
    return attrs.evolve(
        record,
        state=new,
        last_updated_at=now,
        status_message=status_message,
        moves=(*record.moves, move),
    )


def expire_task(record: TaskRecord, now: float) -> TaskRecord:
    """The last snapshot of a task dropped for its ttl (TK-10): one still
    running is moved ``EXPIRE`` (cause ``TTL``) to ``FAILED``; a terminal one
    is returned as it is. Pure."""
    if record.state.is_terminal:
        return record
    return apply_task_event(
        record,
        TaskEvent.EXPIRE,
        now,
        TaskCause.TTL,
        note="ttl elapsed",
        status_message="The task's ttl elapsed before it finished.",
    )


class TaskBook:
    """The task records of one side, keyed by task id. Pure; not thread-safe.

    Args:
        clock: seconds since the epoch (wall time; see the module docstring).

    No method blocks, so none is a cancellation point. Unknown task ids raise
    :class:`KeyError`: the layer above looks a task up first and answers an unknown one
    with -32602.

    Spec: TK-17.
    """

    __slots__ = ("_tasks", "clock")

    def __init__(self, *, clock: Callable[[], float]) -> None:
        self.clock = clock
        # Creation order is kept, so tasks() and expire_due() are deterministic.
        self._tasks: dict[str, TaskRecord] = {}

    def create(
        self,
        request: RequestRecord,
        task_id: str,
        *,
        form: TaskForm,
        ttl_ms: int | None,
        poll_interval_ms: int | None = None,
        status_message: str | None = None,
        created_at: float | None = None,
    ) -> TaskRecord:
        """Start a task, ``WORKING``, continuing *request*.

        An inbound *request* (we are the receiver) must be ``RUNNING``: the task exists
        before its ``CreateTaskResult`` is sent, then the request completes with it. An
        outbound one (we are the requestor) must have ``COMPLETED``: its result was the
        ``CreateTaskResult``. Anything else, or a *task_id* already in the book, is a
        ValueError. *created_at* (default: now) is the receiver's, for a requestor's
        mirror.

        Spec: TK-08, TK-07.
        """
        if task_id in self._tasks:
            raise ValueError(f"task id {task_id!r} is already in use")
        record = start_task(
            request,
            task_id,
            self.clock() if created_at is None else created_at,
            form=form,
            ttl_ms=ttl_ms,
            poll_interval_ms=poll_interval_ms,
            status_message=status_message,
        )
        self._tasks[task_id] = record
        return record

    def get(self, task_id: str) -> TaskRecord | None:
        """The task's record, or None if unknown (or forgotten, or expired)."""
        return self._tasks.get(task_id)

    def tasks(self) -> list[TaskRecord]:
        """Every task in the book, oldest first."""
        return list(self._tasks.values())

    def apply(
        self,
        task_id: str,
        event: TaskEvent,
        cause: TaskCause,
        *,
        note: str | None = None,
        status_message: str | None = None,
    ) -> TaskRecord:
        """Apply *event* now (:func:`apply_task_event`); the new record."""
        record = apply_task_event(
            self._tasks[task_id],
            event,
            self.clock(),
            cause,
            note=note,
            status_message=status_message,
        )
        self._tasks[task_id] = record
        return record

    def request_cancel(
        self, task_id: str, cause: TaskCause, reason: str | None = None
    ) -> TaskRecord:
        """Note who asked to cancel; the first asker wins. No move.

        A terminal task keeps its state and records the ask as a late event:
        ``tasks/cancel`` on it is answered -32602, and the returned record's
        ``is_terminal`` says so. A 2025-11-25 ``tasks/cancel`` then applies ``CANCEL``
        before it replies (:attr:`TaskForm.cancel_is_immediate`).

        Spec: TK-16.
        """
        record = self._tasks[task_id]
        if record.state.is_terminal:
            late = f"cancel asked by {cause.value} in {record.state.value}"
            record = attrs.evolve(record, late_events=(*record.late_events, late))
        elif record.cancel_cause is None:
            record = attrs.evolve(
                record,
                cancel_cause=cause,
                cancel_reason=reason,
                cancel_requested_at=self.clock(),
            )
        self._tasks[task_id] = record
        return record

    def observe(
        self, task_id: str, status: TaskState, *, status_message: str | None = None
    ) -> TaskRecord:
        """Requestor side: the receiver reported *status*; mirror it (cause
        ``REPORTED``). The same non-terminal status again is no move (a repeat
        poll); a report the table does not allow (a terminal task reported as
        another status) is recorded as a late event."""
        record = self._tasks[task_id]
        if status is record.state and not status.is_terminal:
            return record
        return self.apply(
            task_id, _EVENT_TO_REACH[status], TaskCause.REPORTED, status_message=status_message
        )

    def adopt(self, request: RequestRecord, report: TaskReport, *, form: TaskForm) -> TaskRecord:
        """Requestor side: *request* (``COMPLETED``) was answered with a task; start its
        mirror from the receiver's *report* (its id, creation time, ttl and poll
        interval), then :meth:`receive` the report's status.

        Raises:
            ValueError: as :meth:`create`.

        Spec: TK-11.
        """
        self.create(
            request,
            report.task_id,
            form=form,
            ttl_ms=report.ttl_ms,
            poll_interval_ms=report.poll_interval_ms,
            status_message=report.status_message,
            created_at=report.created_at,
        )
        return self.receive(report)

    def receive(self, report: TaskReport) -> TaskRecord:
        """Requestor side: mirror a receiver's *report* on a task of the book: its
        status as :meth:`observe` does (a terminal task reported otherwise is a late
        event and changes nothing else; reported the same, nothing at all), then what
        the report carries: the ttl and poll interval it now gives (both MAY change),
        its ``lastUpdatedAt``, and ``result``, ``error`` and ``input_requests`` as
        reported.

        Raises:
            KeyError: the task is not in the book.

        Spec: TK-10.
        """
        before = self._tasks[report.task_id]
        if before.state.is_terminal:
            if report.state is before.state:
                return before  # a poll repeating the end: nothing new
            # Final (TK-08): recorded as a late event, nothing else changes.
            return self.observe(report.task_id, report.state)
        record = self.observe(report.task_id, report.state, status_message=report.status_message)
        record = attrs.evolve(
            record,
            ttl_ms=report.ttl_ms,
            poll_interval_ms=report.poll_interval_ms,
            status_message=report.status_message,
            last_updated_at=(
                record.last_updated_at if report.last_updated_at is None else report.last_updated_at
            ),
            result=report.result,
            error=report.error,
            input_requests=report.input_requests,
        )
        self._tasks[report.task_id] = record
        return record

    def expire_due(self) -> list[TaskRecord]:
        """Take out every task whose ttl has elapsed, oldest first.

        One still running is moved ``EXPIRE`` (cause ``TTL``) first, to
        ``FAILED``; the layer above stops its work. The returned records are
        their last snapshots; the book forgets them.

        Spec: TK-10.
        """
        now = self.clock()
        due = [record for record in self._tasks.values() if record.expired(now)]
        out: list[TaskRecord] = []
        for record in due:
            del self._tasks[record.task_id]
            out.append(expire_task(record, now))
        return out

    def forget(self, task_id: str) -> TaskRecord | None:
        """Drop a task (a receiver may delete a cancelled task at any time); its last
        record, or None if it was unknown.

        Spec: TK-16.
        """
        return self._tasks.pop(task_id, None)
