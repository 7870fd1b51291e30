"""The publish/subscribe bus: its promise (order per publisher, a gap always
followed by a resync), the in-memory bus, the Redis bus against a real
redis-server (restarted mid-run), and servers on one bus hearing each other's
changes in both eras.

The Redis tests use Trio's real clock: they wait for Redis, never for time.
"""

from __future__ import annotations

import gc
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractContextManager, asynccontextmanager
from pathlib import Path

import coredis
import coredis.exceptions
import pytest
import trio
import trio.testing
from coredis.tokens import PureToken
from redis_server import running_redis

from trio_mcp import Server
from trio_mcp.bus import Bus, BusMessage, BusUnavailable, MemoryBus, RedisBus, Resync
from trio_mcp.testing import open_memory_client

URI = "memo://notes/today"


def new_prefix() -> str:
    return f"test:bus:{uuid.uuid4().hex}:"


def make_server(name: str, bus: Bus) -> Server:
    server = Server(name, bus=bus)

    @server.resource(URI)
    def today() -> str:
        return "notes"

    return server


# -- the in-memory bus


async def test_memory_bus_delivers_in_order_to_every_subscription(
    autojump_clock: trio.testing.MockClock,
) -> None:
    bus = MemoryBus()
    async with bus.subscribe("t") as one, bus.subscribe("t") as two, bus.subscribe("u") as other:
        for n in range(5):
            await bus.publish("t", b"%d" % n)
        for subscription in (one, two):
            got = [await subscription.receive() for _ in range(5)]
            assert got == [BusMessage("t", b"%d" % n) for n in range(5)]
        # Nothing was published on "u": its receive waits (here, until cancelled).
        with trio.move_on_after(1) as waited:
            await other.receive()
        assert waited.cancelled_caught


async def test_a_subscriber_that_falls_behind_gets_one_resync() -> None:
    bus = MemoryBus(max_buffer=3)
    async with bus.subscribe("t") as slow:
        for n in range(4):
            await bus.publish("t", b"%d" % n)
        await bus.publish("t", b"after")
        assert await slow.receive() == Resync("t", "the subscriber fell behind")
        assert await slow.receive() == BusMessage("t", b"after")
        assert slow.resyncs == 1


async def test_a_closed_subscription_ends_and_leaves_the_bus() -> None:
    bus = MemoryBus()
    async with bus.subscribe("t") as subscription:
        await bus.publish("t", b"x")
    assert [event async for event in subscription] == [BusMessage("t", b"x")]
    await bus.publish("t", b"nobody")  # no subscription left: nothing to deliver


# -- servers on one bus


@asynccontextmanager
async def two_instances(bus_a: Bus, bus_b: Bus) -> AsyncIterator[tuple[Server, Server]]:
    """Two servers on one bus; the first runs on its own (nobody connects to it)."""
    a, b = make_server("a", bus_a), make_server("b", bus_b)
    async with a.running():
        yield a, b


@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
async def test_a_change_on_one_instance_reaches_listeners_of_the_other(era: str) -> None:
    bus = MemoryBus()
    async with (
        two_instances(bus, bus) as (a, b),
        open_memory_client(b, protocol_version=era) as client,
        client.resource_updates(URI) as updates,
        client.events() as events,
    ):
        a.resource_updated(URI)
        with trio.fail_after(5):
            assert await updates.receive() == URI
        a.remove_resource(URI)  # a list change, made on a only
        with trio.fail_after(5):
            event = await events.receive()
        assert getattr(event, "kind", None) == "resources"


async def test_a_gap_in_the_bus_becomes_a_notice_for_every_subscription() -> None:
    bus = MemoryBus()
    server = make_server("b", bus)
    async with (
        open_memory_client(server, protocol_version="2026-07-28") as client,
        client.resource_updates(URI) as updates,
    ):
        bus.gap("reconnected to Redis")
        with trio.fail_after(5):
            assert await updates.receive() == URI


# -- the Redis bus, against a real redis-server


async def test_redis_bus_keeps_each_publishers_order(redis_url: str) -> None:
    prefix = new_prefix()
    async with (
        RedisBus(redis_url, prefix=prefix) as here,
        RedisBus(redis_url, prefix=prefix) as there,
    ):
        async with there.subscribe("t") as subscription:
            for n in range(200):
                await here.publish("t", b"%d" % n)
            with trio.fail_after(20):
                got = [await subscription.receive() for _ in range(200)]
        assert got == [BusMessage("t", b"%d" % n) for n in range(200)]
        assert there.statistics().reconnections == 0


