"""Middleware: the order of the chain, what it may read and edit, its cleanup
on each outcome of a request (with the record's terminal state), and what a
middleware's own failure does."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from typing import Any, Literal

import pytest
import trio
import trio.testing

from trio_mcp import (
    Context,
    MCPError,
    RequestTimeout,
    RPCError,
    Server,
    open_client,
    serve_session,
)
from trio_mcp.extensions import Call, MiddlewareError
from trio_mcp.lowlevel import CancelOrigin, Direction, RequestRecord, RequestState, Session
from trio_mcp.testing import memory_transport_pair, open_memory_client

ERAS = pytest.mark.parametrize("era", ["legacy", "modern"])
Era = Literal["legacy", "modern"]

Log = list[tuple[Any, ...]]


def recording(name: str, log: Log) -> Callable[[Call], AbstractAsyncContextManager[None]]:
    """A middleware that logs its entry and its exit, with what it saw."""

    @asynccontextmanager
    async def middleware(call: Call) -> AsyncIterator[None]:
        log.append((name, "before", call.direction.value, call.kind, call.method))
        try:
            yield
        except BaseException as exc:
            log.append((name, "after", call.method, type(exc).__name__, call.record))
            raise
        log.append((name, "after", call.method, None, call.record))

    middleware.__qualname__ = name
    return middleware


def only(log: Log, method: str) -> Log:
    return [entry for entry in log if method in entry]


def server_with_tools() -> Server:
    server = Server("mw")

    @server.tool()
    async def echo(text: str, ctx: Context) -> str:
        return text

    @server.tool()
    async def forever() -> str:
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    return server


@ERAS
async def test_the_order_is_the_registration_order_both_ways(era: Era) -> None:
    log: Log = []
    server = server_with_tools()
    server.add_middleware(recording("server-outer", log))
    server.add_middleware(recording("server-inner", log))
    client_mw = [recording("client-outer", log), recording("client-inner", log)]
    async with open_memory_client(server, era=era, middleware=client_mw) as client:
        log.clear()
        result = await client.call_tool("echo", {"text": "hi"})
    assert result.content[0].text == "hi"  # type: ignore[union-attr]
    steps = [(entry[0], entry[1]) for entry in only(log, "tools/call")]
    assert steps == [
        ("client-outer", "before"),
        ("client-inner", "before"),
        ("server-outer", "before"),
        ("server-inner", "before"),
        ("server-inner", "after"),
        ("server-outer", "after"),
        ("client-inner", "after"),
        ("client-outer", "after"),
    ]
    # The client's middleware saw an outbound request, the server's an inbound one.
    kinds = {
        (entry[0], entry[2], entry[3]) for entry in only(log, "tools/call") if entry[1] == "before"
    }
    assert ("client-outer", "outbound", "request") in kinds
    assert ("server-outer", "inbound", "request") in kinds


@ERAS
async def test_meta_and_params_edited_before_and_the_result_after(era: Era) -> None:
    seen: dict[str, Any] = {}

    @asynccontextmanager
    async def client_side(call: Call) -> AsyncIterator[None]:
        if call.method == "tools/call":
            call.meta["com.example/trace"] = "t-1"
            assert call.params is not None
            call.params["arguments"] = {"text": "edited"}
        yield

    @asynccontextmanager
    async def server_side(call: Call) -> AsyncIterator[None]:
        if call.method == "tools/call":
            seen["meta"] = call.meta.get("com.example/trace")
            seen["id"] = call.request_id
            record = call.record
            assert record is not None
            seen["state"] = record.state
        yield
        if call.kind == "request" and call.direction is Direction.INBOUND:
            call.result.setdefault("_meta", {})["com.example/seen-by"] = "server_side"

    server = server_with_tools()
    server.add_middleware(server_side)
    async with open_memory_client(server, era=era, middleware=[client_side]) as client:
        result = await client.call_tool("echo", {"text": "original"})
    assert result.content[0].text == "edited"  # type: ignore[union-attr]
    assert result.meta is not None
    assert result.meta["com.example/seen-by"] == "server_side"
    assert seen["meta"] == "t-1"
    assert seen["state"] is RequestState.RUNNING


async def test_notifications_pass_through_both_ways() -> None:
    # A handshake-era session: there a log message is a session's notification
    # (2026-07-28's are the custom notifications' tests).
    log: Log = []
    server = Server("mw")

    @server.tool()
    async def chatty(ctx: Context) -> str:
        await ctx.info("hello")
        return "done"

    server.add_middleware(recording("server", log))
    async with open_memory_client(
        server, era="legacy", middleware=[recording("client", log)], log_handler=lambda _: None
    ) as client:
        await client.set_logging_level("info")
        await client.call_tool("chatty", {})
        await client.session.wait_inbound_settled()
    notes = [entry for entry in log if "notifications/message" in entry and entry[1] == "before"]
    assert ("server", "before", "outbound", "notification", "notifications/message") in notes
    assert ("client", "before", "inbound", "notification", "notifications/message") in notes


async def test_the_sessions_own_messages_pass_through_too(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # What the session answers or acts on itself, before any handler: the
    # handshake, ping, the peer's progress and its cancel.
    log: Log = []
    server = server_with_tools()

    @server.tool()
    async def steps(ctx: Context) -> str:
        await ctx.report_progress(1, 2)
        return "done"

    server.add_middleware(recording("server", log))
    async with open_memory_client(
        server, era="legacy", middleware=[recording("client", log)]
    ) as client:
        await client.ping()
        await client.call_tool("steps", {}, on_progress=lambda _: None)
        with trio.move_on_after(1):
            await client.call_tool("forever", {})
        await client.ping()  # the cancel has been read by now
    before = {entry[:5] for entry in log if entry[1] == "before"}
    for method in ("initialize", "ping"):
        assert ("server", "before", "inbound", "request", method) in before
        assert ("client", "before", "outbound", "request", method) in before
    assert ("client", "before", "outbound", "notification", "notifications/initialized") in before
    assert ("server", "before", "inbound", "notification", "notifications/initialized") in before
    assert ("client", "before", "inbound", "notification", "notifications/progress") in before
    assert ("server", "before", "outbound", "notification", "notifications/progress") in before
    assert ("server", "before", "inbound", "notification", "notifications/cancelled") in before
    assert ("client", "before", "outbound", "notification", "notifications/cancelled") in before
    # The answer is given after the chain unwound: the record completed then.
    ((_, _, _, error, record),) = [
        entry for entry in only(log, "initialize") if entry[:2] == ("server", "after")
    ]
    assert error is None
    assert record.state is RequestState.RUNNING


async def test_server_discover_passes_through_and_its_result_may_be_edited() -> None:
    seen: Log = []

    @asynccontextmanager
    async def stamp(call: Call) -> AsyncIterator[None]:
        seen.append((call.direction.value, call.method, call.context is None))
        yield
        if call.method in ("server/discover", "ping"):
            call.result.setdefault("_meta", {})["com.example/stamped"] = True

    server = server_with_tools()
    server.add_middleware(stamp)
    async with open_memory_client(server, era="modern") as client:
        assert client.discover_result is not None
        assert client.discover_result.meta is not None
        assert client.discover_result.meta["com.example/stamped"] is True
    assert ("inbound", "server/discover", True) in seen


async def test_an_rpc_error_from_a_middleware_answers_ping() -> None:
    @asynccontextmanager
    async def no_pings(call: Call) -> AsyncIterator[None]:
        if call.method == "ping":
            raise RPCError(-32001, "no pings here")
        yield

    server = server_with_tools()
    server.add_middleware(no_pings)
    async with open_memory_client(server, era="legacy") as client:
        with pytest.raises(RPCError, match="no pings here"):
            await client.ping()
        result = await client.call_tool("echo", {"text": "still here"})
    assert result.content[0].text == "still here"  # type: ignore[union-attr]


# ------------------------------------------------------------- the five outcomes


class Outcomes:
    """Server and client middleware that remember what their cleanup saw."""

    def __init__(self) -> None:
        self.server: list[tuple[str, RequestRecord | None]] = []
        self.client: list[tuple[str, RequestRecord | None]] = []
        self.server_ids: list[Any] = []

    def middleware(
        self, into: list[tuple[str, RequestRecord | None]]
    ) -> Callable[[Call], AbstractAsyncContextManager[None]]:
        @asynccontextmanager
        async def middleware(call: Call) -> AsyncIterator[None]:
            if call.method != "tools/call":
                yield
                return
            if call.direction is Direction.INBOUND:
                self.server_ids.append(call.request_id)
            try:
                yield
            except BaseException as exc:
                # Cleanup runs on every outcome; cancelled, it may not await
                # unshielded, so it only records.
                into.append((type(exc).__name__, call.record))
                raise
            into.append(("completed", call.record))

        return middleware


async def serve_pair(
    outcomes: Outcomes, server: Server, era: Era, nursery: trio.Nursery, **client_options: Any
) -> tuple[AbstractAsyncContextManager[Any], Session]:
    """A server session over a memory pair, in *nursery*, and the client to
    open over it; both with *outcomes*' middleware (the server's innermost)."""
    server.add_middleware(outcomes.middleware(outcomes.server))
    client_end, server_end = memory_transport_pair()
    session: Session = await nursery.start(partial(serve_session, server, server_end))
    client = open_client(
        client_end, era=era, middleware=[outcomes.middleware(outcomes.client)], **client_options
    )
    return client, session


def the_call(session: Session, direction: Direction) -> RequestRecord:
    (record,) = [
        r for r in session.requests() if r.method == "tools/call" and r.direction is direction
    ]
    return record


@ERAS
async def test_cleanup_on_completion(era: Era, autojump_clock: trio.testing.MockClock) -> None:
    outcomes = Outcomes()
    async with trio.open_nursery() as nursery:
        opener, server_session = await serve_pair(outcomes, server_with_tools(), era, nursery)
        async with opener as client:
            await client.call_tool("echo", {"text": "x"})
            client_record = the_call(client.session, Direction.OUTBOUND)
        server_record = the_call(server_session, Direction.INBOUND)
    assert [seen for seen, _ in outcomes.server] == ["completed"]
    assert [seen for seen, _ in outcomes.client] == ["completed"]
    assert client_record.state is RequestState.COMPLETED
    assert server_record.state is RequestState.COMPLETED


@ERAS
async def test_cleanup_on_failure(era: Era, autojump_clock: trio.testing.MockClock) -> None:
    outcomes = Outcomes()
    server = Server("mw")

    @server.tool()
    async def refuse() -> str:
        raise RPCError(-32050, "no")

    async with trio.open_nursery() as nursery:
        opener, server_session = await serve_pair(outcomes, server, era, nursery)
        async with opener as client:
            with pytest.raises(RPCError) as caught:
                await client.call_tool("refuse", {})
            client_record = the_call(client.session, Direction.OUTBOUND)
        server_record = the_call(server_session, Direction.INBOUND)
    assert caught.value.code == -32050
    assert [seen for seen, _ in outcomes.server] == ["RPCError"]
    assert [seen for seen, _ in outcomes.client] == ["RPCError"]
    for record in (client_record, server_record):
        assert record.state is RequestState.FAILED
        assert record.error is not None
        assert record.error.code == -32050


@ERAS
async def test_cleanup_on_timeout(era: Era, autojump_clock: trio.testing.MockClock) -> None:
    outcomes = Outcomes()
    async with trio.open_nursery() as nursery:
        opener, server_session = await serve_pair(
            outcomes, server_with_tools(), era, nursery, progress_idle_timeout=5
        )
        async with opener as client:
            with pytest.raises(RequestTimeout):
                await client.call_tool("forever", {})
            client_record = the_call(client.session, Direction.OUTBOUND)
            await trio.testing.wait_all_tasks_blocked()
            server_record = the_call(server_session, Direction.INBOUND)
    assert [seen for seen, _ in outcomes.client] == ["RequestTimeout"]
    assert client_record.state is RequestState.CANCELLED
    assert client_record.cancel_origin is CancelOrigin.DEADLINE
    # The server's handler is cancelled by the client's giving up: the peer
    # (notifications/cancelled) or, over a POST, the closed transport.
    assert [seen for seen, _ in outcomes.server] == ["Cancelled"]
    assert server_record.state is RequestState.CANCELLED
    assert server_record.cancel_origin in (CancelOrigin.PEER, CancelOrigin.TRANSPORT)


@ERAS
async def test_cleanup_on_peer_cancel(era: Era, autojump_clock: trio.testing.MockClock) -> None:
    outcomes = Outcomes()
    async with trio.open_nursery() as nursery:
        opener, server_session = await serve_pair(outcomes, server_with_tools(), era, nursery)
        async with opener as client:
            with trio.move_on_after(1):
                await client.call_tool("forever", {})
            client_record = the_call(client.session, Direction.OUTBOUND)
            await trio.testing.wait_all_tasks_blocked()
            server_record = the_call(server_session, Direction.INBOUND)
    assert [seen for seen, _ in outcomes.client] == ["Cancelled"]
    assert client_record.state is RequestState.CANCELLED
    assert client_record.cancel_origin is CancelOrigin.DEADLINE  # the caller's own deadline
    assert [seen for seen, _ in outcomes.server] == ["Cancelled"]
    # Inside the chain the server's record already names who asked.
    ((_, seen_record),) = outcomes.server
    assert seen_record is not None
    assert seen_record.cancel_origin is CancelOrigin.PEER
    assert server_record.state is RequestState.CANCELLED
    assert server_record.cancel_origin is CancelOrigin.PEER


@ERAS
async def test_cleanup_on_shutdown(era: Era, autojump_clock: trio.testing.MockClock) -> None:
    outcomes = Outcomes()
    async with trio.open_nursery() as nursery:
        opener, server_session = await serve_pair(outcomes, server_with_tools(), era, nursery)
        async with opener as client:
            async with trio.open_nursery() as calls:

                async def call() -> None:
                    with pytest.raises(MCPError):
                        await client.call_tool("forever", {})

                calls.start_soon(call)
                await trio.testing.wait_all_tasks_blocked()
                assert outcomes.server_ids
                # The server shuts its session down while the tool runs: after
                # the grace, the handler is cancelled.
                await server_session.aclose("going away")
            server_record = the_call(server_session, Direction.INBOUND)
    assert [seen for seen, _ in outcomes.server] == ["Cancelled"]
    ((_, seen_record),) = outcomes.server
    assert seen_record is not None
    assert seen_record.cancel_origin is CancelOrigin.SHUTDOWN
    assert server_record.state is RequestState.CANCELLED
    assert server_record.cancel_origin is CancelOrigin.SHUTDOWN


# -------------------------------------------------------- a middleware that fails


@ERAS
async def test_a_failing_middleware_fails_that_request_only(
    era: Era, caplog: pytest.LogCaptureFixture
) -> None:
    failures = {"before": 0, "after": 0}

    @asynccontextmanager
    async def brittle(call: Call) -> AsyncIterator[None]:
        if call.kind == "request" and call.method == "tools/call":
            arguments = (call.params or {}).get("arguments") or {}
            if arguments.get("text") == "before":
                failures["before"] += 1
                raise ValueError("broken before")
            yield
            if arguments.get("text") == "after":
                failures["after"] += 1
                raise ValueError("broken after")
        else:
            yield

    server = server_with_tools()
    server.add_middleware(brittle)
    records: list[RequestRecord] = []
    caplog.set_level(logging.ERROR, logger="trio_mcp.session")
    async with open_memory_client(server, era=era) as client:
        for text in ("before", "after"):
            with pytest.raises(RPCError) as caught:
                await client.call_tool("echo", {"text": text})
            assert caught.value.code == -32603
            assert caught.value.message == "Internal error"
        ok = await client.call_tool("echo", {"text": "fine"})
        records = [r for r in client.session.requests() if r.method == "tools/call"]
    assert ok.content[0].text == "fine"  # type: ignore[union-attr]
    assert failures == {"before": 1, "after": 1}
    assert [r.state for r in records] == [
        RequestState.FAILED,
        RequestState.FAILED,
        RequestState.COMPLETED,
    ]
    logged = [r.getMessage() for r in caplog.records]
    assert any("middleware test_a_failing" in m and "failed before tools/call" in m for m in logged)
    assert any("failed after tools/call" in m for m in logged)


async def test_a_failing_client_middleware_fails_the_call_and_its_record() -> None:
    @asynccontextmanager
    async def brittle(call: Call) -> AsyncIterator[None]:
        if call.method == "tools/call":
            raise KeyError("nope")
        yield

    async with open_memory_client(server_with_tools(), middleware=[brittle]) as client:
        with pytest.raises(MiddlewareError) as caught:
            await client.call_tool("echo", {"text": "x"})
        record = next(r for r in client.session.requests() if r.method == "tools/call")
        # The session goes on.
        await client.ping()
    assert caught.value.code == -32603
    assert isinstance(caught.value.__cause__, KeyError)
    assert "brittle" in str(caught.value)
    assert record.state is RequestState.FAILED
    assert record.error is not None
    assert record.error.code == -32603


async def test_an_rpc_error_from_a_middleware_is_the_answer() -> None:
    @asynccontextmanager
    async def gate(call: Call) -> AsyncIterator[None]:
        if call.method == "tools/call":
            raise RPCError(-32051, "not allowed here")
        yield

    server = server_with_tools()
    server.add_middleware(gate)
    async with open_memory_client(server) as client:
        with pytest.raises(RPCError) as caught:
            await client.call_tool("echo", {"text": "x"})
    assert caught.value.code == -32051


def test_add_middleware_refuses_what_is_not_callable() -> None:
    with pytest.raises(TypeError, match="callable"):
        Server("x").add_middleware(42)  # type: ignore[arg-type]


async def test_each_message_of_a_listen_stream_passes_through() -> None:
    # 2026-07-28: the client's subscriptions/listen stream carries the
    # server's list_changed notices; each is an outbound notification of the
    # server's and an inbound one of the client's.
    log: Log = []
    server = server_with_tools()
    server.add_middleware(recording("server", log))
    async with open_memory_client(
        server, era="modern", middleware=[recording("client", log)]
    ) as client:

        @server.tool()
        async def added() -> str:
            return "new"

        await client.wait_list_changed("tools")
        server.remove_tool("added")
        await client.wait_list_changed("tools")
    changed = "notifications/tools/list_changed"
    befores = [entry for entry in log if changed in entry and entry[1] == "before"]
    assert befores.count(("server", "before", "outbound", "notification", changed)) == 2
    assert befores.count(("client", "before", "inbound", "notification", changed)) == 2
    # The stream itself is a request both chains wrapped.
    assert ("client", "before", "outbound", "request", "subscriptions/listen") in log
    assert ("server", "before", "inbound", "request", "subscriptions/listen") in log
