"""The WebSocket client's frame bound (issue 17 §1): an oversize response fails
the pending call whose id it carries, at once, and the session goes on.

Over real loopback WebSockets (port 0): a trio_mcp server answering with an
oversize result, and a scripted trio-websocket server that sends what a
trio_mcp server never would (the id after a large result; a message that never
stops growing). Past the drain limit the client closes with 1009 and every
pending call fails with that reason.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest
import trio
import trio.testing
import trio_websocket
from wsproto.events import TextMessage

import trio_mcp
from trio_mcp import ResponseTooLarge, SessionClosed, open_websocket_client
from trio_mcp import serve_websocket as serve_mcp_websocket
from trio_mcp.transports._bounds import WEBSOCKET_DRAIN_FACTOR

BOUND = 20_000
#: The client's drain limit at BOUND: 4 x 20,000 is under the 1 MiB floor.
DRAIN_LIMIT = max(WEBSOCKET_DRAIN_FACTOR * BOUND, 1 << 20)


def _big_server() -> trio_mcp.Server:
    server = trio_mcp.Server("bounded")

    @server.tool()
    async def big(n: int) -> str:
        """A result of n bytes."""
        return "x" * n

    return server


def _text(result: Any) -> str:
    return str(result.content[0].text)


@pytest.mark.spec("BP-28", "TR-03")
async def test_an_oversize_result_fails_its_call_and_the_session_goes_on() -> None:
    async with trio.open_nursery() as nursery:
        url = await nursery.start(
            lambda task_status: serve_mcp_websocket(_big_server(), task_status=task_status)
        )
        with trio.fail_after(30):
            async with open_websocket_client(url, max_message_size=BOUND, era="legacy") as client:
                with pytest.raises(ResponseTooLarge, match=f"limit of {BOUND} bytes"):
                    await client.call_tool("big", {"n": 4 * BOUND})
                assert not client.session.closed
                assert _text(await client.call_tool("big", {"n": 10})) == "x" * 10
                await client.ping()
        nursery.cancel_scope.cancel()


Script = Callable[[trio_websocket.WebSocketConnection, dict[str, Any]], Any]


@asynccontextmanager
async def scripted_server(answer_ping: Script) -> AsyncIterator[str]:
    """A raw trio-websocket server on 127.0.0.1:0 speaking the handshake era:
    it answers ``initialize`` itself and every ``ping`` with *answer_ping*."""

    async def handler(request: trio_websocket.WebSocketRequest) -> None:
        ws = await request.accept(subprotocol="mcp")
        while True:
            try:
                message = orjson.loads(await ws.get_message())
            except trio_websocket.ConnectionClosed:
                return
            if message.get("method") == "initialize":
                result = {
                    "protocolVersion": message["params"]["protocolVersion"],
                    "capabilities": {},
                    "serverInfo": {"name": "scripted", "version": "1"},
                }
                reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
                await ws.send_message(orjson.dumps(reply).decode())
            elif message.get("method") == "ping":
                try:
                    await answer_ping(ws, message)
                except trio_websocket.ConnectionClosed:
                    return

    async with trio.open_nursery() as nursery:
        server = await nursery.start(
            functools.partial(trio_websocket.serve_websocket, handler, "127.0.0.1", 0, None)
        )
        yield f"ws://127.0.0.1:{server.port}"
        nursery.cancel_scope.cancel()


@pytest.mark.spec("BP-28", "TR-03")
async def test_an_oversize_response_with_its_id_last_fails_its_call() -> None:
    """The id after a 300 kB result is read from the message's tail (the head
    names none), once the message has ended; the next call is answered."""
    seen: list[int] = []

    async def answer(ws: trio_websocket.WebSocketConnection, message: dict[str, Any]) -> None:
        if not seen:
            seen.append(1)
            big = {"jsonrpc": "2.0", "result": {"t": "x" * 300_000}, "id": message["id"]}
            await ws.send_message(orjson.dumps(big).decode())
        else:
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": {}}
            await ws.send_message(orjson.dumps(reply).decode())

    async with scripted_server(answer) as url:
        with trio.fail_after(30):
            async with open_websocket_client(url, max_message_size=BOUND, era="legacy") as client:
                with pytest.raises(
                    ResponseTooLarge,
                    match=rf"Message of 3000\d\d bytes exceeds the limit of {BOUND} bytes",
                ):
                    await client.ping()
                assert not client.session.closed
                await client.ping()


@pytest.mark.spec("BP-28", "TR-03")
async def test_a_response_whose_head_names_its_id_fails_its_call_before_it_ends() -> None:
    """The head names the id: the call fails while the server still holds the
    rest of the message back (until the test has seen the failure); the rest is
    dropped unread, and the next call is answered."""
    failed = trio.Event()
    pings: list[int] = []

    async def answer(ws: trio_websocket.WebSocketConnection, message: dict[str, Any]) -> None:
        pings.append(message["id"])
        if len(pings) > 1:
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": {}}
            await ws.send_message(orjson.dumps(reply).decode())
            return
        head = orjson.dumps({"jsonrpc": "2.0", "id": message["id"]}).decode()[:-1]
        # One message in two fragments (trio-websocket sends a str whole).
        start = head + ',"result":{"t":"' + "x" * 2 * BOUND
        await ws._send(TextMessage(data=start, message_finished=False))
        await failed.wait()
        await ws._send(TextMessage(data='"}}', message_finished=True))

    async with scripted_server(answer) as url:
        with trio.fail_after(30):
            async with open_websocket_client(url, max_message_size=BOUND, era="legacy") as client:
                with pytest.raises(ResponseTooLarge, match=f"limit of {BOUND} bytes"):
                    await client.ping()
                failed.set()
                assert not client.session.closed
                await client.ping()
    assert len(pings) == 2


@pytest.mark.spec("BP-28", "TR-03")
async def test_a_message_past_the_drain_limit_closes_1009_and_pending_calls_fail() -> None:
    """A message with no id in its head that goes on past the drain limit is not
    drained further: the client closes with 1009, and each pending call fails
    with the reason (SessionClosed naming 1009), not at some timeout."""
    closed: list[int | None] = []
    seen_close = trio.Event()

    async def answer(ws: trio_websocket.WebSocketConnection, message: dict[str, Any]) -> None:
        if message["id"] != 2:
            return  # the first ping stays pending alongside the second
        piece = "x" * 65_536
        text = '{"jsonrpc":"2.0","result":{"t":"' + piece * (DRAIN_LIMIT // len(piece) + 2) + '"}}'
        try:
            # The client stops reading at the limit: this send ends when its
            # close frame (read by trio-websocket's reader task) or its TCP
            # close arrives.
            await ws.send_message(text)
            while True:
                await ws.get_message()
        except trio_websocket.ConnectionClosed:
            closed.append(None if ws.closed is None else ws.closed.code)
            seen_close.set()

    async with scripted_server(answer) as url:
        with trio.fail_after(30):
            async with open_websocket_client(url, max_message_size=BOUND, era="legacy") as client:
                failures: list[BaseException] = []

                async def ping() -> None:
                    try:
                        await client.ping()
                    except SessionClosed as exc:
                        failures.append(exc)

                async with trio.open_nursery() as calls:
                    calls.start_soon(ping)
                    await trio.testing.wait_all_tasks_blocked()
                    calls.start_soon(ping)
                assert len(failures) == 2
                for failure in failures:
                    assert "1009" in str(failure), failure
                assert client.session.closed
            await seen_close.wait()
    assert closed == [1009]


# ------------------------------------------------ the client's own connect


async def test_a_refused_handshake_raises_connection_rejected_unwrapped() -> None:
    """The connect built here (for _ClientConnection) fails as trio-websocket's
    did: a refusal is ConnectionRejected (not in a group), its socket closed."""
    async with trio.open_nursery() as nursery:
        url = await nursery.start(
            lambda task_status: serve_mcp_websocket(_big_server(), task_status=task_status)
        )
        with trio.fail_after(10), pytest.raises(trio_websocket.ConnectionRejected) as refused:
            async with open_websocket_client(url, headers={"Origin": "http://evil.example"}):
                pass
        assert refused.value.status_code == 403
        nursery.cancel_scope.cancel()


async def test_a_server_that_ends_the_handshake_fails_the_connect_at_once() -> None:
    """A peer that closes TCP instead of answering the upgrade: HandshakeError
    at once (trio-websocket waited out its 60 s connect timeout)."""

    async def hang_up(stream: trio.SocketStream) -> None:
        await stream.receive_some()
        await stream.aclose()

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, hang_up, 0, host="127.0.0.1")
        )
        port = listeners[0].socket.getsockname()[1]
        with trio.fail_after(10), pytest.raises(trio_websocket.HandshakeError):
            async with open_websocket_client(f"ws://127.0.0.1:{port}"):
                pass
        nursery.cancel_scope.cancel()
