"""WebSocket transport edges (reliability W-03..W-09, O-11 for WebSocket).

A raw client built on wsproto (no trio-websocket on the client side) can send
what a well-behaved client never would: oversized, binary and invalid UTF-8
frames, half a frame, half a handshake. Faults that depend on time (pings
nobody answers, handshakes that never complete) run the server's connection
handler over in-memory streams on the autojump clock, so the times are exact;
the rest runs over real loopback sockets.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import socket
import struct
import tracemalloc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest
import trio
import trio.testing
from http_helpers import init_body, make_server
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    CloseConnection,
    Event,
    Ping,
    RejectConnection,
    Request,
    TextMessage,
)

from trio_mcp import Context, Server, SessionClosed, open_websocket_client, serve_session
from trio_mcp import serve_websocket as serve_mcp_websocket
from trio_mcp.transports._bounds import (
    CLOSE_TIMEOUT,
    HANDSHAKE_TIMEOUT,
    WEBSOCKET_DRAIN_FACTOR,
    websocket_drain_limit,
)
from trio_mcp.transports._bounds import WEBSOCKET_MAX_MESSAGE_SIZE as MAX_MESSAGE_SIZE
from trio_mcp.transports._http._common import OriginPolicy
from trio_mcp.transports._websocket import (
    WebSocketHandler,
    WebSocketTransport,
    _Acceptor,
)

INITIALIZED = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).decode()


def frame(opcode: int, payload: bytes, *, fin: bool = True, declared: int | None = None) -> bytes:
    """A masked client frame; *declared* overrides the payload length field."""
    length = len(payload) if declared is None else declared
    head = bytes([(0x80 if fin else 0) | opcode])
    if length < 126:
        head += bytes([0x80 | length])
    elif length < 1 << 16:
        head += bytes([0x80 | 126]) + struct.pack("!H", length)
    else:
        head += bytes([0x80 | 127]) + struct.pack("!Q", length)
    mask = os.urandom(4)
    # XOR by whole words: fast enough for the 4 MiB frames.
    words = len(payload) // 4 * 4
    masked = (
        int.from_bytes(payload[:words], "big") ^ int.from_bytes(mask * (words // 4), "big")
    ).to_bytes(words, "big") + bytes(b ^ mask[i] for i, b in enumerate(payload[words:]))
    return head + mask + masked


class RawClient:
    """A WebSocket client on wsproto over any trio stream."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.ws = WSConnection(ConnectionType.CLIENT)
        self.pending: list[Event] = []
        self.eof_at: float | None = None

    async def handshake(
        self, host: str = "127.0.0.1:8000", subprotocols: tuple[str, ...] = ("mcp",)
    ) -> Event:
        request = Request(host=host, target="/", subprotocols=list(subprotocols))
        await self.stream.send_all(self.ws.send(request))
        event = await self.next_event()
        assert isinstance(event, AcceptConnection | RejectConnection), event
        return event

    async def next_event(self) -> Event | None:
        """The next event from the server; None once the TCP connection ended."""
        while not self.pending:
            if self.eof_at is not None:
                return None
            try:
                data = await self.stream.receive_some()
            except trio.BrokenResourceError:
                data = b""
            if not data:
                self.eof_at = trio.current_time()
                return None
            self.ws.receive_data(bytes(data))
            self.pending.extend(self.ws.events())
        return self.pending.pop(0)

    async def send_text(self, text: str) -> None:
        await self.stream.send_all(self.ws.send(TextMessage(data=text)))

    async def message(self) -> dict[str, Any]:
        """The next JSON-RPC message (pings and their like are skipped)."""
        while True:
            event = await self.next_event()
            assert event is not None, "the server closed the connection"
            if isinstance(event, TextMessage):
                assert event.message_finished
                return orjson.loads(event.data)  # type: ignore[no-any-return]
            assert isinstance(event, Ping), event

    async def initialize(self, capabilities: dict[str, Any] | None = None) -> None:
        body = orjson.loads(init_body())
        body["params"]["capabilities"] = capabilities or {}
        await self.send_text(orjson.dumps(body).decode())
        assert (await self.message())["id"] == 1
        await self.send_text(INITIALIZED)

    async def wait_eof(self, within: float) -> None:
        """Read until the server ends the TCP connection, at most *within* s.

        On failure our end is closed first, which also frees a server stuck
        waiting for our close frame (else the test would hang, not fail).
        """
        with trio.move_on_after(within):
            while await self.next_event() is not None:
                pass
            return
        await self.stream.aclose()
        raise AssertionError(f"the server did not close the connection within {within} s")

    async def close_code_then_eof(self) -> int:
        """The code of the server's close frame (answered, as a client
        should), after which TCP must end."""
        event = await self.next_event()
        while isinstance(event, TextMessage | Ping):
            event = await self.next_event()
        assert isinstance(event, CloseConnection), event
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await self.stream.send_all(self.ws.send(event.response()))
        assert await self.next_event() is None
        return event.code


