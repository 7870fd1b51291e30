"""The request state machine as a table: every (state, event) pair.

``RequestEntry`` is the mutable record the connection owns; these tests drive it
directly, the way the connection does, so every cell of ``TRANSITIONS`` (and every
missing cell, i.e. every late event) is a row.
"""

from __future__ import annotations

import itertools

import attrs
import pytest

from trio_mcp.protocol import (
    TRANSITIONS,
    CancelOrigin,
    Direction,
    ErrorObject,
    Progress,
    RequestEvent,
    RequestRecord,
    RequestState,
)
from trio_mcp.protocol._requests import RequestEntry

Q, R, C, F, X = (
    RequestState.QUEUED,
    RequestState.RUNNING,
    RequestState.COMPLETED,
    RequestState.FAILED,
    RequestState.CANCELLED,
)
START, COMPLETE, FAIL, CANCEL = (
    RequestEvent.START,
    RequestEvent.COMPLETE,
    RequestEvent.FAIL,
    RequestEvent.CANCEL,
)

#: The whole machine, written out by hand: (state, event) -> new state, or None
#: when the event is late (ignored and recorded).
EXPECTED: dict[tuple[RequestState, RequestEvent], RequestState | None] = {
    (Q, START): R,
    (Q, COMPLETE): None,  # a handler cannot finish before it started
    (Q, FAIL): F,  # e.g. the transport died while the request sat in the queue
    (Q, CANCEL): X,  # cancelled while queued: never runs / never written
    (R, START): None,
    (R, COMPLETE): C,
    (R, FAIL): F,
    (R, CANCEL): X,
    **{(s, e): None for s in (C, F, X) for e in RequestEvent},
}

#: How to reach each state from a fresh entry.
PATH_TO: dict[RequestState, list[RequestEvent]] = {
    Q: [],
    R: [START],
    C: [START, COMPLETE],
    F: [START, FAIL],
    X: [START, CANCEL],
}


def entry_in(state: RequestState, *, now: float = 1.0) -> RequestEntry:
    entry = RequestEntry(7, "tools/call", Direction.INBOUND, now)
    for step, event in enumerate(PATH_TO[state]):
        assert entry.apply(event, now + step + 1) is not None
    assert entry.state is state
    return entry


def test_the_table_is_exactly_the_documented_machine() -> None:
    actual = {(s, e): TRANSITIONS[s].get(e) for s in RequestState for e in RequestEvent}
    assert actual == EXPECTED
    assert set(TRANSITIONS) == set(RequestState)


@pytest.mark.spec("CN-06", "CN-07", "CN-08", "CN-10")
@pytest.mark.parametrize(
    ("state", "event"),
    list(itertools.product(RequestState, RequestEvent)),
    ids=lambda v: v.value,
)
def test_every_state_event_pair(state: RequestState, event: RequestEvent) -> None:
    entry = entry_in(state)
    before = entry.snapshot()
    old = entry.apply(event, 100.0, note="why")
    expected = EXPECTED[(state, event)]
    if expected is None:
        # Ignored and recorded; nothing else moved.
        assert old is None
        assert entry.state is state
        assert entry.late_events == (f"{event.value} in {state.value}: why",)
        assert attrs.evolve(entry.snapshot(), late_events=()) == before
    else:
        assert old is state
        assert entry.state is expected
        assert entry.late_events == ()
        if expected is R:
            assert entry.started_at == 100.0
            assert entry.finished_at is None
        else:
            assert expected.is_terminal
            assert entry.finished_at == 100.0
            assert entry.started_at == before.started_at


@pytest.mark.parametrize("state", [C, F, X], ids=lambda s: s.value)
def test_terminal_states_are_final_whatever_follows(state: RequestState) -> None:
    entry = entry_in(state)
    finished_at = entry.finished_at
    for event in list(RequestEvent) * 2:
        assert entry.apply(event, 99.0) is None
    assert entry.state is state
    assert entry.finished_at == finished_at
    assert len(entry.late_events) == 2 * len(RequestEvent)


def test_is_terminal() -> None:
    assert {s for s in RequestState if s.is_terminal} == {C, F, X}
    for state in RequestState:
        # Terminal exactly when nothing leaves it.
        assert state.is_terminal == (TRANSITIONS[state] == {})


def test_every_state_is_reachable_from_queued() -> None:
    seen = {Q}
    frontier = [Q]
    while frontier:
        state = frontier.pop()
        for new in TRANSITIONS[state].values():
            if new not in seen:
                seen.add(new)
                frontier.append(new)
    assert seen == set(RequestState)


def test_late_event_without_note() -> None:
    entry = entry_in(C)
    entry.apply(COMPLETE, 5.0)
    assert entry.late_events == ("complete in completed",)


