"""What only the Redis task store has: several processes' stores on one Redis,
its records as bytes, its keys, its subscription, its failures.

Each store here is its own client (its own connections), as two workers of one
server would be. The behaviour it shares with the memory store is tested in
``test_task_store.py``, against both. The clock is Trio's real one: these tests
wait only for Redis, never for time; expiry is driven by an injected clock.
"""

from __future__ import annotations

import ast
import gc
import subprocess
import sys
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import attrs
import coredis
import pytest
import trio
import trio.testing
from coredis.tokens import PureToken
from task_store_helpers import T0, task, until_waiting

from trio_mcp._tasks._redis_store import (
    RedisTaskStore,
    TaskStoreUnavailable,
    UnsupportedOwner,
    decode_record,
    encode_record,
)
from trio_mcp._tasks._store import (
    MAX_TASKS,
    MAX_TASKS_PER_OWNER,
    REMEMBER_EXPIRED,
    TaskConflict,
    TaskExists,
    TaskLimitExceeded,
    TaskStoreError,
)
from trio_mcp.protocol import (
    Direction,
    TaskCause,
    TaskEvent,
    TaskForm,
    TaskRecord,
    TaskState,
    apply_task_event,
)
from trio_mcp.protocol._tasks import TaskMove

ROOT = Path(__file__).resolve().parents[2]


def new_prefix() -> str:
    return f"test-{uuid.uuid4().hex}:"


def fixed(now: list[float]) -> Callable[[], float]:
    return lambda: now[0]


def every_field_set() -> TaskRecord:
    """A record whose every field differs from its default (checked below)."""
    return TaskRecord(
        task_id="t-1",
        request_id="req-7",
        method="tools/call",
        direction=Direction.OUTBOUND,
        form=TaskForm.EXTENSION,
        state=TaskState.INPUT_REQUIRED,
        created_at=T0 + 0.125,
        last_updated_at=T0 + 1.5,
        ttl_ms=60_000,
        poll_interval_ms=250,
        status_message="waiting for you",
        moves=(
            TaskMove(
                TaskEvent.NEED_INPUT,
                TaskState.WORKING,
                TaskState.INPUT_REQUIRED,
                T0 + 1.5,
                TaskCause.WORK,
                "asks",
            ),
        ),
        cancel_cause=TaskCause.REQUESTOR,
        cancel_reason="changed my mind",
        cancel_requested_at=T0 + 1.25,
        late_events=("complete", "fail"),
        result={"content": [{"type": "text", "text": "é"}], "isError": False, "n": 1.5},
        error={"code": -32603, "message": "boom", "data": None},
        input_requests={"k": {"method": "elicitation/create", "params": {"a": [1, 2]}}},
        input_responses={"k": {"action": "accept", "content": {"ok": True}}},
    )


def test_a_record_round_trips_through_its_canonical_bytes() -> None:
    record = every_field_set()
    for field in attrs.fields(TaskRecord):
        default = field.default if field.default is not attrs.NOTHING else object()
        assert getattr(record, field.name) != default, f"{field.name} is left at its default"
    raw = encode_record(record)
    back = decode_record(raw)
    assert back == record
    assert type(back.moves) is tuple
    assert type(back.moves[0]) is TaskMove
    assert back.state is TaskState.INPUT_REQUIRED
    assert back.cancel_cause is TaskCause.REQUESTOR
    assert encode_record(back) == raw
    # Canonical: the order keys were inserted in does not change the bytes.
    result = record.result or {}
    reordered = attrs.evolve(record, result=dict(reversed(list(result.items()))))
    assert list(reordered.result or {}) != list(result)
    assert encode_record(reordered) == raw
    # Field names, not the wire's camelCase; None kept, so nothing is guessed back.
    assert b'"cancel_requested_at":' in raw
    assert b'"data":null' in raw


async def test_every_field_survives_the_store(redis_url: str) -> None:
    record = every_field_set()
    async with RedisTaskStore(redis_url, prefix=new_prefix(), clock=lambda: T0) as store:
        await store.create(record, "alice")
        assert await store.get(record.task_id, "alice") == record
        assert await store.list("alice", None, 5) == ([record], None)


