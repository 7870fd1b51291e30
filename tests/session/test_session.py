"""The session engine end to end: error boundary, concurrency, shutdown, EOF,
statistics and the observer. Everything runs on the autojump clock.

Shutdown order, as observed (leaving ``open_session`` or ``Session.aclose``):

1. new inbound requests get -32000 "The session is closing" (ping is still
   answered); new outbound calls raise :class:`SessionClosed`;
2. pending outbound calls fail with ``SessionClosed(origin=SHUTDOWN)`` and the
   peer gets ``notifications/cancelled`` for each;
3. running handlers get ``shutdown_grace`` seconds; their responses are sent;
   then the rest are cancelled (records CANCELLED, origin SHUTDOWN) and the peer
   gets -32001 "Request cancelled by the shutdown: ..." for each;
4. the writer flushes, then the transport is closed.

When the scope *enclosing* the session is cancelled, the whole session nursery
is cancelled at once: handlers stop immediately, the writer is gone, so neither
the -32001 replies nor the notifications/cancelled are written; the records
still end CANCELLED (origin SHUTDOWN) and the transport is still closed, all
without waiting. A handler that shields itself from cancellation delays the
exit for as long as it shields; its late reply is dropped.
"""

from __future__ import annotations

import itertools
from functools import partial
from typing import Any

import attrs
import orjson
import pytest
import trio
import trio.testing
from helpers import (
    FnDispatcher,
    RawPeer,
    Recorder,
    SpyTransport,
    inbound,
    open_pair,
    open_raw_client_transport,
    open_raw_server,
    outbound,
    settle,
)

from trio_mcp import Context, RPCError, Server, SessionClosed, open_client
from trio_mcp.lowlevel import (
    CancelOrigin,
    Direction,
    FrameDirection,
    RequestContext,
    RequestState,
    SessionState,
    open_session,
)
from trio_mcp.protocol import TRANSITIONS, Connection, Role
from trio_mcp.testing import memory_transport_pair


def result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}]}


async def sleep_for(ctx: RequestContext) -> dict[str, Any]:
    """``sleep`` tool of the FnDispatcher tests: sleeps ``seconds``."""
    seconds = (ctx.params.arguments or {})["seconds"]
    await trio.sleep(seconds)
    return result(f"slept {seconds}")


# ------------------------------------------------------------ error boundary


