"""The task state machine as a table: every (state, event) pair, and how a task
continues a request's record.

``TaskBook`` is driven the way the layer above will drive it, on a hand-moved
wall clock, so every cell of ``TASK_TRANSITIONS`` (and every missing cell, i.e.
every late event) is a row. No trio.
"""

from __future__ import annotations

import itertools
import typing

import attrs
import pytest

from trio_mcp.protocol import (
    TASK_TRANSITIONS,
    CancelOrigin,
    Direction,
    RequestEvent,
    RequestState,
    TaskBook,
    TaskCause,
    TaskEvent,
    TaskForm,
    TaskMove,
    TaskRecord,
    TaskReport,
    TaskState,
    apply_task_event,
    iso8601,
    new_task_id,
    parse_iso8601,
)
from trio_mcp.protocol._requests import RequestEntry
from trio_mcp.types.tasks import TaskStatus

W, IR, C, F, X = (
    TaskState.WORKING,
    TaskState.INPUT_REQUIRED,
    TaskState.COMPLETED,
    TaskState.FAILED,
    TaskState.CANCELLED,
)
NEED, GOT, COMPLETE, FAIL, CANCEL, EXPIRE = (
    TaskEvent.NEED_INPUT,
    TaskEvent.INPUT_RECEIVED,
    TaskEvent.COMPLETE,
    TaskEvent.FAIL,
    TaskEvent.CANCEL,
    TaskEvent.EXPIRE,
)

#: The whole machine, written out by hand from TK-08: (state, event) -> new
#: state, or None when the event is ignored and recorded.
EXPECTED: dict[tuple[TaskState, TaskEvent], TaskState | None] = {
    (W, NEED): IR,
    (W, GOT): None,  # an answer for an input no longer awaited
    (W, COMPLETE): C,
    (W, FAIL): F,
    (W, CANCEL): X,
    (W, EXPIRE): F,  # the extension: the server may mark it failed after its ttl
    (IR, NEED): None,  # already waiting: the asker counts its outstanding requests
    (IR, GOT): W,
    (IR, COMPLETE): C,
    (IR, FAIL): F,
    (IR, CANCEL): X,
    (IR, EXPIRE): F,
    **{(s, e): None for s in (C, F, X) for e in TaskEvent},
}

#: How to reach each state from a fresh task.
PATH_TO: dict[TaskState, list[TaskEvent]] = {
    W: [],
    IR: [NEED],
    C: [COMPLETE],
    F: [NEED, FAIL],
    X: [CANCEL],
}

#: 2025-11-25T10:30:00Z, the spec's example createdAt.
T0 = 1764066600.0


class Clock:
    """A wall clock the test moves by hand."""

    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def running_request(request_id: int = 7, method: str = "tools/call") -> RequestEntry:
    """An inbound request whose handler runs (the receiver's side at hand-off)."""
    entry = RequestEntry(request_id, method, Direction.INBOUND, 1.0)
    assert entry.apply(RequestEvent.START, 2.0) is RequestState.QUEUED
    return entry


def book_with_task(
    state: TaskState = W,
    *,
    form: TaskForm = TaskForm.V2025_11_25,
    ttl_ms: int | None = 60_000,
    clock: Clock | None = None,
) -> tuple[TaskBook, Clock, TaskRecord]:
    clock = clock or Clock()
    book = TaskBook(clock=clock)
    record = book.create(running_request().snapshot(), "task-1", form=form, ttl_ms=ttl_ms)
    for event in PATH_TO[state]:
        clock.now += 1
        record = book.apply("task-1", event, TaskCause.WORK)
    assert record.state is state
    return book, clock, record


def test_the_table_is_exactly_the_documented_machine() -> None:
    actual = {(s, e): TASK_TRANSITIONS[s].get(e) for s in TaskState for e in TaskEvent}
    assert actual == EXPECTED
    assert set(TASK_TRANSITIONS) == set(TaskState)