async def test_two_stores_on_one_prefix_share_tasks_bounds_and_cursors(redis_url: str) -> None:
    opened = partial(RedisTaskStore, redis_url, prefix=new_prefix(), clock=lambda: T0, max_tasks=3)
    async with opened() as one, opened() as two:
        first, second = task(at=T0), task(at=T0)
        await one.create(first, "alice")
        await two.create(second, "alice")
        assert await two.get(first.task_id, "alice") == first
        assert await one.get(second.task_id, "alice") == second
        assert await two.get(first.task_id, "bob") is None
        # One creation order, so a cursor made by one store pages on in the other.
        page, cursor = await one.list("alice", None, 1)
        assert page == [first]
        assert cursor is not None
        assert await two.list("alice", cursor, 1) == ([second], None)
        # Ids and bounds are the shared store's.
        with pytest.raises(TaskExists):
            await two.create(task(at=T0, task_id=first.task_id), "bob")
        await one.create(task(at=T0), "bob")
        with pytest.raises(TaskLimitExceeded, match="max_tasks is 3"):
            await two.create(task(at=T0), "carol")
        # A write by one is what the other reads and deletes.
        moved = apply_task_event(first, TaskEvent.COMPLETE, T0, TaskCause.WORK)
        await two.update(first.task_id, first, moved)
        assert await one.get(first.task_id, "alice") == moved
        assert await one.delete(first.task_id) == moved
        assert await two.get(first.task_id, "alice") is None
        assert (await one.count(), await two.count()) == (2, 2)


@pytest.mark.spec("TK-12")
async def test_a_waiter_wakes_on_another_stores_update_delete_and_expiry(redis_url: str) -> None:
    now = [T0]
    opened = partial(RedisTaskStore, redis_url, prefix=new_prefix(), clock=fixed(now))
    async with opened() as here, opened() as there:
        updated, deleted, expiring = task(at=T0), task(at=T0), task(ttl_ms=60_000, at=T0)
        for record in (updated, deleted, expiring):
            await here.create(record, "alice")
        seen: dict[str, TaskRecord | None] = {}

        async def waiter(record: TaskRecord) -> None:
            seen[record.task_id] = await here.wait_changed(record.task_id, record)

        async with trio.open_nursery() as nursery:
            for record in (updated, deleted, expiring):
                nursery.start_soon(waiter, record)
            await until_waiting(here, 3)
            moved = apply_task_event(updated, TaskEvent.NEED_INPUT, T0, TaskCause.WORK)
            await there.update(updated.task_id, updated, moved)
            await there.delete(deleted.task_id)
            # The other process's clock says the ttl elapsed; its expire_due publishes.
            now[0] = T0 + 60
            (last,) = await there.expire_due()
            assert last.state is TaskState.FAILED
        assert seen == {updated.task_id: moved, deleted.task_id: None, expiring.task_id: None}
        stats = here.statistics()
        assert (stats.waiting, stats.watched, stats.messages) == (0, 0, 3)


async def test_compare_and_set_between_two_clients(redis_url: str) -> None:
    """The whole-record race of ``test_task_store.py``, across two clients: both
    read the same record; the cooperative cancel ask lands first, so the work's
    move, computed from the record before it, loses and sees the ask."""
    opened = partial(RedisTaskStore, redis_url, prefix=new_prefix(), clock=lambda: T0)
    async with opened() as work, opened() as api:
        record = attrs.evolve(task(at=T0), form=TaskForm.EXTENSION)
        await work.create(record, "alice")
        read_by_work = await work.get(record.task_id, "alice")
        read_by_api = await api.get(record.task_id, "alice")
        assert read_by_work == read_by_api == record
        assert read_by_work is not None
        assert read_by_api is not None
        asked = attrs.evolve(read_by_api, cancel_cause=TaskCause.REQUESTOR, cancel_requested_at=T0)
        await api.update(record.task_id, read_by_api, asked)
        stale = apply_task_event(read_by_work, TaskEvent.NEED_INPUT, T0, TaskCause.WORK)
        with pytest.raises(TaskConflict) as caught:
            await work.update(record.task_id, read_by_work, stale)
        assert caught.value.current == asked
        retried = apply_task_event(caught.value.current, TaskEvent.NEED_INPUT, T0, TaskCause.WORK)
        await work.update(record.task_id, caught.value.current, retried)
        stored = await api.get(record.task_id, "alice")
        assert stored is not None
        assert (stored.state, stored.cancel_cause) == (
            TaskState.INPUT_REQUIRED,
            TaskCause.REQUESTOR,
        )


