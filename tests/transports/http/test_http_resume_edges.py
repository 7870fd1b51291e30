"""Resumability edges: several streams of one session, simultaneous resumes,
and a client that must not resume (reliability E-04, E-08, E-11).

The server side drives the ASGI application with hand-made requests whose
connections stay open or drop exactly when the test says, on the autojump
clock; the client side runs the real client against a scripted server on
httpx's mock transport (no sockets, so its timers are exact too).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest
import trio
import trio.testing
from helpers import first_text
from test_http_hardening import asgi_scope

from trio_mcp import Context, Server, http_app, open_http_client
from trio_mcp.transports._http._sse import SSEEvent, SSEParser, format_event
from trio_mcp.transports._http.server._app import StreamableHTTPApp
from trio_mcp.transports._http.server._asgi import Message
from trio_mcp.transports._http.server._event_store import MemoryEventStore

LATEST = "2025-11-25"
INIT = orjson.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": LATEST,
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
)


class Exchange:
    """One HTTP request to the app, run in a task: what came back, and a way
    to make the client leave."""

    def __init__(self, method: str, headers: dict[str, str], body: bytes = b"") -> None:
        scope = asgi_scope(headers={"host": "127.0.0.1:8000", **headers})
        scope["method"] = method
        self.scope = scope
        self.body = body
        self.status: int | None = None
        self.headers: dict[bytes, bytes] = {}
        self.chunks: list[bytes] = []
        self._finished = False
        self.leave = trio.Event()
        self._body_sent = False

    async def receive(self) -> Message:
        if not self._body_sent:
            self._body_sent = True
            await trio.lowlevel.checkpoint()
            return {"type": "http.request", "body": self.body, "more_body": False}
        await self.leave.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = dict(message["headers"])
        else:
            self.chunks.append(message.get("body", b""))
            self._finished = not message.get("more_body", False)

    def finished(self) -> bool:
        """Did the response end (its last body chunk was sent)?"""
        return self._finished

    async def run(self, app: StreamableHTTPApp) -> None:
        await app(self.scope, self.receive, self.send)

    @property
    def events(self) -> list[SSEEvent]:
        return SSEParser().feed(b"".join(self.chunks))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return [orjson.loads(e.data) for e in self.events if e.data]


def post(sid: str | None, body: bytes) -> Exchange:
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": LATEST,
    }
    if sid is not None:
        headers["mcp-session-id"] = sid
    return Exchange("POST", headers, body)


def resume(sid: str, last_event_id: str) -> Exchange:
    headers = {
        "accept": "text/event-stream",
        "mcp-session-id": sid,
        "mcp-protocol-version": LATEST,
        "last-event-id": last_event_id,
    }
    return Exchange("GET", headers)


async def complete(app: StreamableHTTPApp, exchange: Exchange) -> Exchange:
    """Run *exchange* to its end (the client stays)."""
    await exchange.run(app)
    return exchange


async def open_session(app: StreamableHTTPApp) -> str:
    init = await complete(app, post(None, INIT))
    assert init.status == 200
    sid = init.headers[b"mcp-session-id"].decode()
    note = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert (await complete(app, post(sid, note))).status == 202
    return sid


def tool_call(request_id: int, name: str, token: str, **arguments: Any) -> bytes:
    params = {"name": name, "arguments": arguments, "_meta": {"progressToken": token}}
    return orjson.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    )


def gated_server(tags: tuple[str, ...], steps: int) -> tuple[Server, dict[str, list[trio.Event]]]:
    """A tool ``step(tag)`` reporting progress 1..steps, each after its gate."""
    server = Server("gated", version="1.0")
    gates = {tag: [trio.Event() for _ in range(steps + 1)] for tag in tags}

    @server.tool()
    async def step(ctx: Context, tag: str) -> str:
        """Report progress when the test opens each gate."""
        for i in range(steps):
            await gates[tag][i].wait()
            await ctx.report_progress(i + 1, steps, message=tag)
        await gates[tag][steps].wait()
        return f"done {tag}"

    return server, gates


def stream_of(event_id: str | None) -> str:
    assert event_id is not None
    return event_id.rpartition(".")[0]


# ------------------------------------------------------------------ E-04


@pytest.mark.spec("HT-26")
@pytest.mark.spec("HT-24")
async def test_resume_replays_only_the_stream_the_event_id_names(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """E-04: two requests' streams of one session, their events interleaved;
    a Last-Event-ID of either gets that stream's later events and none of the
    other's."""
    server, gates = gated_server(("A", "B"), 3)
    app = http_app(server, event_store=MemoryEventStore())
    with trio.fail_after(60):  # a stream that never ends fails, not hangs
        await _only_that_stream(app, gates)


