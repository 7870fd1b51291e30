"""What an idle session holds, and the lazily made structures behind it.

An idle session keeps no notifier task, no retained frame, no GET stream or
backlog until one is needed; these tests pin the behaviour of the code that
makes them on demand (the on-demand notifier keeps receive order and its bound,
the HTTP transport's own inbound FIFO behaves as the memory channel it
replaced) and bound the memory of an idle in-memory session.
"""

from __future__ import annotations

import gc
import sys
import tracemalloc
from typing import Any

import orjson
import pytest
import trio
import trio.testing
from helpers import FnDispatcher, open_raw_server, task_names

from trio_mcp import Server
from trio_mcp._server._registry import serve_session
from trio_mcp.lowlevel import RequestState, Session
from trio_mcp.protocol import CancelOrigin, Connection, NotificationReceived, Role
from trio_mcp.testing import memory_transport_pair
from trio_mcp.transports._http.server._event_store import MemoryEventStore
from trio_mcp.transports._http.server._transport import HttpServerTransport, compact

NOTIFIER = "trio_mcp notifier"


class GatedDispatcher(FnDispatcher):
    """Notifications are recorded in order; the handler blocks while ``gate`` is unset."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = trio.Event()
        self.gate.set()

    async def handle_notification(self, session: Session, event: NotificationReceived) -> None:
        await self.gate.wait()
        self.notifications.append(event)


def _roots_changed() -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}


async def test_the_notifier_runs_only_while_notifications_wait(
    autojump_clock: trio.testing.MockClock,
) -> None:
    dispatcher = GatedDispatcher()
    async with open_raw_server(dispatcher) as (peer, _session):
        await trio.testing.wait_all_tasks_blocked()
        assert NOTIFIER not in task_names()
        dispatcher.gate = trio.Event()
        await peer.send(_roots_changed())
        await trio.testing.wait_all_tasks_blocked()
        assert NOTIFIER in task_names()
        dispatcher.gate.set()
        await trio.testing.wait_all_tasks_blocked()
        assert NOTIFIER not in task_names()
        # initialized (from the handshake) and the one above, in order.
        assert [n.method for n in dispatcher.notifications] == [
            "notifications/initialized",
            "notifications/roots/list_changed",
        ]


async def test_notifications_keep_receive_order_and_the_bound_holds_the_reader(
    autojump_clock: trio.testing.MockClock,
) -> None:
    dispatcher = GatedDispatcher()
    async with open_raw_server(dispatcher, outgoing_buffer=2) as (peer, _session):
        await trio.testing.wait_all_tasks_blocked()
        dispatcher.gate = trio.Event()
        for _ in range(4):
            await peer.send(_roots_changed())
        ping_id = await peer.send_request("ping")
        await trio.testing.wait_all_tasks_blocked()
        # The reader waits for room: the ping is not read yet.
        assert peer.responses(ping_id) == []
        dispatcher.gate.set()
        await peer.wait_response(ping_id)
        await trio.testing.wait_all_tasks_blocked()
        assert NOTIFIER not in task_names()
    assert [n.method for n in dispatcher.notifications] == [
        "notifications/initialized",
        *["notifications/roots/list_changed"] * 4,
    ]


async def test_an_idle_in_memory_session_stays_small() -> None:
    server = Server("m", "1.0")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    init = orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"},
            },
        }
    )
    note = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
    count = 50
    ends: list[Any] = []

    async def open_one(nursery: trio.Nursery) -> None:
        ours, theirs = memory_transport_pair()
        await nursery.start(serve_session, server, theirs)
        await ours.send(init)
        await ours.receive()
        await ours.send(note)
        ends.append(ours)

    async with trio.open_nursery() as nursery:
        for _ in range(3):  # warm caches
            await open_one(nursery)
        await trio.testing.wait_all_tasks_blocked()
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.take_snapshot()
            for _ in range(count):
                await open_one(nursery)
            await trio.testing.wait_all_tasks_blocked()
            gc.collect()
            after = tracemalloc.take_snapshot()
        finally:
            tracemalloc.stop()
        per_session = sum(s.size_diff for s in after.compare_to(before, "filename")) / count
        nursery.cancel_scope.cancel()
    # About 24 KiB here, the memory transport pair's channels included (36 KiB
    # before the notifier, the retained last frame and the protocol's
    # containers were trimmed); the bound leaves room for other versions.
    assert per_session < 30 * 1024, per_session


def test_compact_copies_a_frame_to_its_exact_size() -> None:
    frame = orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": {}})
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        copy = compact(frame)
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    assert copy == frame
    assert copy is not frame
    # orjson's own block is ~4 KiB whatever the length; the copy is ~100 bytes
    # (plus the snapshot's bookkeeping).
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    assert grown < 1024, grown


async def test_the_event_store_and_get_backlog_keep_equal_frames() -> None:
    store = MemoryEventStore()
    transport = HttpServerTransport("sid", event_store=store)
    transport.protocol_version = "2025-11-25"
    frame = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    await transport.send(frame)
    conn = transport.attach(transport.get_stream)
    event_id, data = conn.take_nowait()
    assert data == frame
    assert event_id is not None
    assert store.events_after_nowait("sid", event_id) == ("0", [])
    transport.close()


async def test_an_answered_stream_leaves_its_tables_as_small_as_new_ones() -> None:
    # A dict keeps the size it grew to; an idle session's tables are empty,
    # so they are made afresh when they empty (issue #16).
    empty = sys.getsizeof({})
    transport = HttpServerTransport("sid")
    for request_id in range(1, 4):
        stream = transport.open_stream([request_id], {}, json=True)
        assert sys.getsizeof(transport._by_request) > empty
        await transport.send(orjson.dumps({"jsonrpc": "2.0", "id": request_id, "result": {}}))
        assert stream.done
        assert transport.live_stream(stream.stream_id) is None
        assert sys.getsizeof(transport._by_request) == empty
        assert sys.getsizeof(transport._streams) == empty
    transport.close()


def test_a_finished_inbound_request_leaves_the_book_table_as_small_as_a_new_one() -> None:
    protocol = Connection(Role.SERVER, capabilities={"tools": {}})
    protocol.start_stateless("2026-07-28")
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    frame = orjson.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}
    )
    assert [type(e).__name__ for e in protocol.receive_data(frame)] == ["RequestReceived"]
    protocol.start_inbound(1)
    assert sys.getsizeof(protocol._book._inbound) > sys.getsizeof({})
    protocol.respond(1, {"tools": []})
    assert sys.getsizeof(protocol._book._inbound) == sys.getsizeof({})
    (record,) = protocol.requests()
    assert (record.id, record.state) == (1, RequestState.COMPLETED)


# ------------------------------------------------ the HTTP transport's inbox


async def test_inbox_is_fifo_and_waits_for_room(autojump_clock: trio.testing.MockClock) -> None:
    transport = HttpServerTransport("sid", inbound_buffer=2)
    delivered: list[bytes] = []

    async def post(frame: bytes) -> None:
        await transport.deliver(frame)
        delivered.append(frame)

    async with trio.open_nursery() as nursery:
        for i in range(5):
            nursery.start_soon(post, b"%d" % i)
            await trio.testing.wait_all_tasks_blocked()
        assert delivered == [b"0", b"1"]  # the rest wait for room
        got = [await transport.receive() for _ in range(5)]
    assert got == [b"0", b"1", b"2", b"3", b"4"]
    assert delivered == got


async def test_inbox_peer_closed_drains_then_ends_and_fails_waiting_posts() -> None:
    transport = HttpServerTransport("sid", inbound_buffer=1)
    failed: list[BaseException] = []

    async def post(frame: bytes) -> None:
        try:
            await transport.deliver(frame)
        except trio.ClosedResourceError as exc:
            failed.append(exc)

    async with trio.open_nursery() as nursery:
        await transport.deliver(b"a")
        nursery.start_soon(post, b"b")
        await trio.testing.wait_all_tasks_blocked()
        transport.peer_closed()
    assert len(failed) == 1
    assert await transport.receive() == b"a"
    with pytest.raises(trio.EndOfChannel):
        await transport.receive()
    with pytest.raises(trio.ClosedResourceError, match="session closed"):
        await transport.deliver(b"c")


async def test_inbox_close_wakes_the_reader_with_end_of_channel() -> None:
    transport = HttpServerTransport("sid")
    outcome: list[str] = []

    async def read() -> None:
        try:
            await transport.receive()
        except trio.EndOfChannel:
            outcome.append("eof")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read)
        await trio.testing.wait_all_tasks_blocked()
        transport.close()
    assert outcome == ["eof"]
    with pytest.raises(trio.ClosedResourceError, match="transport closed"):
        await transport.receive()


async def test_inbox_cancelled_deliver_delivers_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    transport = HttpServerTransport("sid", inbound_buffer=1)
    await transport.deliver(b"kept")
    with trio.move_on_after(1) as scope:
        await transport.deliver(b"dropped")
    assert scope.cancelled_caught
    assert await transport.receive() == b"kept"
    with trio.move_on_after(1) as scope:
        await transport.receive()
    assert scope.cancelled_caught


async def test_inbox_of_size_zero_is_a_rendezvous() -> None:
    transport = HttpServerTransport("sid", inbound_buffer=0)
    got: list[bytes] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(transport.deliver, b"x")
        await trio.testing.wait_all_tasks_blocked()
        got.append(await transport.receive())
    assert got == [b"x"]


async def test_a_second_concurrent_receive_is_busy() -> None:
    transport = HttpServerTransport("sid")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(transport.receive)
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(trio.BusyResourceError):
            await transport.receive()
        await transport.deliver(b"x")


def test_history_switches_to_a_bounded_deque_and_stays_exact() -> None:
    # Past 32 entries the history becomes a deque; below, and for small
    # bounds, it is a list kept to the same bound.
    for size in (0, 5, 40, 1000):
        protocol = Connection(Role.CLIENT, history=size)
        ids = []
        for _ in range(60):
            request = protocol.send_request("ping")
            protocol.cancel_outbound(request.id, CancelOrigin.CALLER)
            ids.append(request.id)
        expected = ids[len(ids) - size :] if size else []
        assert [r.id for r in protocol.requests()] == expected
        assert protocol.statistics().cancelled == 60