async def test_equal_records_written_differently_still_compare_equal(redis_url: str) -> None:
    """An int where a float is (1764000000 and 1764000000.0, 1 and 1.0) makes
    other bytes but an equal record: the compare-and-set is on the record."""
    async with RedisTaskStore(redis_url, prefix=new_prefix(), clock=lambda: T0) as store:
        whole = int(T0)
        record = attrs.evolve(task(at=T0), created_at=whole, last_updated_at=whole, result={"n": 1})
        await store.create(record, "alice")
        read = await store.get(record.task_id, "alice")
        assert read == record
        assert read is not None
        assert encode_record(read) != encode_record(record)
        moved = apply_task_event(read, TaskEvent.NEED_INPUT, T0, TaskCause.WORK)
        assert await store.update(record.task_id, read, moved) is moved
        # And the other way round: the stored bytes say 1, the expected record 1.0.
        again = attrs.evolve(moved, result={"n": 1.0})
        assert again == moved
        assert encode_record(again) != encode_record(moved)
        done = apply_task_event(moved, TaskEvent.INPUT_RECEIVED, T0, TaskCause.REQUESTOR)
        assert await store.update(record.task_id, again, done) is done
        assert await store.get(record.task_id, "alice") == done


async def test_key_prefixes_keep_stores_apart(redis_url: str) -> None:
    async with (
        RedisTaskStore(redis_url, prefix=new_prefix(), clock=lambda: T0) as one,
        RedisTaskStore(redis_url, prefix=new_prefix(), clock=lambda: T0) as other,
    ):
        record = task(at=T0)
        await one.create(record, "alice")
        assert await other.get(record.task_id, "alice") is None
        assert await other.list("alice", None, 5) == ([], None)
        # The same id is free under another prefix, and each holds its own.
        twin = attrs.evolve(record, method="prompts/get")
        await other.create(twin, "alice")
        assert await one.get(record.task_id, "alice") == record
        assert await other.get(record.task_id, "alice") == twin
        assert (await one.count(), await other.count()) == (1, 1)
        assert await one.delete(record.task_id) == record
        assert await other.get(record.task_id, "alice") == twin


async def test_owners_are_kept_as_json_values(redis_url: str) -> None:
    async with RedisTaskStore(redis_url, prefix=new_prefix(), clock=lambda: T0) as store:
        owners = [None, "7", 7, ("tenant", 7), ("tenant", "7")]
        records = [task(at=T0) for _ in owners]
        for record, owner in zip(records, owners, strict=True):
            await store.create(record, owner)
        for record, owner in zip(records, owners, strict=True):
            assert await store.list(owner, None, 10) == ([record], None)
            others = [o for o in owners if o != owner]
            assert [await store.get(record.task_id, o) for o in others] == [None] * len(others)
        bad_owners: list[Any] = [1.5, True, ("ok", 2.5), frozenset()]
        for bad in bad_owners:
            with pytest.raises(UnsupportedOwner, match="None, str, int or tuples"):
                await store.create(task(at=T0), bad)
            with pytest.raises(UnsupportedOwner):
                await store.get(records[0].task_id, bad)


async def test_the_key_layout_and_the_backstop_ttls(redis_url: str) -> None:
    """The keys the module docstring lists, with a ready client (entered by the
    caller): a record's key lives its ttl plus ``key_margin``, an expired marker
    ``remember_expired`` plus ``key_margin``; the store's clock decides."""
    prefix = new_prefix()
    now = [T0]
    async with (
        coredis.Redis.from_url(redis_url) as client,
        RedisTaskStore(
            client, prefix=prefix, clock=fixed(now), key_margin=100.0, remember_expired=60.0
        ) as store,
    ):
        running, forever = task(ttl_ms=30_000, at=T0), task(at=T0)
        await store.create(running, "alice")
        await store.create(forever, None)
        names = {key.decode().removeprefix(prefix) for key in await client.keys(f"{prefix}*")}
        assert names == {
            f"task:{running.task_id}",
            f"task:{forever.task_id}",
            "owners",
            "order",
            'owner:"alice"',
            "owner:null",
            "due",
            "seq",
        }
        assert await client.get(f"{prefix}task:{running.task_id}") == encode_record(running)
        assert 129_000 < await client.pttl(f"{prefix}task:{running.task_id}") <= 130_000
        assert await client.pttl(f"{prefix}task:{forever.task_id}") == -1  # no ttl, no expiry
        assert await client.hget(f"{prefix}owners", running.task_id) == b'"alice"'
        assert await client.zscore(f"{prefix}due", running.task_id) == T0 + 30
        # Due by the store's clock (Redis's own is hours from it): expired, remembered.
        now[0] = T0 + 30
        (last,) = await store.expire_due()
        assert last.moves[-1].event is TaskEvent.EXPIRE
        assert await client.exists([f"{prefix}task:{running.task_id}"]) == 0
        marker = f"{prefix}expired:{running.task_id}"
        assert await client.get(marker) == f'{T0 + 30!r} "alice"'.encode()
        assert 159_000 < await client.pttl(marker) <= 160_000
        assert await client.zrange(f"{prefix}expired", 0, -1) == (running.task_id.encode(),)
        assert await store.expired(running.task_id, "alice")