async def _only_that_stream(app: StreamableHTTPApp, gates: dict[str, list[trio.Event]]) -> None:
    async with app.run():
        sid = await open_session(app)
        calls = {"A": post(sid, tool_call(2, "step", "ta", tag="A"))}
        calls["B"] = post(sid, tool_call(3, "step", "tb", tag="B"))
        async with trio.open_nursery() as nursery:
            for exchange in calls.values():
                nursery.start_soon(exchange.run, app)
            # A1, B1, A2, B2, ...: sequence numbers alternate between streams.
            for i in range(4):
                for tag in ("A", "B"):
                    gates[tag][i].set()
                    await trio.testing.wait_all_tasks_blocked()
        ids = {tag: [e.id for e in calls[tag].events] for tag in calls}
        assert stream_of(ids["A"][0]) != stream_of(ids["B"][0])
        seqs = sorted((int(str(i).rpartition(".")[2]), tag) for tag in ids for i in ids[tag])
        assert [tag for _, tag in seqs][2:6] == ["A", "B", "A", "B"]  # interleaved
        for tag, other in (("A", "B"), ("B", "A")):
            own = calls[tag].messages  # progress 1, 2, 3, then the result
            assert own[-1]["result"]["content"][0]["text"] == f"done {tag}"
            for k, event_id in enumerate(ids[tag]):
                assert event_id is not None
                replay = await complete(app, resume(sid, event_id))
                assert replay.status == 200
                # Exactly this stream's events after the id (k=0: the priming event).
                assert replay.messages == own[k:], (tag, k)
                assert all(stream_of(e.id) == stream_of(event_id) for e in replay.events)
                assert f'"message":"{other}"' not in b"".join(replay.chunks).decode()
        # An id whose stream part names the other stream is another stream's id.
        a_seq = str(ids["A"][1]).rpartition(".")[2]
        forged = await complete(app, resume(sid, f"{stream_of(ids['B'][0])}.{a_seq}"))
        assert forged.status == 400
        assert forged.messages == []


# ------------------------------------------------------------------ E-11


@pytest.mark.spec("HT-23")
@pytest.mark.spec("HT-25")
async def test_simultaneous_resumes_bind_once(autojump_clock: trio.testing.MockClock) -> None:
    """E-11: while a request runs, its stream takes one connection: a resume
    while the POST is still connected, or a second simultaneous resume with
    the same Last-Event-ID, gets 409; every event is delivered exactly once."""
    server, gates = gated_server(("A",), 3)
    app = http_app(server, event_store=MemoryEventStore())
    # A deadline, so that a stream that never ends fails the test (the
    # autojump clock jumps to it) instead of hanging it.
    with trio.fail_after(60):
        await _bind_once(app, gates)


async def _bind_once(app: StreamableHTTPApp, gates: dict[str, list[trio.Event]]) -> None:
    async with app.run(), trio.open_nursery() as nursery:
        sid = await open_session(app)
        call = post(sid, tool_call(2, "step", "ta", tag="A"))
        nursery.start_soon(call.run, app)
        gates["A"][0].set()
        await trio.testing.wait_all_tasks_blocked()
        prime_id, first_id = (e.id for e in call.events)
        assert prime_id is not None
        assert first_id is not None
        # The POST is still connected: a resume cannot take its stream.
        early = await complete(app, resume(sid, prime_id))
        assert (early.status, early.messages) == (409, [])
        # The client drops the POST; two resumes race for the stream.
        call.leave.set()
        await trio.testing.wait_all_tasks_blocked()
        assert not call.finished()
        racers = [resume(sid, first_id), resume(sid, first_id)]
        for racer in racers:
            nursery.start_soon(racer.run, app)
        await trio.testing.wait_all_tasks_blocked()
        assert sorted(r.status for r in racers if r.status) == [200, 409]
        bound = next(r for r in racers if r.status == 200)
        refused = next(r for r in racers if r.status == 409)
        assert refused.finished()
        assert b"already connected" in b"".join(refused.chunks)
        assert not bound.finished()  # it holds the live stream
        gates["A"][1].set()
        gates["A"][2].set()
        gates["A"][3].set()
        await trio.testing.wait_all_tasks_blocked()
        assert bound.finished()
        delivered = call.messages + bound.messages
        progress = [m["params"]["progress"] for m in delivered if "method" in m]
        assert progress == [1, 2, 3]  # each once, across both connections
        assert [m["id"] for m in delivered if "result" in m] == [2]
        assert all(stream_of(e.id) == stream_of(first_id) for e in bound.events)
        # Later (not simultaneous) the same id is replayed from the store.
        again = await complete(app, resume(sid, first_id))
        assert again.status == 200
        assert again.messages == bound.messages
        nursery.cancel_scope.cancel()