@pytest.mark.spec("TK-08")
@pytest.mark.parametrize(
    ("state", "event"),
    list(itertools.product(TaskState, TaskEvent)),
    ids=lambda v: v.value,
)
def test_every_state_event_pair(state: TaskState, event: TaskEvent) -> None:
    book, clock, before = book_with_task(state)
    clock.now = T0 + 100
    after = book.apply("task-1", event, TaskCause.REQUESTOR, note="why", status_message="msg")
    assert book.get("task-1") == after
    expected = EXPECTED[(state, event)]
    if expected is None:
        # Ignored and recorded; nothing else moved, and no exception.
        assert after.state is state
        assert after.late_events == (f"{event.value} by requestor in {state.value}: why",)
        assert attrs.evolve(after, late_events=()) == before
    else:
        assert after.state is expected
        assert after.late_events == ()
        assert after.moves == (
            *before.moves,
            TaskMove(
                event=event,
                old=state,
                new=expected,
                at=T0 + 100,
                cause=TaskCause.REQUESTOR,
                note="why",
            ),
        )
        assert after.last_updated_at == T0 + 100
        assert after.created_at == T0
        assert after.status_message == "msg"
        assert after.finished_at == (T0 + 100 if expected.is_terminal else None)


@pytest.mark.spec("TK-08", "TK-16")
@pytest.mark.parametrize("state", [C, F, X], ids=lambda s: s.value)
def test_terminal_states_are_final_whatever_follows(state: TaskState) -> None:
    book, clock, before = book_with_task(state)
    for event in list(TaskEvent) * 2:
        clock.now += 5
        assert book.apply("task-1", event, TaskCause.WORK).state is state
    after = book.get("task-1")
    assert after is not None
    assert after.moves == before.moves
    assert after.last_updated_at == before.last_updated_at
    assert after.finished_at == before.finished_at
    assert len(after.late_events) == 2 * len(TaskEvent)


@pytest.mark.spec("TK-08")
def test_is_terminal_and_every_state_is_reachable_from_working() -> None:
    assert {s for s in TaskState if s.is_terminal} == {C, F, X}
    for state in TaskState:
        # Terminal exactly when nothing leaves it.
        assert state.is_terminal == (TASK_TRANSITIONS[state] == {})
    seen = {W}
    frontier = [W]
    while frontier:
        for new in TASK_TRANSITIONS[frontier.pop()].values():
            if new not in seen:
                seen.add(new)
                frontier.append(new)
    assert seen == set(TaskState)


@pytest.mark.spec("TK-08", "TK-10")
def test_a_task_starts_working_continuing_its_request() -> None:
    clock = Clock()
    book = TaskBook(clock=clock)
    request = running_request(42, "tools/call")
    record = book.create(
        request.snapshot(),
        "t",
        form=TaskForm.EXTENSION,
        ttl_ms=None,
        poll_interval_ms=500,
        status_message="started",
    )
    assert record == TaskRecord(
        task_id="t",
        request_id=42,
        method="tools/call",
        direction=Direction.INBOUND,
        form=TaskForm.EXTENSION,
        state=W,
        created_at=T0,
        last_updated_at=T0,
        ttl_ms=None,
        poll_interval_ms=500,
        status_message="started",
    )
    assert not record.is_terminal
    assert not record.cancel_requested
    assert record.finished_at is None
    assert book.tasks() == [record]


def test_wire_status_strings_are_the_spec_s_in_both_forms() -> None:
    # 2025-11-25's TaskStatus (trio_mcp.types) and the extension's Task.status
    # name the same five strings; the enum values are those strings.
    assert {s.value for s in TaskState} == set(typing.get_args(TaskStatus))
    assert {s.value for s in TaskState} == {
        "working",
        "input_required",
        "completed",
        "cancelled",
        "failed",
    }