async def test_a_lost_subscription_wakes_every_waiter(redis_url: str) -> None:
    """A change published while the subscription's connection is down is lost;
    once coredis has subscribed again, every waiter reads again and sees it."""
    opened = partial(RedisTaskStore, redis_url, prefix=new_prefix(), clock=lambda: T0)
    async with coredis.Redis.from_url(redis_url) as admin, opened() as here, opened() as there:
        record = task(at=T0)
        await here.create(record, "alice")
        seen: list[TaskRecord | None] = []

        async def waiter() -> None:
            seen.append(await here.wait_changed(record.task_id, record))

        with trio.fail_after(20):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(waiter)
                await until_waiting(here, 1)
                assert await admin.client_kill(type_=PureToken.PUBSUB)
                moved = apply_task_event(record, TaskEvent.FAIL, T0, TaskCause.WORK)
                await there.update(record.task_id, record, moved)
        assert seen == [moved]
        assert here.statistics().messages == 0  # the change itself never arrived
        assert here.statistics().resubscriptions == 1


async def test_a_write_cancelled_in_flight_completes(redis_url: str) -> None:
    """Cancelled before it is sent, a write is not done (``test_task_store.py``);
    once sent, its round trip is shielded: it returns, and it was done. Redis
    holds the write (``CLIENT PAUSE ... WRITE``) while the caller is cancelled."""
    async with (
        coredis.Redis.from_url(redis_url) as admin,
        RedisTaskStore(redis_url, prefix=new_prefix(), clock=lambda: T0) as store,
    ):
        record = task(at=T0)
        await store.create(record, "alice")
        moved = apply_task_event(record, TaskEvent.COMPLETE, T0, TaskCause.WORK)
        returned: list[TaskRecord] = []
        scope = trio.CancelScope()

        async def write() -> None:
            with scope:
                returned.append(await store.update(record.task_id, record, moved))
                await trio.lowlevel.checkpoint()

        async with trio.open_nursery() as nursery:
            await admin.client_pause(60_000, PureToken.WRITE)
            try:
                nursery.start_soon(write)
                await trio.testing.wait_all_tasks_blocked()
                assert not returned  # sent, held by Redis
                scope.cancel()
                await trio.testing.wait_all_tasks_blocked()
                assert not returned  # still waiting for its reply, cancelled or not
            finally:
                await admin.client_unpause()
        assert scope.cancelled_caught
        assert returned == [moved]
        assert await store.get(record.task_id, "alice") == moved


async def test_defaults_and_bad_arguments(redis_url: str) -> None:
    store = RedisTaskStore(redis_url)
    assert (store.prefix, store.max_tasks, store.max_tasks_per_owner) == (
        "trio_mcp:tasks:",
        MAX_TASKS,
        MAX_TASKS_PER_OWNER,
    )
    assert (store.remember_expired, store.key_margin) == (REMEMBER_EXPIRED, 3600.0)
    with pytest.raises(ValueError, match="at least 1"):
        RedisTaskStore(redis_url, max_tasks=0)
    with pytest.raises(ValueError, match="at least 1"):
        RedisTaskStore(redis_url, max_tasks_per_owner=0)
    with pytest.raises(ValueError, match="prefix"):
        RedisTaskStore(redis_url, prefix="")
    with pytest.raises(ValueError, match="key_margin"):
        RedisTaskStore(redis_url, key_margin=-1)
    with pytest.raises(ValueError, match="must not decode"):
        RedisTaskStore(coredis.Redis.from_url(redis_url, decode_responses=True))  # type: ignore[arg-type]