@pytest.mark.spec("BP-07")
async def test_a_handler_exception_is_an_internal_error_without_internals(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def boom(ctx: RequestContext) -> Any:
        raise ValueError("secret /etc/shadow token=hunter2")

    async with open_raw_server(FnDispatcher(boom=boom)) as (peer, session):
        await peer.call_tool("boom", request_id=1)
        reply = await peer.receive()
        assert reply == {
            "jsonrpc": "2.0",
            "id": 1,
            "error": {"code": -32603, "message": "Internal error"},
        }
        assert b"hunter2" not in orjson.dumps(peer.frames)
        record = inbound(session, 1)
        assert record.state is RequestState.FAILED
        assert record.error is not None
        assert record.error.code == -32603
        await peer.ping()  # the session goes on


@pytest.mark.spec("BP-07")
async def test_an_rpc_error_from_a_handler_is_sent_as_is(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def missing(ctx: RequestContext) -> Any:
        raise RPCError(-32002, "Resource not found", {"uri": "file:///nope"})

    async with open_raw_server(FnDispatcher(missing=missing)) as (peer, session):
        await peer.call_tool("missing", request_id="r")
        reply = await peer.receive()
        assert reply["error"] == {
            "code": -32002,
            "message": "Resource not found",
            "data": {"uri": "file:///nope"},
        }
        assert reply["id"] == "r"
        assert inbound(session, "r").state is RequestState.FAILED
        await peer.ping()


@pytest.mark.spec("BP-07")
async def test_exception_groups_from_a_handler_nursery_are_split(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def fail(exc: Exception) -> None:
        raise exc

    async def many(ctx: RequestContext) -> Any:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(fail, ValueError("secret one"))
            nursery.start_soon(fail, KeyError("secret two"))

    async def one_rpc(ctx: RequestContext) -> Any:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.sleep_forever)
            nursery.start_soon(fail, RPCError(-32602, "Bad argument", {"field": "x"}))

    async with open_raw_server(FnDispatcher(many=many, one_rpc=one_rpc)) as (peer, session):
        # Several errors: -32603, no internals.
        await peer.call_tool("many", request_id=1)
        assert (await peer.receive())["error"] == {"code": -32603, "message": "Internal error"}
        assert b"secret" not in orjson.dumps(peer.frames)
        # A group of exactly one RPCError: that error.
        await peer.call_tool("one_rpc", request_id=2)
        reply = await peer.receive()
        assert reply["error"] == {"code": -32602, "message": "Bad argument", "data": {"field": "x"}}
        assert inbound(session, 1).state is RequestState.FAILED
        assert inbound(session, 2).state is RequestState.FAILED
        await peer.ping()


@pytest.mark.spec("CN-05")
async def test_a_group_holding_cancelled_means_cancelled(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def cleanup_fails() -> None:
        try:
            await trio.sleep_forever()
        finally:
            raise ValueError("cleanup failed")

    async def messy(ctx: RequestContext) -> Any:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.sleep_forever)
            nursery.start_soon(cleanup_fails)

    async with open_raw_server(FnDispatcher(messy=messy)) as (peer, session):
        await peer.call_tool("messy", request_id=1)
        await settle()
        await peer.cancel(1)
        await peer.ping()
        await settle()
        # The group held Cancelled and a ValueError: the cancellation wins (the
        # error is logged), so the record is CANCELLED and nothing is sent.
        record = inbound(session, 1)
        assert record.state is RequestState.CANCELLED
        assert record.cancel_origin is CancelOrigin.PEER
        await peer.ping()
        assert peer.responses(1) == []


@pytest.mark.spec("CN-05")
async def test_a_cancelled_handler_sees_cancelled_and_it_is_not_an_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[type[BaseException]] = []

    async def watched(ctx: RequestContext) -> Any:
        try:
            await trio.sleep_forever()
        except BaseException as exc:
            seen.append(type(exc))
            raise

    async with open_raw_server(FnDispatcher(watched=watched)) as (peer, session):
        await peer.call_tool("watched", request_id=1)
        await settle()
        await peer.cancel(1)
        await peer.ping()
        await settle()
        assert seen == [trio.Cancelled]
        record = inbound(session, 1)
        assert (record.state, record.error) == (RequestState.CANCELLED, None)
        assert session.statistics().failed == 0


@pytest.mark.spec("BP-07")
async def test_a_result_that_is_not_json_is_an_internal_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def nan(ctx: RequestContext) -> Any:
        return {"content": [], "value": float("nan")}

    async with open_raw_server(FnDispatcher(nan=nan)) as (peer, session):
        await peer.call_tool("nan", request_id=1)
        reply = await peer.receive()
        assert reply["error"]["code"] == -32603
        assert inbound(session, 1).state is RequestState.FAILED
        await peer.ping()


async def test_a_tool_exception_is_a_tool_error_result_without_internals(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("tools")

    @server.tool()
    async def boom() -> str:
        raise RuntimeError("secret token=hunter2")

    async with open_pair(server) as (client, _):
        outcome = await client.call_tool("boom")
        assert outcome.is_error
        assert outcome.content[0].text == "Tool boom failed"  # type: ignore[union-attr]
        await client.ping()


# --------------------------------------------------------------- concurrency


@pytest.mark.spec("PI-02")
@pytest.mark.spec("A-20")
async def test_ping_is_answered_promptly_while_every_slot_is_busy(
    autojump_clock: trio.testing.MockClock,
) -> None:
    release = trio.Event()

    async def block(ctx: RequestContext) -> Any:
        await release.wait()
        return result("released")

    async with open_raw_server(FnDispatcher(block=block), max_concurrent=2) as (peer, session):
        for request_id in range(1, 5):
            await peer.call_tool("block", request_id=request_id)
        await settle()
        stats = session.statistics()
        assert (stats.running, stats.queued, stats.max_concurrent) == (2, 2, 2)
        before = trio.current_time()
        reply = await peer.ping()
        assert reply["result"] == {}
        assert trio.current_time() == before  # answered at once
        assert [f["id"] for f in peer.unread()] == [reply["id"]]  # and nothing else
        release.set()
        for request_id in range(1, 5):
            await peer.wait_response(request_id)


@pytest.mark.spec("PI-02")
@pytest.mark.spec("A-20")
async def test_a_real_client_pings_a_saturated_server(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("busy")

    @server.tool()
    async def block() -> str:
        await trio.Event().wait()  # forever
        return "unreachable"  # pragma: no cover

    async with (
        open_pair(server, server_options={"max_concurrent": 1}) as (client, server_session),
        trio.open_nursery() as nursery,
    ):
        for _ in range(3):
            nursery.start_soon(client.call_tool, "block")
        await settle()
        assert server_session.statistics().queued == 2
        before = trio.current_time()
        await client.ping()
        assert trio.current_time() == before  # not a moment of waiting
        nursery.cancel_scope.cancel()


@pytest.mark.spec("BP-04")
@pytest.mark.spec("A-14")
async def test_a_duplicate_in_flight_id_is_refused_and_the_original_completes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    release = trio.Event()

    async def block(ctx: RequestContext) -> Any:
        await release.wait()
        return result("original")

    async def other(ctx: RequestContext) -> Any:
        return result("reused")  # only once its id is free again

    async with open_raw_server(FnDispatcher(block=block, other=other)) as (peer, session):
        await peer.call_tool("block", request_id=7)
        await settle()
        await peer.call_tool("other", request_id=7)
        refused = await peer.receive()
        # Refused with a null id: the duplicated id would look like an answer
        # to the original request.
        assert refused["id"] is None
        assert refused["error"]["code"] == -32600
        assert refused["error"]["data"] == {"duplicateId": 7}
        release.set()
        original = await peer.receive()
        assert original["result"] == result("original")
        assert peer.responses(7) == [original]
        # Reusing the id once its first use was answered is a peer bug (BP-04)
        # that deployed clients commit: accepted, counted (reliability C-02).
        await peer.call_tool("other", request_id=7)
        second = await peer.receive()
        assert second["result"] == result("reused")
        assert peer.responses(7) == [original, second]
        assert inbound(session, 7).state is RequestState.COMPLETED
        assert session.statistics().reused_ids == 1


# ----------------------------------------------------------------------- EOF


@pytest.mark.spec("A-06")
@pytest.mark.spec("LC-15")
async def test_eof_fails_pending_calls_promptly_with_session_closed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    errors: list[SessionClosed] = []
    peer_end, client_end = memory_transport_pair()
    spy = SpyTransport(client_end)
    peer = RawPeer(peer_end)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.collect)
        nursery.start_soon(peer.handshake_as_server)
        async with open_client(spy, discover=False, era="legacy") as client:

            async def call() -> None:
                with pytest.raises(SessionClosed) as info:
                    await client.call_tool("slow")
                errors.append(info.value)

            nursery.start_soon(call)
            await peer.wait_method("tools/call")
            await peer_end.aclose()  # the server goes away mid-request
            await client.session.wait_closed()
            await settle()
            assert len(errors) == 1
            assert errors[0].origin is CancelOrigin.TRANSPORT
            assert errors[0].reason == "the peer closed the connection"
            assert trio.current_time() == 0  # promptly
            record = outbound(client.session, "tools/call")
            assert record.state is RequestState.FAILED
            assert record.error is not None
            assert record.error.code == -32000
            # New calls fail at once too.
            with pytest.raises(SessionClosed):
                await client.ping()
    # The transport is closed at the end, even after it was lost.
    assert spy.closed_at == 0


@pytest.mark.spec("A-06")
async def test_eof_cancels_running_handlers(autojump_clock: trio.testing.MockClock) -> None:
    log: list[str] = []

    async def block(ctx: RequestContext) -> Any:
        try:
            await trio.sleep_forever()
        finally:
            log.append("finally")

    async with open_raw_server(FnDispatcher(block=block)) as (peer, session):
        await peer.call_tool("block", request_id=1)
        await settle()
        await peer.transport.aclose()
        await session.wait_closed()
        await settle()
        assert log == ["finally"]
        record = inbound(session, 1)
        assert record.state is RequestState.CANCELLED
        assert record.cancel_origin is CancelOrigin.TRANSPORT
        assert session.close_origin is CancelOrigin.TRANSPORT
        assert session.state is SessionState.CLOSED
    assert trio.current_time() == 0


# ------------------------------------------------------------------ shutdown


@pytest.mark.spec("A-06")
@pytest.mark.spec("CN-01")
async def test_shutdown_fails_pending_calls_and_tells_the_peer(
    autojump_clock: trio.testing.MockClock,
) -> None:
    errors: list[SessionClosed] = []
    async with open_raw_client_transport() as (peer, transport):
        async with trio.open_nursery() as outer:
            outer.start_soon(peer.handshake_as_server)
            async with open_client(transport, discover=False, era="legacy") as client:

                async def call() -> None:
                    with pytest.raises(SessionClosed) as info:
                        await client.call_tool("slow")
                    errors.append(info.value)

                outer.start_soon(call)  # outlives the session
                request = await peer.wait_method("tools/call")
            # Left open_client while the call was pending.
        await peer.wait_eof()
        assert len(errors) == 1
        assert errors[0].origin is CancelOrigin.SHUTDOWN
        assert errors[0].reason == "session closed by its owner"
        assert peer.frames[-1] == {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request["id"], "reason": "session closed by its owner"},
        }
        record = outbound(client.session, "tools/call")
        assert record.state is RequestState.CANCELLED
        assert record.cancel_origin is CancelOrigin.SHUTDOWN
        assert trio.current_time() == 0  # nothing to wait for
        with pytest.raises(SessionClosed):
            await client.ping()


@pytest.mark.spec("A-06")
@pytest.mark.spec("PI-02")
async def test_shutdown_lets_handlers_finish_within_the_grace_then_cancels_them(
    autojump_clock: trio.testing.MockClock,
) -> None:
    dispatcher = FnDispatcher(sleep=sleep_for)
    async with open_raw_server(dispatcher, shutdown_grace=2) as (peer, session):
        await peer.call_tool("sleep", {"seconds": 1}, request_id=1)
        await peer.call_tool("sleep", {"seconds": 100}, request_id=2)
        await settle()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.aclose)
            await settle()
            # During the grace period: new requests are refused, ping is answered.
            await peer.call_tool("sleep", {"seconds": 0}, request_id=3)
            refused = await peer.wait_response(3)
            assert refused["error"] == {"code": -32000, "message": "The session is closing"}
            await peer.ping()
        assert trio.current_time() == 2
        assert session.closed
    assert peer.eof
    assert peer.eof_at == 2
    finished = inbound(session, 1)
    assert (finished.state, finished.finished_at) == (RequestState.COMPLETED, 1)
    cancelled = inbound(session, 2)
    assert (cancelled.state, cancelled.finished_at) == (RequestState.CANCELLED, 2)
    assert cancelled.cancel_origin is CancelOrigin.SHUTDOWN
    assert [f["result"] for f in peer.responses(1)] == [result("slept 1")]
    assert [f["error"] for f in peer.responses(2)] == [
        {"code": -32001, "message": "Request cancelled by the shutdown: session closed"}
    ]
    assert inbound(session, 3).state is RequestState.FAILED


@pytest.mark.spec("A-06")
async def test_shutdown_is_bounded_when_the_enclosing_scope_is_cancelled(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []

    async def block(ctx: RequestContext) -> Any:
        try:
            await trio.sleep_forever()
        finally:
            log.append(f"finally at {trio.current_time():g}")

    peer_end, server_end = memory_transport_pair()
    spy = SpyTransport(server_end)
    peer = RawPeer(peer_end)
    protocol = partial(Connection, Role.SERVER, capabilities={"tools": {}})
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.collect)
        with trio.CancelScope() as scope:
            async with open_session(
                spy, protocol, FnDispatcher(block=block), shutdown_grace=30
            ) as session:
                await peer.handshake_as_client()
                await peer.call_tool("block", request_id=1)
                await settle()
                scope.cancel()
                await trio.sleep_forever()
        assert scope.cancelled_caught
        await peer.wait_eof()
    # No waiting at all: the whole nursery was cancelled at once.
    assert trio.current_time() == 0
    assert log == ["finally at 0"]
    assert spy.closed_at == 0
    record = inbound(session, 1)
    assert record.state is RequestState.CANCELLED
    assert record.cancel_origin is CancelOrigin.SHUTDOWN
    assert session.statistics().running == 0
    # The writer was cancelled with everything else: no -32001 reply.
    assert peer.responses(1) == []


@pytest.mark.spec("A-06")
async def test_a_handler_that_shields_itself_delays_the_exit_and_its_reply_is_dropped(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def stubborn(ctx: RequestContext) -> Any:
        with trio.CancelScope(shield=True):
            await trio.sleep(10)
        return result("too late")

    async with open_raw_server(
        FnDispatcher(stubborn=stubborn), shutdown_grace=2, cancel_notify_grace=0.5
    ) as (peer, session):
        await peer.call_tool("stubborn", request_id=1)
        await settle()
    # The transport closed on schedule (grace + one bounded wait), but leaving
    # the session waited for the shielded handler; its reply had nowhere to go.
    assert peer.eof_at == 2.5
    assert trio.current_time() == 10
    assert peer.responses(1) == []
    record = inbound(session, 1)
    assert record.state is RequestState.COMPLETED
    assert record.cancel_origin is CancelOrigin.SHUTDOWN


@pytest.mark.spec("PI-02")
async def test_a_request_arriving_while_the_writer_flushes_at_shutdown_is_dropped(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_raw_server(
        FnDispatcher(sleep=sleep_for), buffer=0, cancel_notify_grace=0.5
    ) as (peer, session):
        peer.pause()
        await peer.call_tool("sleep", {"seconds": 0}, request_id=1)
        await settle()  # the writer blocks writing the response to 1
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.aclose)
            await settle()  # shutdown step 4: queue closed, waiting for the writer
            await peer.send_request("ping", request_id="late")
            await settle()
        assert trio.current_time() == 0.5
        assert session.closed
        peer.resume()
    assert peer.responses("late") == []


# ------------------------------------------------------ statistics, observer


async def test_statistics_count_states_peak_and_queue_use(
    autojump_clock: trio.testing.MockClock,
) -> None:
    release = trio.Event()

    async def block(ctx: RequestContext) -> Any:
        await release.wait()
        return result("released")

    async def fail(ctx: RequestContext) -> Any:
        raise RPCError(-32602, "no")

    dispatcher = FnDispatcher(block=block, fail=fail)
    async with open_raw_server(dispatcher, max_concurrent=2, outgoing_buffer=8) as (
        peer,
        session,
    ):
        start = session.statistics()
        # The handshake's initialize is a request too.
        assert (start.completed, start.failed, start.cancelled) == (1, 0, 0)
        for request_id in (1, 2, 3):  # one by one: 3 is the one that waits
            await peer.call_tool("block", request_id=request_id)
            await settle()
        stats = session.statistics()
        assert (stats.running, stats.queued) == (2, 1)
        assert stats.peak_in_flight == 3
        assert stats.max_concurrent == 2
        assert (stats.outgoing_queue_used, stats.outgoing_queue_size) == (0, 8)
        await peer.cancel(3)
        release.set()
        await peer.wait_response(2)
        await peer.wait_response(1)
        await peer.call_tool("fail", request_id=4)
        await peer.wait_response(4)
        await peer.send_raw(b"not json")
        await peer.wait_response(None)
        await peer.receive()
        await peer.notify("notifications/unknown")
        await peer.ping()
        stats = session.statistics()
        assert (stats.running, stats.queued) == (0, 0)
        # initialize, 1, 2 and the ping; 4 failed; 3 was cancelled while queued.
        assert (stats.completed, stats.failed, stats.cancelled) == (4, 1, 1)
        assert stats.peak_in_flight == 3
        assert stats.invalid_messages == 1
        assert stats.ignored_events == 1
        assert stats.frames_in == len(peer.sent)
        assert stats.frames_out == len(peer.frames)
        assert stats.state is SessionState.OPERATING
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            stats.completed = 0  # type: ignore[misc]


async def test_requests_are_frozen_snapshots(autojump_clock: trio.testing.MockClock) -> None:
    async with open_raw_server(FnDispatcher(sleep=sleep_for)) as (peer, session):
        await peer.call_tool("sleep", {"seconds": 5}, request_id=1, progress_token="t")
        await settle()
        before = {r.id: r for r in session.requests()}
        assert before[1].state is RequestState.RUNNING
        assert before[1].progress_token == "t"
        assert before[1].direction is Direction.INBOUND
        await peer.receive()
        after = {r.id: r for r in session.requests()}
        assert before[1].state is RequestState.RUNNING  # the snapshot did not change
        assert after[1].state is RequestState.COMPLETED
        assert (after[1].queued_at, after[1].started_at, after[1].finished_at) == (0, 0, 5)
        assert after[1].duration == 5
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            after[1].state = RequestState.QUEUED  # type: ignore[misc]


async def test_the_observer_sees_every_transition_and_every_frame(
    autojump_clock: trio.testing.MockClock,
) -> None:
    recorder = Recorder()
    release = trio.Event()

    async def block(ctx: RequestContext) -> Any:
        await release.wait()
        return result("ok")

    dispatcher = FnDispatcher(block=block, sleep=sleep_for)
    async with open_raw_server(dispatcher, max_concurrent=1, observer=recorder) as (peer, session):
        await peer.call_tool("sleep", {"seconds": 3}, request_id=1)
        await settle()
        await peer.call_tool("block", request_id=2)  # queued behind 1, then cancelled
        await settle()
        await peer.cancel(2)
        await peer.call_tool("block", request_id=3)
        await peer.send_raw(b"[]")
        await peer.ping()
        await peer.wait_response(1)  # at t=3, on the mock clock
        release.set()
        await peer.wait_response(3)
        await peer.call_tool("sleep", {"seconds": 100}, request_id=4)
        await settle()
    # Every frame, both ways, byte for byte, in order, with its time.
    assert [d for direction, d, _ in recorder.frames if direction is FrameDirection.IN] == peer.sent
    assert [
        orjson.loads(d) for direction, d, _ in recorder.frames if direction is FrameDirection.OUT
    ] == peer.frames
    assert [at for *_, at in recorder.frames] == sorted(at for *_, at in recorder.frames)
    assert recorder.frames[-1][2] == 3 + 2  # the -32001 for 4, after the shutdown grace
    # Every transition: each record walks the state table from its creation to
    # the state its final snapshot shows.
    final = {r.id: r for r in session.requests()}
    for request_id, record in final.items():
        chain = [(r, old) for r, old in recorder.transitions if r.id == request_id]
        assert chain[0][1] is None
        assert chain[0][0].state is RequestState.QUEUED
        for (previous, _), (current, old) in itertools.pairwise(chain):
            assert old is previous.state
            assert TRANSITIONS[old][_event_between(old, current.state)] is current.state
        assert chain[-1][0] == record
        assert record.state.is_terminal
    assert final[2].state is RequestState.CANCELLED
    assert final[4].cancel_origin is CancelOrigin.SHUTDOWN
    assert [reason for reason, _ in recorder.closes] == ["session closed by its owner"]


def _event_between(old: RequestState, new: RequestState) -> Any:
    (event,) = [e for e, s in TRANSITIONS[old].items() if s is new]
    return event


@pytest.mark.spec("LC-04")
@pytest.mark.parametrize(
    ("era", "state"), [("legacy", SessionState.OPERATING), ("auto", SessionState.MODERN)]
)
async def test_a_real_client_and_server_round_trip(
    autojump_clock: trio.testing.MockClock, era: str, state: SessionState
) -> None:
    server = Server("demo", version="1.2")

    @server.tool()
    async def add(a: int, b: int, ctx: Context) -> int:
        assert ctx.method == "tools/call"
        return a + b

    async with open_pair(server, era=era) as (client, server_session):
        assert client.server_info.name == "demo"
        # In the handshake era the server has read notifications/initialized by now.
        await client.ping()
        assert server_session.state is state
        assert client.era == ("modern" if era == "auto" else "legacy")
        outcome = await client.call_tool("add", {"a": 2, "b": 3})
        assert outcome.content[0].text == "5"  # type: ignore[union-attr]
        tools = await client.list_tools()
        assert [t.name for t in tools.tools] == ["add"]
