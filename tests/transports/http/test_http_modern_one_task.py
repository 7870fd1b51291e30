"""A 2026-07-28 POST is served in its own task: the one-request session is
entered there (``run_one_request``) and the wait for the first message also
watches for the client's disconnect, with no task beside it.

These drive the ASGI application directly (no HTTP server), so the clock can
be Trio's autojump clock and every task the application spawns is its own.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import pytest
import trio
from http_helpers import make_server

from trio_mcp import Context, http_app
from trio_mcp.lowlevel import CancelOrigin, Identity, RequestState
from trio_mcp.protocol import FrameDirection
from trio_mcp.testing import RecordingObserver
from trio_mcp.transports import StreamableHTTPApp
from trio_mcp.transports._http.server._transport import HttpServerTransport

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def call_body(tool: str, request_id: int = 7) -> bytes:
    params = {"name": tool, "arguments": {}, "_meta": META}
    return orjson.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    )


def call_headers(tool: str) -> list[tuple[bytes, bytes]]:
    return [
        (b"host", b"127.0.0.1"),
        (b"accept", b"application/json, text/event-stream"),
        (b"content-type", b"application/json"),
        (b"mcp-protocol-version", MODERN.encode()),
        (b"mcp-method", b"tools/call"),
        (b"mcp-name", tool.encode()),
    ]


class Exchange:
    """One POST against the application: what it sent, and when."""

    def __init__(self, body: bytes, *, leave: trio.Event | None = None) -> None:
        self.body = body
        self.sent: list[tuple[float, dict[str, Any]]] = []
        self.done = trio.Event()
        # Set by the test: the client disconnects.
        self.leave = leave or trio.Event()
        self._delivered = False

    async def receive(self) -> dict[str, Any]:
        if not self._delivered:
            self._delivered = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        await self.leave.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append((trio.current_time(), message))
        if message["type"] == "http.response.body" and not message.get("more_body"):
            self.done.set()
            self.leave.set()  # a client that got its answer goes away

    @property
    def status(self) -> int:
        (start,) = [m for _, m in self.sent if m["type"] == "http.response.start"]
        return int(start["status"])

    @property
    def content(self) -> bytes:
        return b"".join(
            m.get("body", b"") for _, m in self.sent if m["type"] == "http.response.body"
        )


async def post(app: Any, exchange: Exchange, tool: str) -> None:
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "root_path": "",
        "headers": call_headers(tool),
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 80),
    }
    await app(scope, exchange.receive, exchange.send)


async def serving(app: StreamableHTTPApp, work: Callable[[], Awaitable[None]]) -> None:
    async with app.run():
        await work()


class SpawnCounter(trio.abc.Instrument):
    def __init__(self) -> None:
        self.names: list[str] = []

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.names.append(task.name)


async def test_a_modern_post_spawns_only_its_handler() -> None:
    server = make_server()

    @server.tool()
    async def ping_me() -> str:
        """Answers at once."""
        return "pong"

    app = http_app(server)
    counter = SpawnCounter()

    async def work() -> None:
        exchange = Exchange(call_body("ping_me"))
        trio.lowlevel.add_instrument(counter)
        try:
            await post(app, exchange, "ping_me")
        finally:
            trio.lowlevel.remove_instrument(counter)
        assert exchange.status == 200
        assert orjson.loads(exchange.content)["result"]["content"][0]["text"] == "pong"

    await serving(app, work)
    # The request's handler alone: no task to run the session beside the POST,
    # no reader (the POST feeds the session its frame), none to watch for the
    # disconnect, and no writer (every frame was written through).
    assert counter.names == ["trio_mcp inbound request"]


async def test_a_bad_request_fed_by_the_post_gets_its_error_and_the_next_post_is_served() -> None:
    server = make_server()

    @server.tool()
    async def ping_me() -> str:
        """Answers at once."""
        return "pong"

    observer = RecordingObserver()
    app = http_app(server, session_options={"observer": observer})
    # The header names the revision, the body's _meta is missing: the session
    # (fed by the POST, no reader) refuses it with the request's id (ME-07).
    params = {"name": "ping_me", "arguments": {}}
    bad_body = orjson.dumps({"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": params})
    bad = Exchange(bad_body)
    good = Exchange(call_body("ping_me", 42))

    async def work() -> None:
        with trio.fail_after(5):
            await post(app, bad, "ping_me")
            await post(app, good, "ping_me")

    await serving(app, work)
    assert bad.status == 400
    refusal = orjson.loads(bad.content)
    assert refusal["id"] == 41
    assert refusal["error"]["code"] == -32602
    assert good.status == 200
    assert orjson.loads(good.content)["result"]["content"][0]["text"] == "pong"
    # The observer saw both frames come in, as a reader would have shown them.
    inbound = [data for direction, data, _ in observer.frames if direction is FrameDirection.IN]
    assert inbound == [bad_body, call_body("ping_me", 42)]


async def test_a_slow_answer_gets_its_head_at_the_deferral_then_the_answer_on_the_stream(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = make_server()

    @server.tool()
    async def slow() -> str:
        """Answers after 5 s."""
        await trio.sleep(5)
        return "late"

    app = http_app(server, modern_head_deferral=2.0)
    exchange = Exchange(call_body("slow"))

    async def work() -> None:
        start = trio.current_time()
        await post(app, exchange, "slow")
        (head_at, head) = exchange.sent[0]
        assert head["type"] == "http.response.start"
        assert head_at - start == pytest.approx(2.0)
        assert (b"content-type", b"text/event-stream") in head["headers"]
        last_at = exchange.sent[-1][0]
        assert last_at - start == pytest.approx(5.0)

    await serving(app, work)
    assert exchange.status == 200
    assert b'"text":"late"' in exchange.content


@pytest.mark.spec("HM-13")
@pytest.mark.parametrize("json_response", [False, True])
async def test_a_disconnect_while_the_head_waits_cancels_the_request_at_once(
    autojump_clock: trio.testing.MockClock, json_response: bool
) -> None:
    server = make_server()
    started = trio.Event()

    @server.tool()
    async def forever(ctx: Context) -> str:
        """Never answers by itself."""
        started.set()
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    observer = RecordingObserver()
    app = http_app(
        server,
        session_options={"observer": observer},
        modern_head_deferral=10.0,
        json_response=json_response,
    )
    exchange = Exchange(call_body("forever", 77))

    async def work() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(post, app, exchange, "forever")
            await started.wait()
            left_at = trio.current_time()
            exchange.leave.set()  # well inside the head deferral
        # The POST returned as soon as its session stopped, long before 10 s.
        assert trio.current_time() - left_at < 1.0

    await serving(app, work)
    assert exchange.sent == []  # nothing was written for it
    (record,) = [r for r in observer.snapshots if r.id == 77 and r.state is RequestState.CANCELLED]
    assert record.cancel_origin is CancelOrigin.TRANSPORT


async def test_a_failing_session_answers_500_with_the_id_and_the_server_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls = 0

    async def handler(transport: HttpServerTransport, *, identity: Identity) -> None:
        nonlocal calls
        calls += 1
        frame = orjson.loads(await transport.receive())
        if calls == 1:
            raise RuntimeError("a bug in this request's session")
        reply = {"jsonrpc": "2.0", "id": frame["id"], "result": {"n": calls}}
        await transport.send(orjson.dumps(reply))
        # A session reads until the client side ends (the answer went out).
        with pytest.raises(trio.EndOfChannel):
            await transport.receive()

    app = StreamableHTTPApp(transport_handler=handler)
    failed = Exchange(call_body("any", 5))
    served = Exchange(call_body("any", 6))

    async def work() -> None:
        with trio.fail_after(5):
            await post(app, failed, "any")
            await post(app, served, "any")

    with caplog.at_level(logging.ERROR, logger="trio_mcp.http"):
        await serving(app, work)
    assert failed.status == 500
    error = orjson.loads(failed.content)
    assert error["id"] == 5
    assert error["error"]["code"] == -32603
    assert "not answered" in error["error"]["message"]
    assert served.status == 200
    assert orjson.loads(served.content) == {"jsonrpc": "2.0", "id": 6, "result": {"n": 2}}
    assert any("session failed" in r.getMessage() for r in caplog.records)