# coredis leaves the streams of a connection that never connected unclosed;
# they are collected at the end of this test, where that warning is expected.
@pytest.mark.filterwarnings("ignore:Unclosed <MemoryObject:ResourceWarning")
async def test_a_store_must_be_open_and_redis_reachable(redis_url: str, tmp_path: Path) -> None:
    store = RedisTaskStore(redis_url, prefix=new_prefix())
    with pytest.raises(TaskStoreError, match="not open"):
        await store.get("t", "alice")
    with pytest.raises(TaskStoreError, match="not open"):
        await store.count()
    async with store:
        assert await store.count() == 0
        with pytest.raises(TaskStoreError, match="already open"):
            await store.__aenter__()
    with pytest.raises(TaskStoreError, match="not open"):
        await store.create(task(at=T0), "alice")
    # Nothing listens there: opening fails at once, not retrying forever.
    nowhere = RedisTaskStore(f"unix://{tmp_path}/nothing.sock")
    with pytest.raises(TaskStoreUnavailable, match="cannot reach Redis") as caught:
        async with nowhere:
            pass
    assert isinstance(caught.value.__cause__, coredis.exceptions.ConnectionError)
    del caught, nowhere
    gc.collect()


#: The modules that import coredis, by the end of their names.
REDIS_MODULES = ("_redis_store", "_bus._redis", "_redis_nonces")


def test_coredis_is_imported_by_the_redis_store_only() -> None:
    """``import trio_mcp`` never needs coredis (the ``redis`` extra is optional)."""
    importers = set()
    for path in (ROOT / "src" / "trio_mcp").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(name.split(".")[0] == "coredis" for name in names):
                importers.add(path.relative_to(ROOT).as_posix())
            if any(
                name.endswith(("_redis_store", "_bus._redis", "_redis_nonces")) for name in names
            ):
                importers.add(f"imports the store: {path.relative_to(ROOT).as_posix()}")
            if any(name in ("_redis", "trio_mcp._redis") for name in names):
                importers.add(f"imports the setup: {path.relative_to(ROOT).as_posix()}")
    # trio_mcp.tasks names it, importing it only when asked for (the
    # subprocess below proves the import of trio_mcp.tasks does not load coredis).
    assert importers == {
        # The connection setup the three share, imported by them alone.
        "src/trio_mcp/_redis.py",
        "src/trio_mcp/_tasks/_redis_store.py",
        "src/trio_mcp/_bus/_redis.py",
        "src/trio_mcp/_server/_redis_nonces.py",
        "imports the store: src/trio_mcp/tasks.py",
        "imports the store: src/trio_mcp/bus.py",
        "imports the setup: src/trio_mcp/_tasks/_redis_store.py",
        "imports the setup: src/trio_mcp/_bus/_redis.py",
        "imports the setup: src/trio_mcp/_server/_redis_nonces.py",
    }
    code = (
        "import sys, trio_mcp, trio_mcp.lowlevel, trio_mcp.tasks, trio_mcp.bus, trio_mcp._server;"
        " print('coredis' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"
    asked = "import sys, trio_mcp.tasks as t; t.RedisTaskStore; print('coredis' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", asked], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "True"


WITHOUT_COREDIS = """
import sys
sys.modules["coredis"] = None  # as if the redis extra were not installed
from trio_mcp import MCPError
import trio_mcp.tasks
try:
    {attempt}
except MCPError as error:
    print(type(error).__name__, isinstance(error, ImportError), error.extra)
    print(error)
"""


@pytest.mark.parametrize(
    "attempt",
    [
        "from trio_mcp.tasks import RedisTaskStore",
        "trio_mcp.tasks.RedisTaskStore('redis://localhost')",
    ],
)
def test_without_the_redis_extra_the_store_names_the_extra_to_install(attempt: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", WITHOUT_COREDIS.format(attempt=attempt)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.splitlines() == [
        "MissingExtra True redis",
        "RedisTaskStore needs the redis extra: pip install 'trio_mcp[redis]'",
    ]
    # The rest of the namespace works without it.
    rest = "import sys; sys.modules['coredis'] = None; from trio_mcp.tasks import TaskRunner"
    subprocess.run([sys.executable, "-c", rest], cwd=ROOT, check=True)
