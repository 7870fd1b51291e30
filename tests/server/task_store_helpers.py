"""Helpers of the task store tests, for the memory and the Redis store alike.

* :func:`task` makes a record; :func:`trio_wall` is the store clock that moves
  with Trio's (``T0 + trio.current_time()``), so a ``mock_clock.jump`` moves a
  record's ttl and the store's waits together and every time read back is exact.
* :func:`until_waiting` returns once *n* ``wait_changed`` calls are parked on a
  change. The Redis store waits on real sockets, where
  ``wait_all_tasks_blocked`` also returns while a reply is on its way, so the
  count is read from the store (the memory store's from its events).
* :func:`without_waiting` runs a call that must return without parking.
* :class:`MemoryBackend` and :class:`RedisBackend` open stores of their kind
  for the ``make_store`` fixture of ``test_task_store.py`` (:class:`MakeStore`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

import pytest
import trio
import trio.testing

from trio_mcp._tasks._redis_store import RedisTaskStore
from trio_mcp._tasks._store import MemoryTaskStore, TaskStore
from trio_mcp.protocol import Direction, TaskForm, TaskRecord, TaskState, new_task_id

T = TypeVar("T")

T0 = 1_764_000_000.0
#: Real seconds a waiter may take to park (a Redis round trip takes far less).
PARK_TIMEOUT = 10.0


class MakeStore(Protocol):
    """The ``make_store`` fixture: opens a store of the test's kind."""

    async def __call__(self, **options: Any) -> TaskStore: ...


class StoreBackend(Protocol):
    async def serve(
        self, options: dict[str, Any], *, task_status: trio.TaskStatus[TaskStore]
    ) -> None:
        """Open a store with *options*, hand it over, keep it open until cancelled."""


class MemoryBackend:
    async def serve(
        self, options: dict[str, Any], *, task_status: trio.TaskStatus[TaskStore]
    ) -> None:
        task_status.started(MemoryTaskStore(**options))


class RedisBackend:
    """Stores on *url* under a key prefix of their own test (unless ``prefix=``)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.prefix = f"test-{uuid.uuid4().hex}:"

    async def serve(
        self, options: dict[str, Any], *, task_status: trio.TaskStatus[TaskStore]
    ) -> None:
        async with RedisTaskStore(self.url, **{"prefix": self.prefix, **options}) as store:
            task_status.started(store)
            await trio.sleep_forever()


def trio_wall() -> float:
    return T0 + trio.current_time()


def task(
    ttl_ms: int | None = None, *, at: float | None = None, task_id: str | None = None
) -> TaskRecord:
    now = trio_wall() if at is None else at
    return TaskRecord(
        task_id=task_id or new_task_id(),
        request_id=1,
        method="tools/call",
        direction=Direction.INBOUND,
        form=TaskForm.V2025_11_25,
        state=TaskState.WORKING,
        created_at=now,
        last_updated_at=now,
        ttl_ms=ttl_ms,
    )


async def held(store: TaskStore) -> int:
    """Tasks held (expired ones not yet dropped included)."""
    if isinstance(store, MemoryTaskStore):
        return len(store)
    assert isinstance(store, RedisTaskStore)
    return await store.count()


def waiting(store: TaskStore) -> int:
    """``wait_changed`` calls parked on a change now."""
    if isinstance(store, MemoryTaskStore):
        return sum(event.statistics().tasks_waiting for event in store._changed.values())
    assert isinstance(store, RedisTaskStore)
    return store.statistics().waiting


async def until_waiting(store: TaskStore, count: int) -> None:
    """Return once *count* ``wait_changed`` calls are parked on a change."""
    deadline = time.monotonic() + PARK_TIMEOUT
    while waiting(store) < count:
        if time.monotonic() > deadline:
            pytest.fail(f"{count} waiters did not park ({waiting(store)} did)")
        await trio.testing.wait_all_tasks_blocked()


async def without_waiting(store: TaskStore, call: Callable[[], Awaitable[T]]) -> T:
    """``call()``'s result; a failure if it parks on a change instead of returning."""
    results: list[T] = []
    async with trio.open_nursery() as nursery:

        async def run() -> None:
            results.append(await call())
            nursery.cancel_scope.cancel()

        nursery.start_soon(run)
        await until_waiting(store, 1)  # returns only if the call parked
        nursery.cancel_scope.cancel()
    if not results:
        pytest.fail("the call parked instead of returning at once")
    return results[0]