@asynccontextmanager
async def ws_server(**options: Any) -> AsyncIterator[int]:
    """serve_websocket on 127.0.0.1:0 (make_server); yields the port."""
    async with trio.open_nursery() as nursery:
        url = await nursery.start(
            lambda task_status: serve_mcp_websocket(
                make_server(), task_status=task_status, **options
            )
        )
        yield int(url.rsplit(":", 1)[1])
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def raw_connection(port: int) -> AsyncIterator[RawClient]:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        yield RawClient(stream)


async def still_serving(port: int) -> None:
    """A well-behaved client is served normally (the fault stayed with its connection)."""
    with trio.fail_after(10):
        async with open_websocket_client(f"ws://127.0.0.1:{port}") as client:
            result = await client.call_tool("add", {"a": 2, "b": 3})
            assert result.structured_content == {"result": 5}


def memory_acceptor(
    server: Server | None = None,
    *,
    handler: WebSocketHandler | None = None,
    **session_options: Any,
) -> _Acceptor:
    """The server's per-connection handler, to run over in-memory streams: it
    serves *server* (or runs *handler*) on each accepted connection."""
    served = server or make_server()

    async def serve(transport: WebSocketTransport) -> None:
        await serve_session(served, transport, **session_options)

    return _Acceptor(
        handler or serve,
        OriginPolicy(),
        ("127.0.0.1", 8000),
        max_message_size=MAX_MESSAGE_SIZE,
        handshake_timeout=HANDSHAKE_TIMEOUT,
        close_timeout=CLOSE_TIMEOUT,
    )


def ping_text(text: str) -> str:
    return orjson.dumps(
        {"jsonrpc": "2.0", "id": 9, "method": "ping", "params": {"_meta": {"x": text}}}
    ).decode()


# ------------------------------------------------------------------ framing


@pytest.mark.spec("TR-03")
@pytest.mark.spec("BP-28")
async def test_message_over_the_limit_is_refused_with_its_id_and_the_connection_goes_on() -> None:
    """W-03 / issue 17 §1: one byte over the default limit (16 MiB + 1 KiB) is
    refused -32600 with the id its head names, never buffered whole; the
    connection and its session go on."""
    assert MAX_MESSAGE_SIZE == 16 * 1024 * 1024 + 1024
    async with ws_server() as port, raw_connection(port) as client:
        await client.handshake(f"127.0.0.1:{port}")
        await client.initialize()
        head = b'{"jsonrpc":"2.0","id":5,"method":"ping","params":{"_meta":{"x":"'
        payload = head + b"a" * (MAX_MESSAGE_SIZE + 1 - len(head) - 4) + b'"}}}'
        assert len(payload) == MAX_MESSAGE_SIZE + 1
        await client.stream.send_all(frame(0x1, payload))
        with trio.fail_after(20):
            answer = await client.message()
        assert answer["id"] == 5
        assert answer["error"]["code"] == -32600
        assert "exceeds the limit" in answer["error"]["message"]
        await client.send_text(ping_text("after"))
        assert (await client.message())["id"] == 9
        await still_serving(port)


