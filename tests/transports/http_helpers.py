"""Helpers of the HTTP, SSE and WebSocket transport tests (real loopback sockets, port 0)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import orjson
import trio
from helpers import initialize_frame

from trio_mcp import Client, Server, http_app, serve_http
from trio_mcp.lowlevel import Identity
from trio_mcp.transports._http.client._transport import HttpClientTransport
from trio_mcp.transports._http.server._app import StreamableHTTPApp
from trio_mcp.transports._http.server._asgi import ASGIApp, Message
from trio_mcp.transports._http.server._transport import HttpServerTransport

ACCEPT_BOTH = "application/json, text/event-stream"
LATEST = "2025-11-25"


def make_server() -> Server:
    server = Server("http-test", version="1.0")

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    async def echo(text: str) -> str:
        """Echo the text."""
        return text

    return server


def init_body(request_id: Any = 1, version: str = LATEST) -> bytes:
    """A raw HTTP client's ``initialize`` body."""
    return initialize_frame(request_id, version, client="raw")


def post_headers(session_id: str | None = None, **extra: str) -> dict[str, str]:
    headers = {"accept": ACCEPT_BOTH, "content-type": "application/json"}
    if session_id is not None:
        headers["mcp-session-id"] = session_id
    headers.update(extra)
    return headers


@asynccontextmanager
async def running(
    app_or_server: Server | StreamableHTTPApp, **options: Any
) -> AsyncIterator[tuple[str, StreamableHTTPApp]]:
    """Serve on 127.0.0.1:0; yield (base URL, app)."""
    app = (
        app_or_server
        if isinstance(app_or_server, StreamableHTTPApp)
        else http_app(app_or_server, **options)
    )
    async with trio.open_nursery() as nursery:
        url = await nursery.start(lambda task_status: serve_http(app, task_status=task_status))
        yield url, app
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def raw_client(base: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=base, timeout=httpx.Timeout(10.0)) as http:
        yield http


async def open_raw_session(http: httpx.AsyncClient, version: str = LATEST) -> str:
    """Initialize a session with raw HTTP; return its id."""
    response = await http.post("/mcp", content=init_body(version=version), headers=post_headers())
    assert response.status_code == 200, response.text
    session_id = response.headers["mcp-session-id"]
    note = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
    answer = await http.post(
        "/mcp", content=note, headers=post_headers(session_id, **{"mcp-protocol-version": version})
    )
    assert answer.status_code == 202
    return session_id


def sse_messages(text: str) -> list[dict[str, Any]]:
    from trio_mcp.transports._http._sse import SSEParser

    events = SSEParser().feed(text.encode())
    return [orjson.loads(e.data) for e in events if e.event == "message" and e.data]


@asynccontextmanager
async def http_transport_pair(
    *, json_response: bool = False, client_first: bool = True
) -> AsyncIterator[tuple[Any, Any]]:
    """A connected (client, server) pair of HTTP transports, for check_transport.

    The server end is the raw :class:`HttpServerTransport` of a session (no
    Session on it); the factory performs the initialize exchange itself and
    waits until the client's GET stream is attached.
    """
    handed: trio.MemorySendChannel[HttpServerTransport]
    handed, receive_handed = trio.open_memory_channel[HttpServerTransport](1)

    async def handler(transport: HttpServerTransport, *, identity: Identity) -> None:
        await handed.send(transport)
        await transport.wait_closed()

    app = StreamableHTTPApp(transport_handler=handler, json_response=json_response)
    async with running(app) as (url, _), trio.open_nursery() as nursery:
        http = httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None))
        # The checker closes one end and expects the other to see the end: a
        # client that re-initialized after the 404 would never see it.
        client = HttpClientTransport(
            url + "/mcp", http, nursery, reconnect_delay=0.05, reinitialize=False
        )
        box: list[HttpServerTransport] = []

        async def play_server() -> None:
            server = await receive_handed.receive()
            box.append(server)
            frame = orjson.loads(await server.receive())
            result = {
                "protocolVersion": LATEST,
                "capabilities": {},
                "serverInfo": {"name": "raw", "version": "0"},
            }
            await server.send(orjson.dumps({"jsonrpc": "2.0", "id": frame["id"], "result": result}))

        nursery.start_soon(play_server)
        await client.send(init_body())
        assert orjson.loads(await client.receive())["result"]["protocolVersion"] == LATEST
        server = box[0]
        await client.send(orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        assert orjson.loads(await server.receive())["method"] == "notifications/initialized"
        await server.wait_get_stream()
        try:
            yield (client, server) if client_first else (server, client)
        finally:
            await client.aclose()
            await server.aclose()
            await http.aclose()
            nursery.cancel_scope.cancel()


def http_transport_of(client: Client) -> HttpClientTransport:
    """The HTTP client transport *client* runs over."""
    transport = client.session.transport
    assert isinstance(transport, HttpClientTransport), transport
    return transport


@asynccontextmanager
async def legacy_sse_stream(
    url: str, headers: dict[str, str] | None = None
) -> AsyncIterator[tuple[trio.SocketStream, str, bytes]]:
    """A legacy ``GET /sse`` read from a plain socket (leaving an httpx stream early
    would leave its generators to the garbage collector): yield the stream, the
    POST endpoint its ``endpoint`` event names, and the bytes read so far.
    *headers* are sent with the GET (e.g. ``Authorization``)."""
    extra = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
    host, port = url.removeprefix("http://").rsplit(":", 1)
    stream = await trio.open_tcp_stream(host, int(port))
    async with stream:
        await stream.send_all(
            f"GET /sse HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Accept: text/event-stream\r\n{extra}\r\n".encode()
        )
        seen = b""
        endpoint_event = re.compile(rb"event: endpoint\r?\ndata: (\S+)\r?\n")
        with trio.fail_after(10):
            while (found := endpoint_event.search(seen)) is None:
                seen += await stream.receive_some()
        yield stream, found.group(1).decode(), seen


def start_asgi(
    app: ASGIApp, nursery: trio.Nursery, request: httpx.Request, content: bytes
) -> tuple[trio.MemoryReceiveChannel[Message], trio.Event]:
    """Run *app* on *request* (its body *content* already read) in *nursery*,
    as an ASGI server would: the app's messages arrive on the returned
    channel, which ends when the app returns; setting the returned event is
    the client's disconnect."""
    out_send, out_receive = trio.open_memory_channel[Message](256)
    gone = trio.Event()
    delivered = False

    async def receive() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": content, "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        await out_send.send(message)

    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": "http",
        "path": request.url.path,
        "raw_path": request.url.raw_path,
        "query_string": request.url.query,
        "root_path": "",
        "headers": [(k.lower(), v) for k, v in request.headers.raw],
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 50000),
    }

    async def serve() -> None:
        async with out_send:
            await app(scope, receive, send)

    nursery.start_soon(serve)
    return out_receive, gone