@pytest.mark.spec("TK-11")
def test_the_request_completes_at_hand_off_and_its_cancel_never_reaches_the_task() -> None:
    # the request's record ends COMPLETED with the CreateTaskResult; a
    # notifications/cancelled for its id afterwards is a late event on the
    # request, and the task goes on. Only tasks/cancel cancels the task.
    clock = Clock()
    book = TaskBook(clock=clock)
    request = running_request()
    task = book.create(request.snapshot(), "task-1", form=TaskForm.V2025_11_25, ttl_ms=None)
    assert request.apply(RequestEvent.COMPLETE, 3.0) is RequestState.RUNNING
    assert request.request_cancel(CancelOrigin.PEER, "stop") is False
    assert request.apply(RequestEvent.CANCEL, 4.0) is None
    assert request.state is RequestState.COMPLETED
    assert request.late_events == (
        "cancel by peer in completed",
        "cancel in completed",
    )
    assert book.get("task-1") == task
    assert task.request_id == request.id
    assert task.method == request.method

    clock.now += 1
    book.request_cancel("task-1", TaskCause.REQUESTOR, "tasks/cancel")
    assert book.apply("task-1", CANCEL, TaskCause.REQUESTOR).state is X


@pytest.mark.parametrize(
    ("direction", "state", "allowed"),
    [
        (Direction.INBOUND, RequestState.QUEUED, False),
        (Direction.INBOUND, RequestState.RUNNING, True),
        (Direction.INBOUND, RequestState.COMPLETED, False),
        (Direction.INBOUND, RequestState.FAILED, False),
        (Direction.INBOUND, RequestState.CANCELLED, False),
        (Direction.OUTBOUND, RequestState.QUEUED, False),
        (Direction.OUTBOUND, RequestState.RUNNING, False),
        (Direction.OUTBOUND, RequestState.COMPLETED, True),
        (Direction.OUTBOUND, RequestState.FAILED, False),
        (Direction.OUTBOUND, RequestState.CANCELLED, False),
    ],
    ids=lambda v: getattr(v, "value", str(v)),
)
def test_a_task_continues_only_a_request_at_its_hand_off(
    direction: Direction, state: RequestState, allowed: bool
) -> None:
    # Receiver: the handler runs and is about to answer with CreateTaskResult.
    # Requestor: the CreateTaskResult has come back. Nothing else made a task.
    entry = RequestEntry(3, "sampling/createMessage", direction, 1.0)
    path = {
        RequestState.QUEUED: [],
        RequestState.RUNNING: [RequestEvent.START],
        RequestState.COMPLETED: [RequestEvent.START, RequestEvent.COMPLETE],
        RequestState.FAILED: [RequestEvent.FAIL],
        RequestState.CANCELLED: [RequestEvent.CANCEL],
    }[state]
    for event in path:
        entry.apply(event, 2.0)
    book = TaskBook(clock=Clock())
    if allowed:
        record = book.create(entry.snapshot(), "t", form=TaskForm.V2025_11_25, ttl_ms=1)
        assert record.direction is direction
        assert record.state is W
    else:
        with pytest.raises(ValueError, match=f"not {state.value}"):
            book.create(entry.snapshot(), "t", form=TaskForm.V2025_11_25, ttl_ms=1)
        assert book.tasks() == []


@pytest.mark.spec("TK-07")
def test_task_ids_are_unique_in_the_book_and_fresh_ones_unguessable() -> None:
    book, _, _ = book_with_task()
    with pytest.raises(ValueError, match="already in use"):
        book.create(running_request().snapshot(), "task-1", form=TaskForm.EXTENSION, ttl_ms=None)
    ids = {new_task_id() for _ in range(4)}
    assert len(ids) == 4
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids)