@pytest.mark.spec("TR-03")
@pytest.mark.spec("BP-28")
@pytest.mark.parametrize("id_first", [True, False], ids=["id-first", "id-last"])
async def test_a_fragmented_message_over_a_small_limit_is_refused_with_its_id(
    id_first: bool,
) -> None:
    async with ws_server(max_message_size=4000) as port, raw_connection(port) as client:
        await client.handshake(f"127.0.0.1:{port}")
        await client.initialize()
        big = {"_meta": {"x": "é" * 20_000}}  # counted in characters, kept as UTF-8
        body = {"jsonrpc": "2.0", "id": "big", "method": "ping", "params": big}
        if not id_first:
            body = {"jsonrpc": "2.0", "method": "ping", "params": big, "id": "big"}
        payload = orjson.dumps(body)
        parts = [payload[i : i + 3000] for i in range(0, len(payload), 3000)]
        wire = frame(0x1, parts[0], fin=False)
        wire += b"".join(frame(0x0, p, fin=False) for p in parts[1:-1]) + frame(0x0, parts[-1])
        await client.stream.send_all(wire)
        with trio.fail_after(10):
            answer = await client.message()
        assert (answer["id"], answer["error"]["code"]) == ("big", -32600)
        await client.send_text(ping_text("after"))
        assert (await client.message())["id"] == 9


# ------------------------------------------ the server's drain limit (issue 17 §1)

#: A bound small enough to go past its drain limit quickly: 4 x 300,000 is over
#: the 1 MiB floor, so the limit is the factor's.
DRAIN_BOUND = 300_000
DRAIN_LIMIT = websocket_drain_limit(DRAIN_BOUND)
PIECE = 65_536


@pytest.mark.spec("TR-03")
@pytest.mark.spec("BP-28")
async def test_a_message_under_the_drain_limit_is_refused_with_its_id_and_goes_on() -> None:
    """Issue 17 §1: a message over the bound but under the drain limit (3.7x
    the bound, in 64 KiB fragments) is still drained to its end and refused
    with its id; the connection is not closed and serves the next request."""
    assert DRAIN_LIMIT == WEBSOCKET_DRAIN_FACTOR * DRAIN_BOUND
    async with ws_server(max_message_size=DRAIN_BOUND) as port, raw_connection(port) as client:
        await client.handshake(f"127.0.0.1:{port}")
        await client.initialize()
        head = b'{"jsonrpc":"2.0","id":"under","method":"ping","params":{"_meta":{"x":"'
        count = (DRAIN_LIMIT - 2 * PIECE) // PIECE
        await client.stream.send_all(frame(0x1, head, fin=False))
        more = frame(0x0, b"a" * PIECE, fin=False)
        for _ in range(count):
            await client.stream.send_all(more)
        await client.stream.send_all(frame(0x0, b'"}}}'))
        assert DRAIN_BOUND < count * PIECE < DRAIN_LIMIT
        with trio.fail_after(20):
            answer = await client.message()
        assert (answer["id"], answer["error"]["code"]) == ("under", -32600)
        assert f"limit of {DRAIN_BOUND} bytes" in answer["error"]["message"]
        await client.send_text(ping_text("after"))
        assert (await client.message())["id"] == 9


def blocking_server() -> tuple[Server, trio.Event, trio.Event]:
    """A server with a ``block`` tool that waits forever: *started* is set
    when it runs, *cleaned* when it is cancelled (its ``finally`` ran)."""
    server = make_server()
    started = trio.Event()
    cleaned = trio.Event()

    @server.tool()
    async def block() -> str:
        """Wait forever."""
        started.set()
        try:
            await trio.sleep(float("inf"))
        finally:
            cleaned.set()
        return "never"

    return server, started, cleaned


