"""Handler failures: what the session contains, and what it must not swallow.

Robustness catalogue (reliability.md §3.6), by id:

* H-05: a handler that raises ``RecursionError`` (real deep recursion) or
  ``MemoryError`` is an ordinary failure: a tool gets an ``isError`` result, any
  other handler -32603 "Internal error"; neither says what happened, the
  traceback goes to the log, and the session goes on.
* H-06: ``KeyboardInterrupt`` and ``SystemExit`` are not failures of a handler
  but the process being told to stop: never answered as -32603, they leave the
  session (and ``trio.run``) as themselves, bare, after an orderly shutdown:
  the other handlers are cancelled and the transport is closed.
* H-08: a notification handler that raises (the client's ``log_handler``, a
  server dispatcher's ``handle_notification``) is logged; the next notification
  is still handled and requests still work. (A failing progress callback fails
  its own call instead: ``tests/session/test_timeouts.py``.)
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

import orjson
import pytest
import trio
import trio.testing
from helpers import (
    LATEST,
    FnDispatcher,
    open_client_with_raw_server,
    open_pair,
    open_raw_server,
    settle,
)

from trio_mcp import Server, serve_session
from trio_mcp import types as t
from trio_mcp.lowlevel import RequestContext, Session, open_session
from trio_mcp.protocol import Connection, NotificationReceived, Role
from trio_mcp.testing import memory_transport_pair

#: Placed in exception messages: it must never reach the peer.
CANARY = "canary-7f3a /srv/secret/config.py"


def _recurse(depth: int) -> int:
    return _recurse(depth + 1) + 1  # no base case: RecursionError, for real


def _failed_records(
    caplog: pytest.LogCaptureFixture, logger: str, kind: type[BaseException]
) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.name == logger and r.exc_info is not None and isinstance(r.exc_info[1], kind)
    ]


def _assert_no_internals(data: bytes) -> None:
    text = data.decode()
    for secret in (CANARY, "canary", "Recursion", "recursion", "Memory", "Traceback", ".py"):
        assert secret not in text, text


# ---------------------------------------------------------------- H-05


def failing_server() -> Server:
    server = Server("failing")

    @server.tool()
    async def recurse() -> int:
        """Recurse without end."""
        return _recurse(0)

    @server.tool()
    async def exhaust() -> str:
        """Run out of memory (as far as Python can tell)."""
        raise MemoryError(CANARY)

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return server


@pytest.mark.spec("TL-14")
async def test_recursion_and_memory_errors_in_a_tool_are_tool_errors(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """H-05 through the Server: an ``isError`` result, nothing about the cause."""
    caplog.set_level(logging.DEBUG, logger="trio_mcp")
    async with open_pair(failing_server(), discover=False) as (client, server_session):
        for name in ("recurse", "exhaust", "recurse"):
            result = await client.call_tool(name, {})
            assert result.is_error
            assert result.content == [t.TextContent(text=f"Tool {name} failed")]
            _assert_no_internals(orjson.dumps(t.unstructure(result)))
            # The session goes on: the next call works.
            assert (await client.call_tool("add", {"a": 2, "b": 3})).structured_content == {
                "result": 5
            }
        assert not server_session.closed
        assert not client.session.closed
    # The tracebacks went to the log, one per failure.
    assert len(_failed_records(caplog, "trio_mcp.server", RecursionError)) == 2
    [memory] = _failed_records(caplog, "trio_mcp.server", MemoryError)
    assert memory.getMessage() == "tool exhaust failed"


async def test_recursion_and_memory_errors_in_a_handler_are_internal_errors(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """H-05 at the session's error boundary (no tool wrapper): -32603, generic."""
    caplog.set_level(logging.DEBUG, logger="trio_mcp")

    async def recurse(ctx: RequestContext) -> Any:
        return _recurse(0)

    async def exhaust(ctx: RequestContext) -> Any:
        raise MemoryError(CANARY)

    async def fine(ctx: RequestContext) -> Any:
        return {"content": [{"type": "text", "text": "ok"}]}

    dispatcher = FnDispatcher(recurse=recurse, exhaust=exhaust, fine=fine)
    async with open_raw_server(dispatcher) as (peer, session):
        for name in ("recurse", "exhaust"):
            request_id = await peer.call_tool(name)
            reply = await peer.wait_response(request_id)
            assert reply == {
                "jsonrpc": "2.0",
                "id": request_id,
                "error": {"code": -32603, "message": "Internal error"},
            }
            request_id = await peer.call_tool("fine")
            assert (await peer.wait_response(request_id))["result"]["content"][0]["text"] == "ok"
        await peer.ping()
        assert not session.closed
        for frame in peer.frames:
            _assert_no_internals(orjson.dumps(frame))
    [recursion] = _failed_records(caplog, "trio_mcp.session", RecursionError)
    [memory] = _failed_records(caplog, "trio_mcp.session", MemoryError)
    assert recursion.getMessage().startswith("handler for tools/call (id ")
    assert CANARY in str(memory.exc_info[1])  # type: ignore[index]  # the log has the details


# ---------------------------------------------------------------- H-06


def _frame(obj: dict[str, Any]) -> bytes:
    return orjson.dumps(obj)


INITIALIZE = _frame(
    {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": LATEST,
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
)
INITIALIZED = _frame({"jsonrpc": "2.0", "method": "notifications/initialized"})


def _call(request_id: int, name: str) -> bytes:
    return _frame(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": name, "arguments": {}},
        }
    )