@pytest.mark.spec("TK-16")
def test_2025_11_25_cancel_is_cancelled_before_the_reply_and_stays_so() -> None:
    book, clock, _ = book_with_task(IR, form=TaskForm.V2025_11_25)
    assert TaskForm.V2025_11_25.cancel_is_immediate
    clock.now = T0 + 10
    asked = book.request_cancel("task-1", TaskCause.REQUESTOR, "user stop")
    assert asked.state is IR
    assert asked.cancel_requested
    done = book.apply("task-1", CANCEL, TaskCause.REQUESTOR, status_message="Cancelled by request.")
    assert done.state is X
    assert (done.cancel_cause, done.cancel_reason, done.cancel_requested_at) == (
        TaskCause.REQUESTOR,
        "user stop",
        T0 + 10,
    )
    # The work finishes anyway: the task stays cancelled (TK-16).
    clock.now += 1
    assert book.apply("task-1", COMPLETE, TaskCause.WORK).state is X
    # A second tasks/cancel finds it terminal: recorded, the caller answers -32602.
    again = book.request_cancel("task-1", TaskCause.REQUESTOR, "twice")
    assert again.is_terminal
    assert again.cancel_reason == "user stop"
    assert again.late_events == (
        "complete by work in cancelled",
        "cancel asked by requestor in cancelled",
    )


@pytest.mark.spec("TK-19")
def test_extension_cancel_is_cooperative_the_work_may_win() -> None:
    book, clock, _ = book_with_task(W, form=TaskForm.EXTENSION)
    assert not TaskForm.EXTENSION.cancel_is_immediate
    asked = book.request_cancel("task-1", TaskCause.REQUESTOR)
    assert asked.state is W
    assert asked.cancel_requested
    # The work had finished before it saw the cancel: completed, ask kept.
    clock.now += 1
    done = book.apply("task-1", COMPLETE, TaskCause.WORK)
    assert done.state is C
    assert done.cancel_cause is TaskCause.REQUESTOR


def test_the_first_asker_to_cancel_wins() -> None:
    book, clock, _ = book_with_task(W, form=TaskForm.EXTENSION)
    book.request_cancel("task-1", TaskCause.SHUTDOWN, "server stopping")
    clock.now += 1
    later = book.request_cancel("task-1", TaskCause.REQUESTOR, "tasks/cancel")
    assert (later.cancel_cause, later.cancel_reason, later.cancel_requested_at) == (
        TaskCause.SHUTDOWN,
        "server stopping",
        T0,
    )
    assert later.late_events == ()


@pytest.mark.spec("TK-09")
def test_a_task_asking_for_input_twice_keeps_every_move_in_order() -> None:
    book, clock, _ = book_with_task(W)
    steps = [
        (NEED, TaskCause.WORK),
        (GOT, TaskCause.REQUESTOR),
        (NEED, TaskCause.WORK),
        (GOT, TaskCause.REQUESTOR),
        (COMPLETE, TaskCause.WORK),
    ]
    for event, cause in steps:
        clock.now += 2
        record = book.apply("task-1", event, cause)
    assert [(m.event, m.old, m.new, m.at, m.cause) for m in record.moves] == [
        (NEED, W, IR, T0 + 2, TaskCause.WORK),
        (GOT, IR, W, T0 + 4, TaskCause.REQUESTOR),
        (NEED, W, IR, T0 + 6, TaskCause.WORK),
        (GOT, IR, W, T0 + 8, TaskCause.REQUESTOR),
        (COMPLETE, W, C, T0 + 10, TaskCause.WORK),
    ]
    assert record.finished_at == T0 + 10 == record.last_updated_at


@pytest.mark.spec("TK-17", "TK-19")
@pytest.mark.parametrize(
    ("form", "is_error", "event"),
    [
        (TaskForm.V2025_11_25, False, COMPLETE),
        (TaskForm.V2025_11_25, True, FAIL),
        (TaskForm.EXTENSION, False, COMPLETE),
        (TaskForm.EXTENSION, True, COMPLETE),
    ],
    ids=lambda v: getattr(v, "value", str(v)),
)
def test_a_tool_error_result_fails_a_2025_task_and_completes_an_extension_one(
    form: TaskForm, is_error: bool, event: TaskEvent
) -> None:
    assert form.tool_result_event(is_error=is_error) is event


