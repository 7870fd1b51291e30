"""The task stores: owners, compare-and-set, pages, waiting, expiry, bounds.

Every behavioural test runs against both stores, the in-memory one and the
Redis one on a real ``redis-server``: ``await make_store(**options)`` opens one
of the test's kind (tests named ``[memory]`` and ``[redis]``) with the options
of ``MemoryTaskStore``. Stores are opened and closed by tasks of the fixture's
nursery, so a test body is not nested in ``async with``. The store's wall clock is injected: ``T0 +
trio.current_time()`` (:func:`trio_wall`) under the ``mock_clock``, so a
``jump`` moves a record's ttl and the store's waits together and every time
read back is exact, or a list the test sets. (Not ``autojump_clock``: the Redis
store waits on real sockets, and the autojump would move the clock during
every round trip.)
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import attrs
import pytest
import trio
import trio.testing
from task_store_helpers import (
    T0,
    MakeStore,
    MemoryBackend,
    RedisBackend,
    StoreBackend,
    held,
    task,
    trio_wall,
    until_waiting,
    waiting,
    without_waiting,
)

from trio_mcp._tasks._store import (
    MAX_TASKS,
    MAX_TASKS_PER_OWNER,
    REMEMBER_EXPIRED,
    InvalidCursor,
    MemoryTaskStore,
    TaskConflict,
    TaskExists,
    TaskLimitExceeded,
    TaskStore,
    UnknownTask,
)
from trio_mcp.protocol import (
    TaskCause,
    TaskEvent,
    TaskForm,
    TaskRecord,
    TaskState,
    apply_task_event,
    new_task_id,
)


@pytest.fixture(params=["memory", "redis"])
def store_backend(request: pytest.FixtureRequest) -> StoreBackend:
    if request.param == "memory":
        return MemoryBackend()
    return RedisBackend(request.getfixturevalue("redis_url"))


@pytest.fixture
async def make_store(store_backend: StoreBackend) -> AsyncIterator[MakeStore]:
    async with trio.open_nursery() as nursery:

        async def make(**options: Any) -> TaskStore:
            store: TaskStore = await nursery.start(store_backend.serve, options)
            return store

        yield make
        nursery.cancel_scope.cancel()


def test_defaults_and_bad_bounds() -> None:
    store = MemoryTaskStore()
    assert (store.max_tasks, store.max_tasks_per_owner) == (MAX_TASKS, MAX_TASKS_PER_OWNER)
    assert (MAX_TASKS, MAX_TASKS_PER_OWNER, REMEMBER_EXPIRED) == (10_000, 1_000, 600.0)
    with pytest.raises(ValueError, match="at least 1"):
        MemoryTaskStore(max_tasks=0)
    with pytest.raises(ValueError, match="at least 1"):
        MemoryTaskStore(max_tasks_per_owner=0)


@pytest.mark.spec("TK-07")
async def test_create_then_get_and_a_duplicate_id_is_refused(make_store: MakeStore) -> None:
    store = await make_store(clock=trio_wall)
    record = task()
    await store.create(record, "alice")
    assert await store.get(record.task_id, "alice") == record
    assert await store.get(new_task_id(), "alice") is None
    with pytest.raises(TaskExists, match=record.task_id):
        await store.create(task(task_id=record.task_id), "alice")
    # Even for another owner: ids are unique among all the receiver's tasks.
    with pytest.raises(TaskExists):
        await store.create(task(task_id=record.task_id), "bob")
    assert await held(store) == 1


@pytest.mark.spec("TK-18")
async def test_another_owners_task_is_invisible_everywhere(make_store: MakeStore) -> None:
    store = await make_store(clock=trio_wall)
    mine = task()
    await store.create(mine, "alice")
    theirs = task()
    await store.create(theirs, "bob")
    anonymous = task()
    await store.create(anonymous, None)
    # get answers exactly as for an unknown id: existence does not leak.
    assert await store.get(mine.task_id, "bob") is None
    assert await store.get(mine.task_id, None) is None
    assert await store.get(anonymous.task_id, "alice") is None
    assert await store.get(anonymous.task_id, None) == anonymous
    assert await store.list("alice", None, 10) == ([mine], None)
    assert await store.list("bob", None, 10) == ([theirs], None)
    assert await store.list(None, None, 10) == ([anonymous], None)
    assert await store.list("carol", None, 10) == ([], None)


async def test_compare_and_set_success_wakes_nothing_when_nothing_changed(
    make_store: MakeStore,
) -> None:
    store = await make_store(clock=trio_wall)
    record = task()
    await store.create(record, "alice")
    moved = apply_task_event(record, TaskEvent.NEED_INPUT, trio_wall(), TaskCause.WORK)
    assert await store.update(record.task_id, record, moved) is moved
    assert await store.get(record.task_id, "alice") == moved
    # An equal (not identical) expected record is the same snapshot.
    done = apply_task_event(moved, TaskEvent.COMPLETE, trio_wall(), TaskCause.WORK)
    assert await store.update(record.task_id, attrs.evolve(moved), done) is done
    assert (await store.get(record.task_id, "alice")) == done
    assert done.state is TaskState.COMPLETED


async def test_compare_and_set_conflict_carries_the_current_record(make_store: MakeStore) -> None:
    """The race the whole-record compare exists for: the extension's cooperative
    cancel records only the ask (no state change) while the work, from the
    record before the ask, moves to input_required. The work's write must
    lose, not erase the ask."""
    store = await make_store(clock=trio_wall)
    record = attrs.evolve(task(), form=TaskForm.EXTENSION)
    await store.create(record, "alice")
    asked = attrs.evolve(record, cancel_cause=TaskCause.REQUESTOR, cancel_requested_at=T0)
    assert asked.state is record.state
    await store.update(record.task_id, record, asked)
    stale = apply_task_event(record, TaskEvent.NEED_INPUT, trio_wall(), TaskCause.WORK)
    with pytest.raises(TaskConflict) as caught:
        await store.update(record.task_id, record, stale)
    assert caught.value.current == asked
    assert await store.get(record.task_id, "alice") == asked
    # The retry re-applies the event to the current record and keeps the ask.
    retried = apply_task_event(caught.value.current, TaskEvent.NEED_INPUT, T0, TaskCause.WORK)
    stored = await store.update(record.task_id, caught.value.current, retried)
    assert (stored.state, stored.cancel_cause) == (TaskState.INPUT_REQUIRED, TaskCause.REQUESTOR)


async def test_update_of_a_gone_task_and_of_another_id(make_store: MakeStore) -> None:
    store = await make_store(clock=trio_wall)
    record = task()
    with pytest.raises(UnknownTask, match=record.task_id):
        await store.update(record.task_id, record, record)
    await store.create(record, "alice")
    other = task()
    with pytest.raises(ValueError, match="must carry its records"):
        await store.update(record.task_id, record, other)
    assert await store.delete(record.task_id) == record
    assert await store.delete(record.task_id) is None
    with pytest.raises(UnknownTask):
        await store.update(record.task_id, record, record)
    # Deleted is unknown, not expired.
    assert not await store.expired(record.task_id, "alice")


@pytest.mark.spec("TK-15")
async def test_list_pages_in_creation_order_across_creations_and_removals(
    make_store: MakeStore,
) -> None:
    store = await make_store(clock=trio_wall)
    mine = []
    for _ in range(5):
        mine.append(task())
        await store.create(mine[-1], "alice")
        await store.create(task(), "bob")  # interleaved, never shown to alice
    page, cursor = await store.list("alice", None, 2)
    assert page == mine[:2]
    assert cursor is not None
    # Removing a shown task and creating a new one shift nothing.
    await store.delete(mine[0].task_id)
    late = task()
    await store.create(late, "alice")
    page, cursor = await store.list("alice", cursor, 2)
    assert page == mine[2:4]
    assert cursor is not None
    page, cursor = await store.list("alice", cursor, 2)
    assert page == [mine[4], late]
    assert cursor is None
    # An exact fit ends without an empty last page.
    page, cursor = await store.list("alice", None, 5)
    assert (page, cursor) == ([*mine[1:], late], None)
    with pytest.raises(ValueError, match="limit"):
        await store.list("alice", None, 0)


@pytest.mark.spec("TK-17")
@pytest.mark.parametrize(
    "cursor",
    ["", "not base64!", "dGFza3M6", "dG9vbHM6Mg==", "dGFza3M6MA==", "dGFza3M6OTk5", "dGFza3M6LTE="],
)
async def test_a_cursor_the_store_did_not_make_is_refused(
    make_store: MakeStore, cursor: str
) -> None:
    # "tasks:", "tools:2", "tasks:0", "tasks:999" (past the newest), "tasks:-1".
    store = await make_store(clock=trio_wall)
    for _ in range(3):
        await store.create(task(), "alice")
    _, good = await store.list("alice", None, 1)
    assert good is not None
    assert len((await store.list("alice", good, 5))[0]) == 2
    with pytest.raises(InvalidCursor, match="invalid cursor"):
        await store.list("alice", cursor, 5)


async def test_wait_changed_is_woken_by_an_update_and_returns_at_once_if_stale(
    make_store: MakeStore, mock_clock: trio.testing.MockClock
) -> None:
    store = await make_store(clock=trio_wall)
    record = task()
    await store.create(record, "alice")
    seen: list[TaskRecord | None] = []

    async def waiter() -> None:
        seen.append(await store.wait_changed(record.task_id, record))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        nursery.start_soon(waiter)
        await until_waiting(store, 2)
        assert seen == []
        # A write that changes nothing wakes nobody for good: they park again.
        await store.update(record.task_id, record, record)
        await until_waiting(store, 2)
        assert seen == []
        # No ttl: time alone wakes nobody.
        mock_clock.jump(3600)
        await trio.testing.wait_all_tasks_blocked()
        await until_waiting(store, 2)
        assert seen == []
        moved = apply_task_event(record, TaskEvent.COMPLETE, trio_wall(), TaskCause.WORK)
        await store.update(record.task_id, record, moved)
    assert seen == [moved, moved]
    # Already different from what the caller saw: no wait at all.
    assert await without_waiting(store, lambda: store.wait_changed(record.task_id, record)) == moved


async def test_wait_changed_returns_none_on_removal_and_for_an_unknown_task(
    make_store: MakeStore,
) -> None:
    store = await make_store(clock=trio_wall)
    record = task()
    await store.create(record, "alice")
    seen: list[TaskRecord | None] = []

    async def waiter() -> None:
        seen.append(await store.wait_changed(record.task_id, record))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        await until_waiting(store, 1)
        await store.delete(record.task_id)
    assert seen == [None]
    assert await without_waiting(store, lambda: store.wait_changed(record.task_id, record)) is None


@pytest.mark.spec("TK-10")
async def test_wait_changed_wakes_when_the_ttl_elapses(
    make_store: MakeStore, mock_clock: trio.testing.MockClock
) -> None:
    store = await make_store(clock=trio_wall)
    record = task(ttl_ms=30_000)
    await store.create(record, "alice")
    seen: list[TaskRecord | None] = []

    async def waiter() -> None:
        seen.append(await store.wait_changed(record.task_id, record))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        await until_waiting(store, 1)
        mock_clock.jump(29)
        await trio.testing.wait_all_tasks_blocked()
        await until_waiting(store, 1)
        assert seen == []
        # Due at 30 s exactly: it wakes with no write and no further time.
        mock_clock.jump(1)
    assert seen == [None]
    assert trio.current_time() == 30.0
    assert await store.get(record.task_id, "alice") is None
    assert await store.expired(record.task_id, "alice")


async def test_wait_changed_is_cancellable_and_leaves_the_store_as_it_was(
    make_store: MakeStore, mock_clock: trio.testing.MockClock
) -> None:
    store = await make_store(clock=trio_wall)
    record = task(ttl_ms=60_000)
    await store.create(record, "alice")
    cancelled: list[bool] = []

    async def waiter() -> None:
        with trio.move_on_after(10) as scope:
            await store.wait_changed(record.task_id, record)
        cancelled.append(scope.cancelled_caught)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        await until_waiting(store, 1)
        mock_clock.jump(10)
    assert cancelled == [True]
    assert waiting(store) == 0
    assert await store.get(record.task_id, "alice") == record
    # The cancelled waiter left nothing behind that a later write trips on.
    moved = apply_task_event(record, TaskEvent.FAIL, trio_wall(), TaskCause.WORK)
    assert await store.update(record.task_id, record, moved) is moved


@pytest.mark.spec("TK-10")
async def test_ttl_expiry_on_access_and_by_expire_due(
    make_store: MakeStore, mock_clock: trio.testing.MockClock
) -> None:
    store = await make_store(clock=trio_wall)
    running = task(ttl_ms=10_000)
    finished = apply_task_event(task(ttl_ms=20_000), TaskEvent.COMPLETE, T0, TaskCause.WORK)
    forever = task(ttl_ms=None)
    for record in (running, finished, forever):
        await store.create(record, "alice")
    mock_clock.jump(9.999)
    assert await store.expire_due() == []
    assert await store.get(running.task_id, "alice") == running
    mock_clock.jump(0.001)
    # On access: dropped at its expiry exactly, and an update of it is refused.
    assert await store.get(running.task_id, "alice") is None
    assert await store.expired(running.task_id, "alice")
    assert not await store.expired(running.task_id, "bob")  # another owner: unknown
    with pytest.raises(UnknownTask):
        await store.update(running.task_id, running, running)
    # By expire_due: the finished one keeps its state; the store forgets it.
    dropped = await store.expire_due(T0 + 20.0)
    assert dropped == [finished]
    assert await store.list("alice", None, 10) == ([forever], None)
    assert await held(store) == 1


async def test_expire_due_fails_a_running_task_first(make_store: MakeStore) -> None:
    store = await make_store(clock=lambda: T0)
    running = task(ttl_ms=1_000, at=T0)
    await store.create(running, "alice")
    (last,) = await store.expire_due(T0 + 5)
    assert (last.state, last.moves[-1].event, last.moves[-1].cause) == (
        TaskState.FAILED,
        TaskEvent.EXPIRE,
        TaskCause.TTL,
    )
    assert last.last_updated_at == T0 + 5
    assert last.status_message == "The task's ttl elapsed before it finished."


async def test_expired_is_remembered_briefly_and_boundedly(make_store: MakeStore) -> None:
    now = [T0]
    store = await make_store(clock=lambda: now[0], remember_expired=60.0, max_remembered=2)
    records = [task(ttl_ms=1_000, at=T0) for _ in range(3)]
    for record in records:
        await store.create(record, "alice")
    now[0] = T0 + 1
    assert len(await store.expire_due()) == 3
    # At most two remembered: the oldest is forgotten first, so it is unknown.
    assert [await store.expired(r.task_id, "alice") for r in records] == [False, True, True]
    # A remembered id is still not reusable.
    with pytest.raises(TaskExists):
        await store.create(task(at=now[0], task_id=records[2].task_id), "alice")
    now[0] = T0 + 61
    assert [await store.expired(r.task_id, "alice") for r in records] == [False, False, False]
    store_without = await make_store(clock=lambda: now[0], remember_expired=0)
    gone = task(ttl_ms=1, at=T0)
    await store_without.create(gone, "alice")
    assert await store_without.get(gone.task_id, "alice") is None
    assert not await store_without.expired(gone.task_id, "alice")


@pytest.mark.spec("TK-18")
async def test_bounds_per_owner_and_in_total_with_clear_errors(make_store: MakeStore) -> None:
    now = [T0]
    store = await make_store(clock=lambda: now[0], max_tasks=3, max_tasks_per_owner=2)
    await store.create(task(at=T0), "alice")
    short = task(ttl_ms=1_000, at=T0)
    await store.create(short, "alice")
    with pytest.raises(TaskLimitExceeded, match="max_tasks_per_owner is 2") as caught:
        await store.create(task(at=T0), "alice")
    assert (caught.value.bound, caught.value.limit) == ("max_tasks_per_owner", 2)
    await store.create(task(at=T0), "bob")
    with pytest.raises(TaskLimitExceeded, match="max_tasks is 3") as caught:
        await store.create(task(at=T0), "carol")
    assert caught.value.bound == "max_tasks"
    # An expired task no longer counts, for either bound.
    now[0] = T0 + 1
    await store.create(task(at=now[0]), "alice")
    with pytest.raises(TaskLimitExceeded, match="max_tasks is 3"):
        await store.create(task(at=now[0]), "carol")
    # A deleted one neither.
    (bobs,), _ = await store.list("bob", None, 5)
    await store.delete(bobs.task_id)
    await store.create(task(at=now[0]), "carol")
    assert await held(store) == 3


async def test_a_cancelled_write_changes_nothing(make_store: MakeStore) -> None:
    store = await make_store(clock=trio_wall)
    record = task()
    with trio.CancelScope() as scope:
        scope.cancel()
        await store.create(record, "alice")
    assert scope.cancelled_caught
    assert await store.get(record.task_id, "alice") is None
    await store.create(record, "alice")
    moved = apply_task_event(record, TaskEvent.CANCEL, trio_wall(), TaskCause.REQUESTOR)
    with trio.CancelScope() as scope:
        scope.cancel()
        await store.update(record.task_id, record, moved)
    assert scope.cancelled_caught
    assert await store.get(record.task_id, "alice") == record