@pytest.mark.parametrize("stop", [KeyboardInterrupt, SystemExit])
async def test_keyboard_interrupt_and_system_exit_leave_the_session(
    stop: type[BaseException],
    autojump_clock: trio.testing.MockClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """H-06: not swallowed as -32603; the session shuts down and re-raises it bare.

    The session is opened directly (no nursery of the test around it), so what
    leaves ``open_session`` is exactly what the application sees.
    """
    caplog.set_level(logging.DEBUG, logger="trio_mcp")
    cancelled_at: list[float] = []

    async def block(ctx: RequestContext) -> Any:
        try:
            await trio.sleep_forever()
        finally:
            cancelled_at.append(trio.current_time())

    async def interrupt(ctx: RequestContext) -> Any:
        await trio.sleep(1)
        raise stop

    peer, end = memory_transport_pair()
    dispatcher = FnDispatcher(block=block, interrupt=interrupt)
    protocol = partial(Connection, Role.SERVER, capabilities={"tools": {}})
    sessions: list[Session] = []

    async def run() -> None:
        with trio.fail_after(60):  # swallowed, it would hang: fail instead
            async with open_session(end, protocol, dispatcher) as session:
                sessions.append(session)
                await peer.send(INITIALIZE)
                assert orjson.loads(await peer.receive())["result"]["protocolVersion"] == LATEST
                for frame in (INITIALIZED, _call(1, "block"), _call(2, "interrupt")):
                    await peer.send(frame)
                await session.wait_closed()

    with pytest.raises(stop) as raised:
        await run()
    assert type(raised.value) is stop  # bare: no exception group around it
    assert trio.current_time() == 1  # at once, not after a grace period
    assert cancelled_at == [1]  # the other handler was cancelled
    assert sessions[0].closed
    # Nothing answered either call (certainly no -32603), and the transport was
    # closed: the next thing the peer reads is the end of the channel.
    with pytest.raises(trio.EndOfChannel):
        await peer.receive()
    assert not [r for r in caplog.records if r.exc_info and isinstance(r.exc_info[1], stop)]


def test_keyboard_interrupt_in_a_tool_reaches_trio_run() -> None:
    """H-06 through the Server and ``serve_session``, as a program runs it."""
    server = Server("stoppable")
    calls: list[str] = []

    @server.tool()
    async def stop() -> str:
        """Stop the process."""
        calls.append("stop")
        raise KeyboardInterrupt

    async def main() -> None:
        peer, end = memory_transport_pair()

        async def play_client() -> None:
            await peer.send(INITIALIZE)
            await peer.receive()  # initialized only after the result (LC rules)
            await peer.send(INITIALIZED)
            await peer.send(_call(1, "stop"))

        # A system task, so that no nursery of ours wraps what serve_session raises.
        trio.lowlevel.spawn_system_task(play_client)
        with trio.fail_after(60):  # a hang fails, it does not spin the autojump clock
            await serve_session(server, end)

    with pytest.raises(KeyboardInterrupt) as raised:
        trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert type(raised.value) is KeyboardInterrupt
    assert calls == ["stop"]


# ---------------------------------------------------------------- H-08


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_failing_log_handler_is_logged_and_the_next_message_handled(
    kind: str,
    autojump_clock: trio.testing.MockClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """H-08 on the client: ``log_handler`` raising on one message."""
    caplog.set_level(logging.DEBUG, logger="trio_mcp")
    seen: list[Any] = []

    def take(params: t.LoggingMessageNotificationParams) -> None:
        seen.append(params.data)
        if params.data == "boom":
            raise ValueError(CANARY)

    async def take_async(params: t.LoggingMessageNotificationParams) -> None:
        await trio.lowlevel.checkpoint()
        take(params)

    handler = take if kind == "sync" else take_async
    async with open_client_with_raw_server(log_handler=handler) as (peer, client):
        for data in ("first", "boom", "after"):
            await peer.notify("notifications/message", {"level": "info", "data": data})
        await settle()
        assert seen == ["first", "boom", "after"]
        # Requests both ways still work.
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.ping)
            answered = await peer.wait_method("ping")
            await peer.send({"jsonrpc": "2.0", "id": answered["id"], "result": {}})
        await peer.ping()
        assert not client.session.closed
    [failed] = _failed_records(caplog, "trio_mcp.session", ValueError)
    assert failed.getMessage() == "notification handler for notifications/message failed"


class _FailingNotifications(FnDispatcher):
    """Raises on the first notification after ``initialized``; records the rest."""

    async def handle_notification(self, session: Session, event: NotificationReceived) -> None:
        await super().handle_notification(session, event)
        if len(self.notifications) == 2:
            raise RuntimeError(CANARY)


async def test_a_failing_server_notification_handler_is_logged_and_the_next_handled(
    autojump_clock: trio.testing.MockClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """H-08 on the server: the dispatcher's ``handle_notification`` raising."""
    caplog.set_level(logging.DEBUG, logger="trio_mcp")

    async def fine(ctx: RequestContext) -> Any:
        return {"content": [{"type": "text", "text": "ok"}]}

    dispatcher = _FailingNotifications(fine=fine)
    async with open_raw_server(dispatcher) as (peer, session):
        await peer.notify("notifications/roots/list_changed")  # raises
        await peer.notify("notifications/roots/list_changed")  # still handled
        await settle()
        methods = [n.method for n in dispatcher.notifications]
        assert methods == ["notifications/initialized"] + ["notifications/roots/list_changed"] * 2
        reply = await peer.wait_response(await peer.call_tool("fine"))
        assert reply["result"]["content"][0]["text"] == "ok"
        assert peer.unread() == [reply]  # nothing else was sent
        assert not session.closed
    [failed] = _failed_records(caplog, "trio_mcp.session", RuntimeError)
    assert failed.getMessage() == "notification handler for notifications/roots/list_changed failed"
