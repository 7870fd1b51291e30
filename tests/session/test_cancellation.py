"""Cancellation through the real session engine, every race made deterministic.

Inbound cancellation (the peer cancels a request we serve) is driven by a raw
fake client; outbound cancellation (our caller gives up) by a real client
against a real server, or against a raw fake server when the frames matter.

What the engine does, in one place (spec_notes/cancellation.md cites these):

* a peer cancel cancels the request's scope; the handler gets ``Cancelled`` at
  its next checkpoint and no response is ever written for it, even if the
  handler ignores the cancellation and returns a result (CN-05, CN-16);
* a peer cancel that arrives after the handler returned is ignored, even when
  the response is still waiting in the writer's queue: the response was decided
  before the cancel arrived, so exactly one response goes out (CN-06, CN-08);
* a caller's cancellation raises ``Cancelled``; the record says CALLER for an
  explicit ``cancel()`` and DEADLINE for the caller's own deadline
  (``move_on_after``/``fail_after``); the session's own timeout raises
  :class:`trio_mcp.RequestTimeout` and records DEADLINE too (the exception type
  and the reason tell them apart). In all three cases the peer is sent
  ``notifications/cancelled`` and its handler stops (CN-01, TO-02).
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from helpers import (
    FnDispatcher,
    RawPeer,
    inbound,
    open_client_with_raw_server,
    open_pair,
    open_raw_client_transport,
    open_raw_server,
    outbound,
    settle,
)

from trio_mcp import Context, RequestTimeout, Server, open_client
from trio_mcp.lowlevel import CancelOrigin, RequestContext, RequestState


def blocking_server(log: list[str], release: trio.Event | None = None) -> Server:
    """A server whose ``block`` tool logs start/finally and waits for *release*."""
    server = Server("blocking")

    @server.tool()
    async def block(ctx: Context) -> str:
        log.append(f"start {ctx.request_id}")
        try:
            if release is None:
                await trio.sleep_forever()
            else:
                await release.wait()
        finally:
            log.append(f"finally {ctx.request_id}")
        return "released"

    @server.tool()
    async def quick() -> str:
        return "quick"

    return server


def text(frame: dict[str, Any]) -> str:
    """The text of a tools/call result frame."""
    return str(frame["result"]["content"][0]["text"])


# ---------------------------------------------------------------- inbound


@pytest.mark.spec("CN-05")
@pytest.mark.spec("CN-16")
@pytest.mark.spec("A-01")
async def test_peer_cancel_cancels_the_handler_and_sends_no_response(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    async with open_raw_server(blocking_server(log)) as (peer, session):
        await peer.call_tool("block", request_id=1)
        await settle()
        assert log == ["start 1"]
        await peer.cancel(1, "user pressed stop")
        await peer.ping()  # the reader handled the cancel before this ping
        await settle()
        assert log == ["start 1", "finally 1"]
        record = inbound(session, 1)
        assert record.state is RequestState.CANCELLED
        assert record.cancel_origin is CancelOrigin.PEER
        assert record.cancel_reason == "user pressed stop"
        await peer.ping()
    # Even after the whole session shut down, nothing was ever sent for id 1.
    assert peer.about(1) == []


@pytest.mark.spec("CN-05")
@pytest.mark.spec("CN-16")
@pytest.mark.spec("PG-10")
@pytest.mark.spec("A-01")
@pytest.mark.spec("A-09")
async def test_handler_that_ignores_the_cancel_still_sends_no_response_nor_progress(
    autojump_clock: trio.testing.MockClock,
) -> None:
    cancel_seen = trio.Event()
    seen: list[bool] = []

    async def stubborn(ctx: RequestContext) -> dict[str, Any]:
        await ctx.report_progress(1)  # before the cancel: sent
        with trio.CancelScope(shield=True):
            await cancel_seen.wait()
            seen.append(ctx.cancel_requested)
            await ctx.report_progress(2)  # after the cancel: dropped
        return {"content": [{"type": "text", "text": "finished anyway"}]}

    async with open_raw_server(FnDispatcher(stubborn=stubborn)) as (peer, session):
        await peer.call_tool("stubborn", request_id=1, progress_token=1)
        progress = await peer.receive()
        assert progress["params"] == {"progressToken": 1, "progress": 1}
        await peer.cancel(1)
        await peer.ping()
        cancel_seen.set()
        await settle()
        await peer.ping()
        # The handler finished (COMPLETED), but the peer had asked to cancel, so
        # the result was not written and neither was the later progress.
        record = inbound(session, 1)
        assert record.state is RequestState.COMPLETED
        assert record.cancel_origin is CancelOrigin.PEER
        assert seen == [True]
    assert peer.about(1) == [progress]


@pytest.mark.spec("CN-06")
@pytest.mark.spec("CN-08")
@pytest.mark.spec("CN-10")
@pytest.mark.spec("A-02")
async def test_peer_cancel_after_the_response_was_written_is_ignored(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_raw_server(blocking_server([])) as (peer, session):
        await peer.call_tool("quick", request_id=1)
        response = await peer.receive()
        assert text(response) == "quick"
        ignored = session.statistics().ignored_events
        await peer.cancel(1)  # crossed the response on the wire
        await peer.ping()
        assert session.statistics().ignored_events == ignored + 1
        record = inbound(session, 1)
        assert record.state is RequestState.COMPLETED
        assert record.cancel_origin is None
        assert record.late_events == ("cancel by peer in completed: ignored",)
    # Exactly one response: the one written before the cancel arrived.
    assert peer.responses(1) == [response]


@pytest.mark.spec("CN-05")
@pytest.mark.spec("CN-08")
@pytest.mark.spec("A-02")
async def test_peer_cancel_while_the_response_waits_in_the_writer_queue_suppresses_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # The narrowest window: the handler has returned and its response sits in
    # the outgoing queue, not yet written, when the cancel arrives. A zero-buffer
    # transport and a paused peer hold the writer on an earlier frame. After a
    # peer cancel no response is ever sent, even if the handler finished.
    async with open_raw_server(blocking_server([]), buffer=0) as (peer, session):
        peer.pause()
        await peer.call_tool("quick", request_id="blocker")
        await settle()  # the writer now blocks writing the blocker's response
        await peer.call_tool("quick", request_id=2)
        await settle()  # request 2 finished; its response waits in the queue
        assert inbound(session, 2).state is RequestState.COMPLETED
        assert session.statistics().outgoing_queue_used == 1
        await peer.cancel(2)
        await settle()
        peer.resume()
        await peer.ping()
        # Nothing was written for request 2; its record stays COMPLETED (cancel
        # requested is not cancelled) and notes the peer's cancel.
        assert peer.responses(2) == []
        assert [text(f) for f in peer.responses("blocker")] == ["quick"]
        record = inbound(session, 2)
        assert (record.state, record.cancel_origin) == (RequestState.COMPLETED, CancelOrigin.PEER)
        assert record.late_events == (
            "cancel by peer in completed: the unwritten reply is suppressed",
        )
        assert session.statistics().outgoing_queue_used == 0


@pytest.mark.spec("CN-05")
@pytest.mark.spec("A-20")
async def test_peer_cancel_of_a_queued_request_means_its_handler_never_starts(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    release = trio.Event()
    async with open_raw_server(blocking_server(log, release), max_concurrent=1) as (
        peer,
        session,
    ):
        for request_id in (1, 2, 3):
            await peer.call_tool("block", request_id=request_id)
            await settle()
        assert log == ["start 1"]
        assert inbound(session, 2).state is RequestState.QUEUED
        stats = session.statistics()
        assert (stats.running, stats.queued) == (1, 2)

        await peer.cancel(2)
        await peer.ping()
        await settle()
        record = inbound(session, 2)
        assert record.state is RequestState.CANCELLED
        assert record.cancel_origin is CancelOrigin.PEER
        assert record.started_at is None

        release.set()
        await peer.wait_response(3)
        # The freed slot went to 3; 2 never ran and got no response.
        assert log == ["start 1", "finally 1", "start 3", "finally 3"]
        assert peer.responses(2) == []
        assert [text(f) for f in peer.responses(1) + peer.responses(3)] == ["released"] * 2


@pytest.mark.spec("CN-05")
@pytest.mark.parametrize("round_", range(4))
async def test_a_burst_takes_slots_in_arrival_order_and_a_cancelled_one_never_starts(
    round_: int, autojump_clock: trio.testing.MockClock
) -> None:
    # Five requests arrive in one burst (the reader reads them in one go and
    # starts five tasks in one scheduler batch, whose order Trio randomizes);
    # with one slot they must still run in arrival order. The third is
    # cancelled while it waits: it never starts. Several rounds, since a
    # random start order would pass by luck now and then.
    log: list[str] = []

    async def step(ctx: RequestContext) -> Any:
        log.append(f"start {ctx.request_id}")
        await trio.sleep(1)
        return {"content": []}

    async with open_raw_server(FnDispatcher(step=step), max_concurrent=1) as (peer, session):
        for request_id in range(1, 6):
            await peer.call_tool("step", request_id=request_id)
        await settle()
        assert log == ["start 1"]
        assert [inbound(session, i).state for i in range(1, 6)] == [RequestState.RUNNING] + [
            RequestState.QUEUED
        ] * 4
        assert (session.statistics().running, session.statistics().queued) == (1, 4)
        await peer.cancel(3)
        for request_id in (1, 2, 4, 5):
            await peer.wait_response(request_id)
        assert log == ["start 1", "start 2", "start 4", "start 5"]
        record = inbound(session, 3)
        assert (record.state, record.started_at, record.cancel_origin) == (
            RequestState.CANCELLED,
            None,
            CancelOrigin.PEER,
        )
        assert peer.responses(3) == []
        # Each ran for its second, one after the other.
        assert [inbound(session, i).started_at for i in (1, 2, 4, 5)] == [0, 1, 2, 3]
        assert (session.statistics().running, session.statistics().queued) == (0, 0)


@pytest.mark.spec("CN-06")
@pytest.mark.spec("CN-10")
@pytest.mark.spec("CN-03")
@pytest.mark.spec("A-03")
async def test_invalid_cancels_are_ignored_silently_and_the_session_goes_on(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_raw_server(blocking_server([])) as (peer, session):
        init_id = session.requests()[0].id  # the handshake's initialize
        await peer.call_tool("quick", request_id=5)
        await peer.receive()
        ignored = session.statistics().ignored_events
        await peer.cancel(999)  # never used
        await peer.cancel("unknown")
        await peer.cancel(5)  # finished
        await peer.cancel(init_id)  # initialize: never cancellable, and finished
        await peer.notify("notifications/cancelled", {"requestId": None})  # malformed
        await peer.notify("notifications/cancelled", {"requestId": True})  # malformed
        await peer.notify("notifications/cancelled", {"requestId": 5, "reason": 7})
        await peer.notify("notifications/cancelled")  # no params at all
        await peer.ping()
        assert peer.unread()[-1]["result"] == {}  # nothing but the ping's reply
        assert session.statistics().ignored_events == ignored + 8
        await peer.call_tool("quick", request_id=6)
        assert text(await peer.receive()) == "quick"


# --------------------------------------------------------------- outbound


@pytest.mark.spec("CN-01")
@pytest.mark.spec("CN-09")
async def test_caller_cancel_raises_cancelled_records_caller_and_stops_the_handler(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    async with open_pair(blocking_server(log)) as (client, server_session):
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(client.call_tool, "block")
                await settle()
                scope.cancel(reason="user pressed stop")
        assert scope.cancelled_caught
        record = outbound(client.session, "tools/call")
        assert record.state is RequestState.CANCELLED
        assert record.cancel_origin is CancelOrigin.CALLER
        assert record.cancel_reason == "user pressed stop"
        await client.ping()  # the cancel was written before this ping
        await settle()
        # The server was told (with the reason) and its handler stopped.
        served = inbound(server_session, record.id)
        assert served.state is RequestState.CANCELLED
        assert served.cancel_origin is CancelOrigin.PEER
        assert served.cancel_reason == "user pressed stop"
        assert log == [f"start {record.id}", f"finally {record.id}"]


@pytest.mark.spec("CN-01")
@pytest.mark.spec("TO-02")
async def test_caller_deadline_raises_cancelled_records_deadline(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    async with open_pair(blocking_server(log)) as (client, server_session):
        with trio.move_on_after(5) as scope:
            await client.call_tool("block")
        assert scope.cancelled_caught
        assert trio.current_time() == 5
        record = outbound(client.session, "tools/call")
        # The caller's own deadline: Cancelled (not RequestTimeout), origin DEADLINE.
        assert record.state is RequestState.CANCELLED
        assert record.cancel_origin is CancelOrigin.DEADLINE
        assert record.cancel_reason == "caller deadline"
        await client.ping()
        await settle()
        served = inbound(server_session, record.id)
        assert served.cancel_origin is CancelOrigin.PEER
        assert served.cancel_reason == "caller deadline"
        assert log == [f"start {record.id}", f"finally {record.id}"]


@pytest.mark.spec("TO-01")
@pytest.mark.spec("TO-02")
@pytest.mark.spec("CN-01")
async def test_own_timeout_raises_request_timeout_and_tells_the_peer(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    async with open_pair(blocking_server(log)) as (client, server_session):
        with pytest.raises(RequestTimeout) as info:
            await client.call_tool("block", progress_idle_timeout=30)
        assert trio.current_time() == 30
        assert info.value.idle
        assert info.value.seconds == 30
        record = outbound(client.session, "tools/call")
        assert record.state is RequestState.CANCELLED
        assert record.cancel_origin is CancelOrigin.DEADLINE
        assert record.cancel_reason == "tools/call timed out after 30s without progress"
        await client.ping()
        await settle()
        served = inbound(server_session, record.id)
        assert served.cancel_origin is CancelOrigin.PEER
        assert served.cancel_reason == record.cancel_reason
        assert log == [f"start {record.id}", f"finally {record.id}"]


@pytest.mark.spec("CN-02")
async def test_caller_cancelled_before_the_request_was_written_sends_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # A zero-buffer transport and a paused peer hold the client's writer on a
    # ping frame, so the call below is still in the outgoing queue when its
    # caller gives up.
    async with open_client_with_raw_server(buffer=0) as (peer, client):
        peer.pause()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.ping)
            await settle()
            with trio.CancelScope() as scope:
                scope.cancel()
                await client.call_tool("anything")
            record = outbound(client.session, "tools/call")
            assert record.state is RequestState.CANCELLED
            assert record.started_at is None  # never written
            assert record.cancel_origin is CancelOrigin.CALLER
            peer.resume()
            ping = await peer.receive()
            await peer.send({"jsonrpc": "2.0", "id": ping["id"], "result": {}})
        await settle()
        # Neither the request nor a cancel for it reached the peer.
        methods = [f["method"] for f in peer.frames]
        assert methods == ["initialize", "notifications/initialized", "ping"]


@pytest.mark.spec("CN-07")
@pytest.mark.spec("A-01")
async def test_late_response_after_a_caller_timeout_is_ignored_and_recorded(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_client_with_raw_server(progress_idle_timeout=10) as (peer, client):
        with pytest.raises(RequestTimeout):
            await client.call_tool("slow")
        await settle()
        request, cancel = peer.unread()
        assert request["method"] == "tools/call"
        assert cancel == {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {
                "requestId": request["id"],
                "reason": "tools/call timed out after 10s without progress",
            },
        }
        ignored = client.session.statistics().ignored_events
        # The server answers anyway (legacy servers only SHOULD stop), twice.
        late = {"content": [{"type": "text", "text": "late"}]}
        await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": late})
        await peer.send(
            {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -1, "message": "x"}}
        )
        await _ping_answered_by(peer, client.ping)
        record = outbound(client.session, "tools/call")
        assert record.state is RequestState.CANCELLED
        assert record.late_events == ("late response", "late response")
        assert client.session.statistics().ignored_events == ignored + 2


@pytest.mark.spec("CN-03")
@pytest.mark.spec("LC-13")
@pytest.mark.spec("A-03")
@pytest.mark.spec("TO-01")
async def test_initialize_timeout_sends_no_cancel_and_tears_the_transport_down(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_raw_client_transport() as (peer, transport):
        with pytest.raises(RequestTimeout) as info:
            async with open_client(transport, progress_idle_timeout=10, era="legacy"):
                pytest.fail("the handshake cannot succeed")  # pragma: no cover
        assert info.value.method == "initialize"
        assert trio.current_time() == 10
        await peer.wait_eof()
        # One frame (the initialize), then the transport was closed: no
        # notifications/cancelled for initialize, ever.
        assert [f["method"] for f in peer.frames] == ["initialize"]


@pytest.mark.spec("CN-03")
@pytest.mark.spec("LC-13")
@pytest.mark.spec("A-03")
async def test_initialize_cancelled_by_the_caller_sends_no_cancel(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_raw_client_transport() as (peer, transport):
        with trio.move_on_after(3) as scope:
            async with open_client(transport, era="legacy"):
                pytest.fail("the handshake cannot succeed")  # pragma: no cover
        assert scope.cancelled_caught
        await peer.wait_eof()
        assert [f["method"] for f in peer.frames] == ["initialize"]


async def _ping_answered_by(peer: RawPeer, ping: Any) -> None:
    """Run *ping* (a client's) while *peer* answers the ping request it sends."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ping)
        request = await peer.wait_method("ping")
        await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {}})