@pytest.mark.spec("TK-10")
def test_expire_due_fails_a_running_task_and_drops_every_expired_one() -> None:
    clock = Clock()
    book = TaskBook(clock=clock)
    request = running_request().snapshot()
    book.create(request, "short-running", form=TaskForm.EXTENSION, ttl_ms=1_000)
    book.create(request, "short-done", form=TaskForm.V2025_11_25, ttl_ms=1_000)
    book.create(request, "long", form=TaskForm.V2025_11_25, ttl_ms=5_000)
    book.create(request, "forever", form=TaskForm.V2025_11_25, ttl_ms=None)
    done = book.apply("short-done", COMPLETE, TaskCause.WORK)
    clock.now = T0 + 0.999
    assert book.expire_due() == []
    clock.now = T0 + 1
    expired = book.expire_due()
    assert [r.task_id for r in expired] == ["short-running", "short-done"]
    running, finished = expired
    assert running.state is F
    assert running.moves[-1] == TaskMove(
        event=EXPIRE, old=W, new=F, at=T0 + 1, cause=TaskCause.TTL, note="ttl elapsed"
    )
    assert running.status_message
    assert finished == done  # already terminal: dropped as it was
    assert [r.task_id for r in book.tasks()] == ["long", "forever"]
    assert book.get("short-running") is None
    clock.now = T0 + 10**9
    assert [r.task_id for r in book.expire_due()] == ["long"]
    assert book.get("forever") is not None


def test_forget_drops_a_task() -> None:
    book, _, record = book_with_task(X)
    assert book.forget("task-1") == record
    assert book.forget("task-1") is None
    assert book.get("task-1") is None
    with pytest.raises(KeyError):
        book.apply("task-1", CANCEL, TaskCause.REQUESTOR)


@pytest.mark.spec("TK-14")
def test_the_requestor_mirrors_reported_statuses() -> None:
    clock = Clock()
    book = TaskBook(clock=clock)
    entry = RequestEntry(1, "tools/call", Direction.OUTBOUND, 1.0)
    entry.apply(RequestEvent.START, 1.0)
    entry.apply(RequestEvent.COMPLETE, 2.0)
    book.create(entry.snapshot(), "remote", form=TaskForm.EXTENSION, ttl_ms=None)
    for status in (W, W, IR, IR, W, C, C, F):
        clock.now += 1
        record = book.observe("remote", status, status_message=status.value)
    assert [(m.old, m.new, m.cause) for m in record.moves] == [
        (W, IR, TaskCause.REPORTED),
        (IR, W, TaskCause.REPORTED),
        (W, C, TaskCause.REPORTED),
    ]
    # A terminal status reported again, or changed, is a late event.
    assert record.late_events == (
        "complete by reported in completed",
        "fail by reported in completed",
    )
    assert record.state is C
    assert record.status_message == "completed"


@pytest.mark.spec("TK-10", "TK-14")
def test_the_requestor_adopts_a_reported_task_and_mirrors_each_report() -> None:
    clock = Clock(T0 + 100)
    book = TaskBook(clock=clock)
    entry = RequestEntry(3, "tools/call", Direction.OUTBOUND, 1.0)
    entry.apply(RequestEvent.START, 1.0)
    entry.apply(RequestEvent.COMPLETE, 2.0)
    created = TaskReport("remote", W, 60_000, created_at=T0, last_updated_at=T0)
    record = book.adopt(entry.snapshot(), created, form=TaskForm.EXTENSION)
    # The receiver's creation time, not ours; the call's id, method, direction.
    assert (record.created_at, record.last_updated_at) == (T0, T0)
    assert (record.request_id, record.method, record.direction) == (
        3,
        "tools/call",
        Direction.OUTBOUND,
    )
    assert (record.state, record.moves) == (W, ())
    asks = {"k": {"method": "elicitation/create", "params": {"message": "?"}}}
    waiting = TaskReport(
        "remote", IR, 30_000, last_updated_at=T0 + 5, poll_interval_ms=200, input_requests=asks
    )
    record = book.receive(waiting)
    assert record.state is IR
    assert (record.ttl_ms, record.poll_interval_ms, record.input_requests) == (30_000, 200, asks)
    assert record.last_updated_at == T0 + 5
    done = TaskReport("remote", C, 30_000, result={"content": []}, status_message="done")
    record = book.receive(done)
    assert (record.state, record.result, record.input_requests) == (C, {"content": []}, None)
    assert record.status_message == "done"
    assert [(m.new, m.cause) for m in record.moves] == [
        (IR, TaskCause.REPORTED),
        (C, TaskCause.REPORTED),
    ]
    # A repeat of the end changes nothing; another end is a late event only.
    assert book.receive(done) is record
    late = book.receive(TaskReport("remote", F, None, error={"code": 1, "message": "x"}))
    assert (late.state, late.result, late.error) == (C, {"content": []}, None)
    assert late.late_events == ("fail by reported in completed",)


