"""A session whose owner reads its transport (``open_session(reader=False)``
and :meth:`Session.read_transport`), and tasks of the session's own nursery
(:meth:`Session.start_soon`).

The owner's task does the reader's work, so the session has no reader task:
a server's task per session has nothing else to do, and an idle session is a
task and its frames lighter (issue #16). Everything a reader task does still
happens: the end of the peer's side cancels running requests with origin
``transport``, closing the session from any task ends the reading, and a
cancelled owner shuts the session down as usual.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import trio
import trio.testing
from helpers import (
    FnDispatcher,
    Recorder,
    blocking_handler,
    initialize_frame,
    server_connection,
    task_names,
)

from trio_mcp import Server
from trio_mcp._server._registry import serve_session
from trio_mcp.lowlevel import CancelOrigin, RequestContext, RequestState, Session, open_session
from trio_mcp.protocol import ConnectionFactory, FrameDirection
from trio_mcp.testing import memory_transport_pair

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
READER = "trio_mcp reader"


def call(request_id: Any, tool: str) -> bytes:
    params = {"name": tool, "arguments": {}, "_meta": META}
    return orjson.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    )


def modern_protocol() -> ConnectionFactory:
    return server_connection(stateless=MODERN, capabilities={"tools": {}})


async def test_the_owner_reads_serves_requests_and_returns_at_the_peers_end() -> None:
    async def hello(ctx: RequestContext) -> Any:
        return {"content": [{"type": "text", "text": "hi"}]}

    recorder = Recorder()
    ours, peer = memory_transport_pair()
    async with (
        peer,
        open_session(
            ours, modern_protocol(), FnDispatcher(hello=hello), reader=False, observer=recorder
        ) as session,
        trio.open_nursery() as nursery,
    ):

        async def client() -> None:
            for request_id in (1, 2):
                await peer.send(call(request_id, "hello"))
                assert orjson.loads(await peer.receive())["id"] == request_id
            # No reader task: the owner (this test's task) does the reading.
            assert READER not in task_names()
            await peer.aclose()

        nursery.start_soon(client)
        await session.read_transport()
        # Returned at the peer's end-of-channel, as a reader task would stop.
        assert session.closed
        assert session.close_origin is CancelOrigin.TRANSPORT
    assert [d for d, _, _ in recorder.frames] == [FrameDirection.IN, FrameDirection.OUT] * 2


@pytest.mark.spec("CN-13")
async def test_the_peers_end_cancels_a_running_request_with_origin_transport(
    autojump_clock: trio.testing.MockClock,
) -> None:
    started = trio.Event()

    async def forever(ctx: RequestContext) -> Any:
        started.set()
        await trio.sleep_forever()

    ours, peer = memory_transport_pair()
    async with (
        open_session(
            ours, modern_protocol(), FnDispatcher(forever=forever), reader=False
        ) as session,
        trio.open_nursery() as nursery,
    ):

        async def client() -> None:
            await peer.send(call(3, "forever"))
            await started.wait()
            await peer.aclose()

        nursery.start_soon(client)
        await session.read_transport()
        await session.wait_inbound_settled()
    (record,) = [r for r in session.requests() if r.id == 3]
    assert record.state is RequestState.CANCELLED
    assert record.cancel_origin is CancelOrigin.TRANSPORT


async def test_closing_the_session_from_another_task_ends_the_reading(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ours, peer = memory_transport_pair()
    returned_at: list[float] = []
    async with (
        peer,
        open_session(ours, modern_protocol(), FnDispatcher(), reader=False) as session,
        trio.open_nursery() as nursery,
    ):
        nursery.start_soon(session.aclose, "closed elsewhere")
        # The peer never ends its side: only the close can end the reading.
        await session.read_transport()
        returned_at.append(trio.current_time())
        assert session.closed
        assert session.close_origin is CancelOrigin.SHUTDOWN
        assert session.close_reason == "closed elsewhere"
    assert returned_at == [0.0]


async def test_a_cancelled_owner_stops_reading_and_the_session_shuts_down(
    autojump_clock: trio.testing.MockClock,
) -> None:
    started, forever = blocking_handler()
    ours, peer = memory_transport_pair()
    recorder = Recorder()
    with trio.CancelScope() as owner:
        async with (
            peer,
            open_session(
                ours,
                modern_protocol(),
                FnDispatcher(forever=forever),
                reader=False,
                observer=recorder,
            ) as session,
            trio.open_nursery() as nursery,
        ):

            async def cancel_once_running() -> None:
                await peer.send(call(4, "forever"))
                await started.wait()
                owner.cancel()

            nursery.start_soon(cancel_once_running)
            await session.read_transport()
            raise AssertionError("read_transport returned under its owner's cancel")
    assert owner.cancelled_caught
    assert session.closed
    terminal = [r for r, _ in recorder.transitions if r.id == 4 and r.state.is_terminal]
    assert [r.state for r in terminal] == [RequestState.CANCELLED]


async def test_read_transport_is_refused_with_a_reader_task_twice_at_once_and_beside_feed() -> None:
    ours, peer = memory_transport_pair()
    async with peer, open_session(ours, modern_protocol(), FnDispatcher()) as session:
        with pytest.raises(RuntimeError, match="reader=False"):
            await session.read_transport()

    ours, peer = memory_transport_pair()
    async with (
        peer,
        open_session(ours, modern_protocol(), FnDispatcher(), reader=False) as session,
        trio.open_nursery() as nursery,
    ):
        nursery.start_soon(session.read_transport)
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(RuntimeError, match="already reading"):
            await session.read_transport()
        with pytest.raises(RuntimeError, match="two takers"):
            await session.feed(call(1, "any"))
        await peer.aclose()


async def test_read_transport_on_a_closed_session_returns_at_once() -> None:
    ours, peer = memory_transport_pair()
    async with peer, open_session(ours, modern_protocol(), FnDispatcher(), reader=False) as session:
        session.feed_eof()
        await session.read_transport()
        assert session.closed


async def test_a_task_of_the_session_runs_until_the_session_has_shut_down() -> None:
    ours, peer = memory_transport_pair()
    events: list[str] = []

    async def background(session: Session) -> None:
        try:
            await trio.sleep_forever()
        finally:
            # Cancelled only once the shutdown sequence is over.
            events.append(f"cancelled, closed={session.closed}")

    async with peer, open_session(ours, modern_protocol(), FnDispatcher()) as session:
        session.start_soon(background, session, name="background")
        await trio.testing.wait_all_tasks_blocked()
        assert "background" in task_names()
        events.append("body left")
    assert events == ["body left", "cancelled, closed=True"]


async def test_a_served_idle_session_runs_in_one_task() -> None:
    server = Server("m", "1.0")
    ours, theirs = memory_transport_pair()
    async with trio.open_nursery() as nursery:
        session = await nursery.start(serve_session, server, theirs)
        await ours.send(initialize_frame())
        assert orjson.loads(await ours.receive())["id"] == 1
        await ours.send(orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        await trio.testing.wait_all_tasks_blocked()
        # The serving task is the reader; nothing else runs for an idle session.
        (served,) = [
            child
            for nursery_ in trio.lowlevel.current_task().child_nurseries
            for child in nursery_.child_tasks
        ]
        assert [t.name for n in served.child_nurseries for t in n.child_tasks] == []
        assert READER not in task_names()
        await ours.aclose()
    assert session.closed
    assert session.close_origin is CancelOrigin.TRANSPORT