# ------------------------------------------------------------------ E-08


class _Body(httpx.AsyncByteStream):
    """An SSE body: *events*, then either the end or a broken connection."""

    def __init__(self, events: list[bytes], *, cut: bool) -> None:
        self.events = events
        self.cut = cut

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for event in self.events:
            await trio.lowlevel.checkpoint()
            yield event
        if self.cut:
            raise httpx.ReadError("connection reset by peer")


class ScriptedServer:
    """A Streamable HTTP server played on httpx's mock transport.

    Every request's answer is an SSE stream: a priming event (with ``retry``),
    then the response, then the stream ends (``after="end"``), the connection
    breaks (``after="cut"``), or the connection breaks *before* the response
    (``after="cut before"``, so the client has to resume to get it).
    """

    def __init__(self, after: str) -> None:
        self.after = after
        self.requests: list[tuple[str, str | None]] = []
        self.posted: list[str | None] = []
        self.held: dict[str, bytes] = {}
        self.seq = 0

    def _event_id(self, stream: str) -> str:
        self.seq += 1
        return f"{stream}.{self.seq}"

    async def handle(self, request: httpx.Request) -> httpx.Response:
        await trio.lowlevel.checkpoint()
        self.requests.append((request.method, request.headers.get("last-event-id")))
        if request.method == "POST":
            self.posted.append(orjson.loads(request.content).get("method"))
        sse = {"content-type": "text/event-stream", "mcp-session-id": "sid-1"}
        if request.method == "DELETE":
            return httpx.Response(200)
        if request.method == "GET":
            last = request.headers.get("last-event-id")
            if last is None or last not in self.held:
                return httpx.Response(405)
            return httpx.Response(200, headers=sse, stream=_Body([self.held[last]], cut=False))
        message = orjson.loads(request.content)
        if "id" not in message:
            return httpx.Response(202)
        method = message["method"]
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": LATEST,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "scripted", "version": "0"},
            }
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "ok"}], "isError": False}
        elif method == "tools/list":
            result = {"tools": [{"name": "anything", "inputSchema": {"type": "object"}}]}
        else:
            result = {}
        stream = str(message["id"])
        prime_id = self._event_id(stream)
        prime = format_event("", id=prime_id, retry=10)
        answer = orjson.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})
        answer_event = format_event(answer, id=self._event_id(stream), event="message")
        if self.after == "cut before" and method == "tools/call":
            self.held[prime_id] = answer_event
            return httpx.Response(200, headers=sse, stream=_Body([prime], cut=True))
        cut = self.after == "cut" and method == "tools/call"
        return httpx.Response(200, headers=sse, stream=_Body([prime, answer_event], cut=cut))


@pytest.mark.spec("HT-25")
@pytest.mark.parametrize(("after", "resumes"), [("end", 0), ("cut", 0), ("cut before", 3)])
async def test_client_resumes_only_streams_that_owe_an_answer(
    after: str, resumes: int, autojump_clock: trio.testing.MockClock
) -> None:
    """E-08: a stream that already delivered its response never makes the
    client reconnect, whether it then ended or broke; one that broke before
    the response does (the contrast shows the count can be non-zero)."""
    scripted = ScriptedServer(after)
    http = httpx.AsyncClient(transport=httpx.MockTransport(scripted.handle))
    async with http, open_http_client("http://mcp.test/mcp", http_client=http) as client:
        for _ in range(3):
            result = await client.call_tool("anything", {})
            assert first_text(result) == "ok"
        # Long past any retry (10 ms) or reconnect delay (1 s).
        await trio.sleep(60)
        assert scripted.posted.count("tools/call") == 3
    with_id = [last for method, last in scripted.requests if method == "GET" and last]
    assert len(with_id) == resumes