# coredis leaves the memory streams of a connection that failed to open
# unclosed; they are collected (and their warnings dropped) here, not later.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_redis_bus_must_be_open_and_redis_reachable(redis_url: str, tmp_path: Path) -> None:
    bus = RedisBus(redis_url, prefix=new_prefix())
    with pytest.raises(BusUnavailable, match="not open"):
        await bus.publish("t", b"x")
    async with bus:
        await bus.publish("t", b"nobody listens")
        with pytest.raises(BusUnavailable, match="already open"):
            await bus.__aenter__()
    # Nothing listens there: opening fails at once, not retrying forever.
    nowhere = RedisBus(f"unix://{tmp_path}/nothing.sock")
    with pytest.raises(BusUnavailable, match="cannot reach Redis") as caught:
        async with nowhere:
            pass
    assert isinstance(caught.value.__cause__, coredis.exceptions.ConnectionError)
    del caught, nowhere
    gc.collect()


async def test_a_killed_subscription_reconnects_then_resyncs(redis_url: str) -> None:
    prefix = new_prefix()
    async with (
        coredis.Redis.from_url(redis_url) as admin,
        RedisBus(redis_url, prefix=prefix) as bus,
        bus.subscribe("t") as subscription,
    ):
        assert await admin.client_kill(type_=PureToken.PUBSUB)
        with trio.fail_after(20):
            assert await subscription.receive() == Resync("t", "reconnected to Redis")
        await bus.publish("t", b"after")
        with trio.fail_after(20):
            assert await subscription.receive() == BusMessage("t", b"after")
        assert bus.statistics().reconnections == 1


class RestartableRedis:
    """A redis-server of this test's own, stopped and started on one socket."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.url = f"unix://{directory}/redis.sock"
        self._running: AbstractContextManager[str] | None = None

    def start(self) -> None:
        self._running = running_redis(self.directory)
        assert self._running.__enter__() == self.url

    def stop(self) -> None:
        assert self._running is not None
        self._running.__exit__(None, None, None)
        self._running = None


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RestartableRedis]:
    redis = RestartableRedis(tmp_path)
    redis.start()
    try:
        yield redis
    finally:
        if redis._running is not None:
            redis.stop()


async def publish_when_back(bus: RedisBus, topic: str, data: bytes) -> None:
    """Publish; a pooled connection that died with the old server fails once."""
    for _ in range(3):
        try:
            await bus.publish(topic, data)
            return
        except BusUnavailable:
            continue
    raise AssertionError("Redis did not come back")


# Connections tried while Redis is down: see above.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_a_redis_restart_mid_run_gives_a_resync_then_messages_flow(
    own_redis: RestartableRedis,
) -> None:
    prefix = new_prefix()
    async with (
        RedisBus(own_redis.url, prefix=prefix) as here,
        RedisBus(own_redis.url, prefix=prefix) as there,
        here.subscribe("t") as mine,
        there.subscribe("t") as theirs,
    ):
        await here.publish("t", b"before")
        with trio.fail_after(20):
            assert await theirs.receive() == BusMessage("t", b"before")
            assert await mine.receive() == BusMessage("t", b"before")
        await trio.to_thread.run_sync(own_redis.stop)
        with pytest.raises(BusUnavailable):
            await here.publish("t", b"lost")
        await trio.to_thread.run_sync(own_redis.start)
        with trio.fail_after(20):
            # Never silence: each subscriber is told to re-read, then hears on.
            assert await theirs.receive() == Resync("t", "reconnected to Redis")
            assert await mine.receive() == Resync("t", "reconnected to Redis")
            await publish_when_back(here, "t", b"after")
            assert await theirs.receive() == BusMessage("t", b"after")
            assert await mine.receive() == BusMessage("t", b"after")
        assert there.statistics().reconnections == 1
    gc.collect()


# Connections tried while Redis is down: see above.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_servers_on_a_redis_bus_hear_each_other_across_a_restart(
    own_redis: RestartableRedis,
) -> None:
    """Two instances, each its own RedisBus (its own connections): a change on
    one reaches the other's listeners; Redis restarted, every listener gets a
    resync notice, then changes flow again."""
    prefix = new_prefix()
    async with (
        RedisBus(own_redis.url, prefix=prefix) as bus_a,
        RedisBus(own_redis.url, prefix=prefix) as bus_b,
        two_instances(bus_a, bus_b) as (a, b),
        open_memory_client(b, protocol_version="2026-07-28") as modern,
        open_memory_client(b, protocol_version="2025-11-25") as legacy,
        modern.resource_updates(URI) as modern_updates,
        legacy.resource_updates(URI) as legacy_updates,
    ):
        a.resource_updated(URI)
        with trio.fail_after(20):
            assert await modern_updates.receive() == URI
            assert await legacy_updates.receive() == URI
        await trio.to_thread.run_sync(own_redis.stop)
        await trio.to_thread.run_sync(own_redis.start)
        with trio.fail_after(20):
            # The resync notice: nothing was changed, but a change may have been missed.
            assert await modern_updates.receive() == URI
            assert await legacy_updates.receive() == URI
        fanout = a._scopes.fanout
        assert fanout is not None
        failures = fanout.publish_failures
        a.resource_updated(URI)
        with trio.fail_after(20):
            assert await modern_updates.receive() == URI
            assert await legacy_updates.receive() == URI
        assert fanout.publish_failures - failures <= 1
    gc.collect()