def test_parse_iso8601_reads_what_iso8601_writes_and_nothing_else() -> None:
    for seconds in (T0, T0 + 0.25, 0.5):
        assert parse_iso8601(iso8601(seconds)) == seconds
    assert parse_iso8601("2025-11-25T10:30:00+00:00") == T0
    assert parse_iso8601("2025-11-25T10:30:00") == T0  # no zone: UTC
    assert parse_iso8601("yesterday") is None
    assert parse_iso8601(None) is None


@pytest.mark.spec("TK-10")
def test_wire_fields_in_each_form() -> None:
    book, clock, _ = book_with_task(W, form=TaskForm.V2025_11_25, ttl_ms=60_000)
    clock.now = T0 + 600.25
    legacy = attrs.evolve(
        book.apply("task-1", NEED, TaskCause.WORK, status_message="Need a name."),
        poll_interval_ms=5_000,
    )
    assert legacy.wire_fields() == {
        "taskId": "task-1",
        "status": "input_required",
        "statusMessage": "Need a name.",
        "createdAt": "2025-11-25T10:30:00Z",
        "lastUpdatedAt": "2025-11-25T10:40:00.250Z",
        "ttl": 60_000,
        "pollInterval": 5_000,
    }
    extension = attrs.evolve(legacy, form=TaskForm.EXTENSION, ttl_ms=None, status_message=None)
    assert extension.wire_fields() == {
        "taskId": "task-1",
        "status": "input_required",
        "createdAt": "2025-11-25T10:30:00Z",
        "lastUpdatedAt": "2025-11-25T10:40:00.250Z",
        "ttlMs": None,  # null: unlimited
        "pollIntervalMs": 5_000,
    }
    assert "pollInterval" not in attrs.evolve(legacy, poll_interval_ms=None).wire_fields()


def test_iso8601() -> None:
    assert iso8601(T0) == "2025-11-25T10:30:00Z"
    assert iso8601(0.5) == "1970-01-01T00:00:00.500Z"


def test_apply_task_event_is_pure() -> None:
    _, _, record = book_with_task(W)
    moved = apply_task_event(record, NEED, T0 + 3, TaskCause.WORK)
    ignored = apply_task_event(record, GOT, T0 + 3, TaskCause.REQUESTOR)
    assert record.state is W
    assert record.moves == ()
    assert record.late_events == ()
    assert moved.state is IR
    assert moved.last_updated_at == T0 + 3
    assert ignored.state is W
    assert ignored.late_events == ("input_received by requestor in working",)
    assert ignored.last_updated_at == T0


def test_expiry_arithmetic() -> None:
    _, _, record = book_with_task(W, ttl_ms=1_500)
    assert record.expires_at == T0 + 1.5
    assert not record.expired(T0 + 1.499)
    assert record.expired(T0 + 1.5)
    unlimited = attrs.evolve(record, ttl_ms=None)
    assert unlimited.expires_at is None
    assert not unlimited.expired(T0 + 10**9)
