"""The queue in front of the handlers is bounded (reliability R-09, D-08).

Before: a peer could pipeline any number of requests past ``max_concurrent``;
each got a record and a task at once (an audit flooded 100,000 ``tools/call``s:
1.7 GB). Now at most ``max_queued`` wait for a slot; the next one is answered
at once with -32005, gets no task, and the session goes on.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from helpers import FnDispatcher, inbound, open_raw_server, settle

from trio_mcp.lowlevel import RequestContext, RequestState, open_session
from trio_mcp.protocol import ErrorCode
from trio_mcp.testing import memory_transport_pair


def _blocking(release: trio.Event) -> FnDispatcher:
    async def block(ctx: RequestContext) -> Any:
        await release.wait()
        return {"content": [{"type": "text", "text": f"done {ctx.request_id}"}]}

    return FnDispatcher(block=block)


async def test_requests_past_the_bound_are_refused_at_once_without_a_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    release = trio.Event()
    async with open_raw_server(_blocking(release), max_concurrent=1, max_queued=2) as (
        peer,
        session,
    ):
        for request_id in range(1, 6):
            await peer.call_tool("block", request_id=request_id)
        await settle()
        # 1 runs, 2 and 3 wait; 4 and 5 were refused at once, with their ids.
        for request_id in (4, 5):
            [refusal] = peer.responses(request_id)
            assert refusal["error"]["code"] == -32005 == int(ErrorCode.TOO_MANY_REQUESTS)
            assert inbound(session, request_id).state is RequestState.FAILED
        assert session._inbound.tasks == 3
        stats = session.statistics()
        assert (stats.running, stats.queued, stats.failed) == (1, 2, 2)
        # Ping is answered meanwhile (by the reader, PI-02).
        assert (await peer.ping())["result"] == {}
        release.set()
        for request_id in (1, 2, 3):
            response = await peer.wait_response(request_id)
            assert response["result"]["content"][0]["text"] == f"done {request_id}"
        # Room again: the next request runs.
        await peer.call_tool("block", request_id=6)
        assert "result" in await peer.wait_response(6)


async def test_a_cancelled_waiter_frees_its_place_in_line(
    autojump_clock: trio.testing.MockClock,
) -> None:
    release = trio.Event()
    async with open_raw_server(_blocking(release), max_concurrent=1, max_queued=1) as (
        peer,
        session,
    ):
        await peer.call_tool("block", request_id=1)
        await peer.call_tool("block", request_id=2)  # waits
        await settle()
        await peer.cancel(2)  # leaves the line
        await settle()
        assert inbound(session, 2).state is RequestState.CANCELLED
        await peer.call_tool("block", request_id=3)  # takes the freed place
        await settle()
        assert inbound(session, 3).state is RequestState.QUEUED
        assert peer.responses(3) == []
        release.set()
        assert "result" in await peer.wait_response(3)


async def test_a_flood_never_grows_the_tasks_past_the_bound(
    autojump_clock: trio.testing.MockClock,
) -> None:
    release = trio.Event()
    async with open_raw_server(_blocking(release), buffer=0, max_concurrent=4, max_queued=16) as (
        peer,
        session,
    ):
        peak = 0
        for request_id in range(1, 2001):
            await peer.call_tool("block", request_id=request_id)
            peak = max(peak, session._inbound.tasks)
        await settle()
        assert peak == session._inbound.tasks == 4 + 16
        refused = [
            f for f in peer.frames if f.get("error", {}).get("code") == ErrorCode.TOO_MANY_REQUESTS
        ]
        assert len(refused) == 2000 - 20
        assert session.statistics().failed == 2000 - 20
        release.set()
        assert "result" in await peer.wait_response(20)
        assert not session.closed


async def test_a_negative_bound_is_refused() -> None:
    a, _ = memory_transport_pair()
    with pytest.raises(ValueError, match="max_queued"):
        async with open_session(a, None, None, max_queued=-1):  # type: ignore[arg-type]
            pass  # pragma: no cover


async def test_a_peer_that_stops_reading_stops_being_read(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Before: a handler gave its slot back before its reply was queued, so
    # while the writer was stuck behind a peer that does not read, every new
    # request still ran and its reply piled up (unbounded memory, found by
    # tests/transports/websocket/test_websocket_edges.py's slow reader). Now the slots
    # stay taken until the replies are queued: the queue fills, the reader
    # blocks on the refusals, and the transport's back-pressure stops the peer.
    async def echo(ctx: RequestContext) -> Any:
        return {"content": [{"type": "text", "text": "x" * 1000}]}

    async with open_raw_server(
        FnDispatcher(echo=echo), buffer=0, max_concurrent=2, max_queued=2, outgoing_buffer=2
    ) as (peer, session):
        peer.pause()
        sent = 0

        async def flood() -> None:
            nonlocal sent
            for request_id in range(1, 1001):
                await peer.call_tool("echo", request_id=request_id)
                sent += 1

        async with trio.open_nursery() as nursery:
            nursery.start_soon(flood)
            await settle()
            # Bounded: 2 running (replies waiting), 2 queued, a few frames in
            # the queues; the flood itself is blocked.
            assert sent < 20
            assert session._inbound.tasks <= 4
            peer.resume()  # read again: everything drains, in order
        await peer.wait_response(1000)
        await settle()
        answered = {f["id"] for f in peer.frames if "id" in f and "method" not in f}
        assert set(range(1, 1001)) <= answered
        assert not session.closed