@pytest.mark.spec("TR-03")
@pytest.mark.spec("BP-28")
async def test_a_message_past_the_drain_limit_is_closed_1009_unread_and_others_are_served(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 17 §1: a client streaming one endless text message (fragments that
    never end it) is not read forever. Past 4x the bound the server closes with
    1009 and a reason naming the sizes, having read at most one fragment past
    the limit, with memory about the bound (not the limit); the session of that
    connection ends as on any disconnect (its running tool is cancelled,
    nothing is logged as a failure); another connection is served while the
    message is sent and after, and the server goes on accepting."""
    server, started, cleaned = blocking_server()

    def add(a: int) -> dict[str, Any]:
        return {"result": a + 1}

    async with trio.open_nursery() as nursery:
        url = await nursery.start(
            lambda task_status: serve_mcp_websocket(
                server, max_message_size=DRAIN_BOUND, task_status=task_status
            )
        )
        port = int(url.rsplit(":", 1)[1])
        with trio.fail_after(30):
            async with (
                open_websocket_client(url) as other,
                raw_connection(port) as client,
            ):
                await client.handshake(f"127.0.0.1:{port}")
                await client.initialize()
                call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
                call["params"] = {"name": "block", "arguments": {}}
                await client.send_text(orjson.dumps(call).decode())
                await started.wait()
                # Its first call builds what the client keeps (~150 kB): not in the measure.
                assert (await other.call_tool("add", {"a": 0, "b": 1})).structured_content == add(0)

                more = frame(0x0, b"a" * PIECE, fin=False)
                halfway = trio.Event()
                resume = trio.Event()
                sent = [0]

                async def flood() -> None:
                    head = b'{"jsonrpc":"2.0","method":"ping","params":{"x":"'
                    try:
                        await client.stream.send_all(frame(0x1, head, fin=False))
                        sent[0] = len(head)
                        while True:  # never the final fragment
                            await client.stream.send_all(more)
                            sent[0] += PIECE
                            if not halfway.is_set() and sent[0] > DRAIN_LIMIT // 2:
                                halfway.set()
                                await resume.wait()
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        pass  # the server dropped TCP after its close frame

                with caplog.at_level(logging.ERROR, logger="trio_mcp"):
                    tracemalloc.start()
                    try:
                        async with trio.open_nursery() as sending:
                            sending.start_soon(flood)
                            await halfway.wait()
                            # Half the message is out (the server's reader is at it).
                            assert (
                                await other.call_tool("add", {"a": 1, "b": 1})
                            ).structured_content == add(1)
                            resume.set()
                            event = await client.next_event()
                            while isinstance(event, Ping):
                                event = await client.next_event()
                            sent_at_close = sent[0]
                            sending.cancel_scope.cancel()
                        _, peak = tracemalloc.get_traced_memory()
                    finally:
                        tracemalloc.stop()
                    assert isinstance(event, CloseConnection), event
                    assert event.code == 1009
                    assert event.reason is not None
                    match = re.fullmatch(
                        rf"Message of over (\d+) bytes exceeds the drain limit of {DRAIN_LIMIT}"
                        rf" bytes \({WEBSOCKET_DRAIN_FACTOR}x the bound of {DRAIN_BOUND}\)",
                        event.reason,
                    )
                    assert match is not None, event.reason
                    read = int(match.group(1))
                    # Read up to the limit, then at most the fragment that crossed it.
                    assert DRAIN_LIMIT < read <= DRAIN_LIMIT + PIECE
                    # The message has no end: the close came while it was sent
                    # (all the server read had been sent, but one fragment in flight).
                    assert sent_at_close > read - PIECE
                    # Buffered up to the bound (trio-websocket's parts), then
                    # 8 KiB: about 350 kB measured, well under what was read.
                    assert peak < 2 * DRAIN_BOUND < read
                    # The TCP connection ends; the session's tool was cancelled.
                    while await client.next_event() is not None:
                        pass
                    await cleaned.wait()
                    assert (
                        await other.call_tool("add", {"a": 2, "b": 1})
                    ).structured_content == add(2)
                await still_serving(port)
        nursery.cancel_scope.cancel()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.spec("TR-03")
async def test_binary_frame_is_closed_with_1003() -> None:
    """W-04: MCP messages are text frames; a binary one closes with 1003."""
    async with ws_server() as port, raw_connection(port) as client:
        await client.handshake(f"127.0.0.1:{port}")
        await client.initialize()
        await client.stream.send_all(frame(0x2, ping_text("binary").encode()))
        with trio.fail_after(10):
            assert await client.close_code_then_eof() == 1003
        await still_serving(port)


@pytest.mark.spec("TR-01")
@pytest.mark.parametrize("where", ["one frame", "continuation frame"])
async def test_invalid_utf8_is_closed_with_1007(where: str) -> None:
    """W-05: invalid UTF-8 in a text message closes with 1007 (a close frame,
    not only a dropped connection, which the peer would read as 1006)."""
    async with ws_server() as port, raw_connection(port) as client:
        await client.handshake(f"127.0.0.1:{port}")
        await client.initialize()
        text = ping_text("ok").encode()
        # A valid two-byte character split across fragments is fine...
        split = ping_text("caf\u00e9").encode()
        cut = split.index(b"\xc3") + 1
        await client.stream.send_all(frame(0x1, split[:cut], fin=False) + frame(0x0, split[cut:]))
        assert (await client.message())["id"] == 9
        # ...a byte that is no UTF-8 is not.
        bad = text.replace(b"ok", b"\xff\xfe")
        if where == "one frame":
            await client.stream.send_all(frame(0x1, bad))
        else:
            await client.stream.send_all(frame(0x1, bad[:5], fin=False) + frame(0x0, bad[5:]))
        with trio.fail_after(10):
            assert await client.close_code_then_eof() == 1007
        await still_serving(port)


# -------------------------------------------------------------- dead peers


@pytest.mark.spec("PI-05")
async def test_peer_that_stops_answering_pings_is_closed_and_calls_fail(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """W-06: with the session keepalive (10 s, 5 s timeout) a peer that answers
    nothing is closed at t=15 (close frame), the TCP connection dropped
    CLOSE_TIMEOUT later (it never answers the close either), and the server's
    request in flight to it fails with SessionClosed."""
    server = make_server()
    failures: list[BaseException] = []

    @server.tool()
    async def ask_roots(ctx: Context) -> str:
        """Ask the client for its roots (it never answers)."""
        try:
            await ctx.list_roots()
        except SessionClosed as exc:
            failures.append(exc)
            return "failed"
        return "answered"

    acceptor = memory_acceptor(server, keepalive_interval=10, keepalive_timeout=5)
    client_end, server_end = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(acceptor, server_end)
        client = RawClient(client_end)
        assert isinstance(await client.handshake(), AcceptConnection)
        await client.initialize({"roots": {}})
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
        call["params"] = {"name": "ask_roots", "arguments": {}}
        await client.send_text(orjson.dumps(call).decode())
        asked = await client.message()
        assert (asked["method"], trio.current_time()) == ("roots/list", 0)
        ping = await client.message()
        assert (ping["method"], trio.current_time()) == ("ping", 10)
        with trio.fail_after(60):
            event = await client.next_event()
        assert isinstance(event, CloseConnection)
        assert trio.current_time() == 15
        await client.wait_eof(within=CLOSE_TIMEOUT + 1)
        assert client.eof_at == 15 + CLOSE_TIMEOUT
        await trio.testing.wait_all_tasks_blocked()
        assert len(failures) == 1
        assert "ping timeout" in str(failures[0])
        nursery.cancel_scope.cancel()


async def test_server_shutdown_is_bounded_with_a_peer_that_stopped_reading(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """W-06: closing a session whose peer never answers the close frame takes
    CLOSE_TIMEOUT, not forever (the close used to wait, shielded, for good)."""
    acceptor = memory_acceptor()
    client_end, server_end = trio.testing.memory_stream_pair()
    client = RawClient(client_end)
    async with trio.open_nursery() as outer:
        serving = trio.CancelScope()

        async def serve() -> None:
            with serving:
                await acceptor(server_end)

        outer.start_soon(serve)
        await client.handshake()
        await client.initialize()
        await trio.testing.wait_all_tasks_blocked()
        start = trio.current_time()
        serving.cancel()
        event = await client.next_event()
        assert isinstance(event, CloseConnection)
        assert trio.current_time() == start
        await client.wait_eof(within=CLOSE_TIMEOUT + 1)
        assert client.eof_at == start + CLOSE_TIMEOUT


@pytest.mark.parametrize("how", ["reset", "eof"])
async def test_connection_lost_mid_message_cleans_the_session(how: str) -> None:
    """W-07: the TCP connection ends in the middle of a frame: the session's
    handlers are cancelled, nothing escapes, the server goes on."""
    server, started, cleaned = blocking_server()

    async with trio.open_nursery() as nursery:
        url = await nursery.start(
            lambda task_status: serve_mcp_websocket(server, task_status=task_status)
        )
        port = int(url.rsplit(":", 1)[1])
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        client = RawClient(stream)
        await client.handshake(f"127.0.0.1:{port}")
        await client.initialize()
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
        call["params"] = {"name": "block", "arguments": {}}
        await client.send_text(orjson.dumps(call).decode())
        with trio.fail_after(10):
            await started.wait()
        # Half a frame: it declares 100 bytes and carries 10.
        await stream.send_all(frame(0x1, b"0123456789", declared=100))
        if how == "reset":
            stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        await stream.aclose()
        with trio.fail_after(10):
            await cleaned.wait()
        with trio.fail_after(10):
            async with open_websocket_client(url) as other:
                assert (await other.call_tool("add", {"a": 1, "b": 1})).structured_content == {
                    "result": 2
                }
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("subprotocol", ["mcp", "other"])
async def test_peer_gone_while_its_handshake_is_answered(
    subprotocol: str, caplog: pytest.LogCaptureFixture
) -> None:
    """W-07 at the handshake: the peer sends its upgrade request and is gone
    before the answer (accept or refusal) is written. trio-websocket raises
    ConnectionClosed there, which used to escape into the listener and stop
    the server; now that connection ends quietly."""
    client_end, server_end = trio.testing.memory_stream_pair()
    request = Request(host="127.0.0.1:8000", target="/", subprotocols=[subprotocol])
    await client_end.send_all(WSConnection(ConnectionType.CLIENT).send(request))
    await client_end.aclose()
    with caplog.at_level(logging.DEBUG, logger="trio_mcp.websocket"), trio.fail_after(10):
        await memory_acceptor()(server_end)  # returns: nothing raised
    assert any("left during its handshake" in r.getMessage() for r in caplog.records)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_resets_after_the_handshake_do_not_stop_the_server() -> None:
    """W-07 over sockets: clients that reset right after sending their upgrade
    request (accepted or refused ones) leave the listener serving."""
    async with ws_server() as port:
        for i in range(20):
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            request = Request(
                host=f"127.0.0.1:{port}", target="/", subprotocols=["mcp" if i % 2 else "x"]
            )
            await stream.send_all(WSConnection(ConnectionType.CLIENT).send(request))
            stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            await stream.aclose()
        await still_serving(port)


async def test_a_failing_connection_is_logged_and_ends_alone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A connection whose session fails unexpectedly is logged and closed;
    the acceptor returns (the listener, and the other connections, go on)."""

    async def broken(transport: WebSocketTransport) -> None:
        await transport.receive()
        raise RuntimeError("a bug in this session")

    client_end, server_end = trio.testing.memory_stream_pair()
    client = RawClient(client_end)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(memory_acceptor(handler=broken), server_end)
        await client.handshake()
        with caplog.at_level(logging.ERROR, logger="trio_mcp.websocket"):
            await client.send_text(INITIALIZED)
            with trio.fail_after(10):
                assert await client.close_code_then_eof() == 1000
            await trio.testing.wait_all_tasks_blocked()
    (record,) = caplog.records
    assert "serving goes on" in record.getMessage()
    assert record.exc_info is not None


# ------------------------------------------------------------- handshakes


async def test_half_open_handshakes_are_closed_at_the_handshake_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """W-08: 1,000 connections that never complete their handshake (silent,
    half a request head, a head trickled a byte a second) are all closed at
    exactly HANDSHAKE_TIMEOUT; a client that did complete it is not cut."""
    assert HANDSHAKE_TIMEOUT == 10.0
    acceptor = memory_acceptor()
    head = b"GET / HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nUpgrade: websocket\r\n"
    closed_at: list[float] = []

    async def half_open(kind: int, client_end: trio.abc.Stream) -> None:
        if kind == 1:  # half a request head
            await client_end.send_all(head)
        if kind == 2:  # a head trickled a byte every 0.7 s: every read is prompt
            trickle = iter(head * 10)
            while True:
                with trio.move_on_after(0.7) as idle:
                    data = await client_end.receive_some()
                if not idle.cancelled_caught:
                    break
                await client_end.send_all(bytes([next(trickle)]))
        else:
            data = await client_end.receive_some()
        assert data == b""  # closed without a response
        closed_at.append(trio.current_time())

    async with trio.open_nursery() as nursery:
        for i in range(1000):
            client_end, server_end = trio.testing.memory_stream_pair()
            nursery.start_soon(acceptor, server_end)
            nursery.start_soon(half_open, i % 3, client_end)
        good_end, good_server_end = trio.testing.memory_stream_pair()
        nursery.start_soon(acceptor, good_server_end)
        good = RawClient(good_end)
        assert isinstance(await good.handshake(), AcceptConnection)
        await good.initialize()
        await trio.sleep(HANDSHAKE_TIMEOUT + 1)
        assert len(closed_at) == 1000
        assert set(closed_at) == {HANDSHAKE_TIMEOUT}
        await good.send_text(ping_text("still here"))
        assert (await good.message())["id"] == 9
        nursery.cancel_scope.cancel()


async def test_serve_websocket_applies_its_handshake_timeout() -> None:
    # Real sockets, a tiny timeout: the listener's connections get it.
    async with ws_server(handshake_timeout=0.05) as port:
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        async with stream:
            await stream.send_all(b"GET / HTTP/1.1\r\n")
            with trio.fail_after(10):
                assert await stream.receive_some() == b""


# ------------------------------------------------------------- slow readers


async def test_slow_reader_does_not_slow_other_connections() -> None:
    """W-09: a client that sends requests and never reads the answers (16 MiB
    of them) blocks its own session's writer; another client is served as
    usual meanwhile."""
    count = 256
    text = "x" * 65536
    async with ws_server() as port:
        sock = await trio.open_tcp_stream("127.0.0.1", port)
        # A small receive buffer: the answers back up sooner (the kernel
        # buffers of both ends then hold well under 1 MiB of them).
        sock.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        slow = RawClient(sock)
        await slow.handshake(f"127.0.0.1:{port}")
        await slow.initialize()

        async def flood() -> None:
            for i in range(count):
                call = {"jsonrpc": "2.0", "id": 100 + i, "method": "tools/call"}
                call["params"] = {"name": "echo", "arguments": {"text": text}}
                await slow.send_text(orjson.dumps(call).decode())

        async with trio.open_nursery() as nursery:
            nursery.start_soon(flood)
            # Whether the server took every request or pushed back, its writer
            # to this client is now stuck on a full socket.
            await trio.testing.wait_all_tasks_blocked(cushion=0.05)
            with trio.fail_after(10):
                async with open_websocket_client(f"ws://127.0.0.1:{port}") as client:
                    for i in range(20):
                        result = await client.call_tool("add", {"a": i, "b": 1})
                        assert result.structured_content == {"result": i + 1}
            nursery.cancel_scope.cancel()
        # Reset, so the server's blocked writes fail at once.
        sock.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        await sock.aclose()


# ------------------------------------------------------------------- O-11


@pytest.mark.spec("HT-03")
async def test_non_loopback_bind_without_allowed_hosts_warns(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """O-11 for WebSocket: binding 0.0.0.0 or :: without allowed_hosts logs a
    warning (the Host check is then off); loopback binds and configured hosts
    do not. The listener is really opened on 127.0.0.1 (tests stay on loopback)."""
    opened: list[str] = []
    real_open = trio.open_tcp_listeners

    async def loopback_only(port: int, *, host: str | None = None, **kw: Any) -> Any:
        opened.append(str(host))
        return await real_open(port, host="127.0.0.1", **kw)

    monkeypatch.setattr(trio, "open_tcp_listeners", loopback_only)
    cases = [
        ("0.0.0.0", None, True),
        ("::", None, True),
        ("0.0.0.0", {"mcp.example:*"}, False),
        ("127.0.0.1", None, False),
        ("::1", None, False),
        ("localhost", None, False),
    ]
    for host, allowed, warns in cases:
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="trio_mcp.websocket"):
            async with trio.open_nursery() as nursery:
                url = await nursery.start(
                    lambda task_status, host=host, allowed=allowed: serve_mcp_websocket(
                        make_server(), host, allowed_hosts=allowed, task_status=task_status
                    )
                )
                nursery.cancel_scope.cancel()
        shown = f"[{host}]" if ":" in host else host
        assert url.startswith(f"ws://{shown}:")
        warned = [r for r in caplog.records if "without allowed_hosts" in r.getMessage()]
        assert bool(warned) is warns, (host, allowed)
    assert opened == [host for host, _, _ in cases]