def test_timestamps_and_duration() -> None:
    entry = RequestEntry("a", "ping", Direction.OUTBOUND, 10.0)
    assert entry.snapshot().duration is None
    entry.apply(START, 12.5)
    assert entry.snapshot().duration is None
    entry.apply(COMPLETE, 15.0)
    record = entry.snapshot()
    assert (record.queued_at, record.started_at, record.finished_at) == (10.0, 12.5, 15.0)
    assert record.duration == 5.0


def test_cancelled_while_queued_never_started() -> None:
    entry = RequestEntry(1, "ping", Direction.INBOUND, 1.0)
    entry.apply(CANCEL, 2.0)
    record = entry.snapshot()
    assert record.state is X
    assert record.started_at is None
    assert record.finished_at == 2.0


# --- request_cancel: "cancel requested" is separate from "cancelled" --------------


@pytest.mark.spec("CN-05", "CN-09")
@pytest.mark.parametrize("first", list(CancelOrigin), ids=lambda o: o.value)
@pytest.mark.parametrize("second", list(CancelOrigin), ids=lambda o: o.value)
def test_request_cancel_first_asker_wins(first: CancelOrigin, second: CancelOrigin) -> None:
    entry = entry_in(R)
    assert entry.request_cancel(first, "first reason")
    assert entry.request_cancel(second, "second reason")
    assert entry.cancel_origin is first
    assert entry.cancel_reason == "first reason"
    # Asking is not doing: the state is unchanged until CANCEL is applied.
    assert entry.state is R
    assert entry.snapshot().cancel_requested


@pytest.mark.spec("CN-05", "A-01")
def test_cancel_requested_survives_completion() -> None:
    # The handler finished after the peer's cancel arrived: the record says
    # COMPLETED *and* that the peer asked, which is what suppresses the response.
    entry = entry_in(R)
    entry.request_cancel(CancelOrigin.PEER, "user hit stop")
    entry.apply(COMPLETE, 3.0)
    record = entry.snapshot()
    assert record.state is C
    assert record.cancel_requested
    assert record.cancel_origin is CancelOrigin.PEER
    assert record.cancel_reason == "user hit stop"


@pytest.mark.spec("CN-06", "CN-08")
@pytest.mark.parametrize("state", [C, F, X], ids=lambda s: s.value)
def test_request_cancel_on_terminal_is_refused_and_recorded(state: RequestState) -> None:
    entry = entry_in(state)
    assert not entry.request_cancel(CancelOrigin.PEER, "too late")
    assert entry.cancel_origin is None
    assert entry.cancel_reason is None
    assert entry.late_events == (f"cancel by peer in {state.value}",)


@pytest.mark.parametrize("state", [Q, R], ids=lambda s: s.value)
def test_request_cancel_on_live_states(state: RequestState) -> None:
    entry = entry_in(state)
    assert entry.request_cancel(CancelOrigin.CALLER, None)
    assert entry.cancel_origin is CancelOrigin.CALLER
    assert entry.cancel_reason is None
    assert entry.late_events == ()


def test_fresh_record_has_no_cancel() -> None:
    record = RequestEntry(1, "ping", Direction.INBOUND, 0.0).snapshot()
    assert not record.cancel_requested
    assert record.cancel_origin is None
    assert record.state is Q
    assert record.late_events == ()


# --- snapshots ---------------------------------------------------------------------


def test_snapshot_is_frozen() -> None:
    record = entry_in(R).snapshot()
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        record.state = C  # type: ignore[misc]
    assert isinstance(record.late_events, tuple)


def test_snapshot_does_not_follow_the_entry() -> None:
    entry = entry_in(R)
    entry.progress_token = 7
    before = entry.snapshot()
    entry.apply(COMPLETE, 9.0)
    entry.apply(COMPLETE, 10.0)  # late
    entry.progress = Progress(1.0)
    entry.error = ErrorObject(-1, "x")
    assert before.state is R
    assert before.finished_at is None
    assert before.late_events == ()
    assert before.progress is None
    assert before.error is None
    after = entry.snapshot()
    assert after.state is C
    assert after.late_events == ("complete in completed",)


def test_snapshot_copies_every_field() -> None:
    entry = RequestEntry("x", "tools/call", Direction.OUTBOUND, 1.0, progress_token="x")
    entry.apply(START, 2.0)
    entry.progress = Progress(0.5, 1.0, "half")
    entry.request_cancel(CancelOrigin.DEADLINE, "timeout")
    entry.apply(CANCEL, 3.0)
    entry.error = ErrorObject(-32001, "late")
    entry.apply(FAIL, 4.0)
    assert entry.snapshot() == RequestRecord(
        id="x",
        method="tools/call",
        direction=Direction.OUTBOUND,
        state=X,
        queued_at=1.0,
        started_at=2.0,
        finished_at=3.0,
        progress_token="x",
        progress=Progress(0.5, 1.0, "half"),
        cancel_origin=CancelOrigin.DEADLINE,
        cancel_reason="timeout",
        error=ErrorObject(-32001, "late"),
        late_events=("fail in cancelled",),
    )
