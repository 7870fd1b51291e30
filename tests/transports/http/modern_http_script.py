"""A scripted 2026-07-28 Streamable HTTP server for the client's tests.

A small ASGI application on hypercorn over loopback (port 0): every POST is
recorded (its headers and body) and answered by the test's *handler*, which
gets a :class:`Post` and answers with JSON, an SSE stream (which it may break
off), or waits for the client to leave. GET and DELETE are answered 405, as a
modern-only server does (HM-31).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import orjson
import trio
from hypercorn.trio import serve

from trio_mcp.transports._http._sse import format_event
from trio_mcp.transports._http.server._app import hypercorn_config
from trio_mcp.transports._http.server._asgi import Receive, Scope, Send

MODERN = "2026-07-28"


def complete(result: dict[str, Any], *, cacheable: bool = False) -> dict[str, Any]:
    """*result* with the fields every 2026-07-28 result carries."""
    stamped = {"resultType": "complete", **result}
    if cacheable:
        stamped.setdefault("ttlMs", 0)
        stamped.setdefault("cacheScope", "private")
    return stamped


def discover_result(capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return complete(
        {
            "supportedVersions": [MODERN],
            "capabilities": capabilities if capabilities is not None else {"tools": {}},
            "serverInfo": {"name": "scripted", "version": "1"},
        },
        cacheable=True,
    )


class BrokenOff(Exception):
    """Raised by a handler to end its response without finishing it."""


class Post:
    """One POST: what the client sent, and the means to answer it."""

    def __init__(self, headers: dict[str, str], body: Any, receive: Receive, send: Send) -> None:
        self.headers = headers
        self.body = body
        self._receive = receive
        self._send = send
        self.started = False

    @property
    def method(self) -> str:
        return str(self.body.get("method"))

    @property
    def params(self) -> dict[str, Any]:
        params = self.body.get("params")
        return params if isinstance(params, dict) else {}

    async def json(
        self, message: Any, status: int = 200, headers: dict[str, str] | None = None
    ) -> None:
        body = orjson.dumps(message)
        pairs = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        pairs += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
        await self._send({"type": "http.response.start", "status": status, "headers": pairs})
        await self._send({"type": "http.response.body", "body": body})

    async def raw(self, body: bytes, status: int = 200) -> None:
        """Answer with *body* as it is (``application/json``), e.g. what orjson cannot write."""
        pairs = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        await self._send({"type": "http.response.start", "status": status, "headers": pairs})
        await self._send({"type": "http.response.body", "body": body})

    async def result(self, result: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        await self.json({"jsonrpc": "2.0", "id": self.body["id"], "result": result}, 200, headers)

    async def error(self, status: int, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        await self.json({"jsonrpc": "2.0", "id": self.body.get("id"), "error": error}, status)

    async def event(self, message: Any) -> None:
        """Send one SSE ``message`` event (the stream's head first, once)."""
        if not self.started:
            self.started = True
            headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
            await self._send({"type": "http.response.start", "status": 200, "headers": headers})
        data = format_event(orjson.dumps(message).decode())
        await self._send({"type": "http.response.body", "body": data, "more_body": True})

    async def end(self) -> None:
        await self._send({"type": "http.response.body", "body": b""})

    async def wait_disconnect(self) -> None:
        """Block until the client closes the connection (the body was read)."""
        while (await self._receive())["type"] != "http.disconnect":
            pass


Handler = Callable[[Post], Awaitable[None]]


class ScriptedServer:
    """The ASGI application: records every request, hands each POST to *handler*."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        #: (HTTP method, headers, parsed body or None) of every request.
        self.requests: list[tuple[str, dict[str, str], Any]] = []

    def posts(self, method: str | None = None) -> list[tuple[dict[str, str], Any]]:
        """The POSTs (headers, body), of one JSON-RPC *method* if given."""
        return [
            (headers, body)
            for verb, headers, body in self.requests
            if verb == "POST" and (method is None or body.get("method") == method)
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                kind = message["type"].rpartition(".")[2]
                await send({"type": f"lifespan.{kind}.complete"})
                if kind == "shutdown":
                    return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        raw = b"".join(chunks)
        body = orjson.loads(raw) if raw else None
        self.requests.append((scope["method"], headers, body))
        if scope["method"] != "POST":
            await send({"type": "http.response.start", "status": 405, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await self.handler(Post(headers, body, receive, send))


@asynccontextmanager
async def scripted(handler: Handler) -> AsyncIterator[tuple[str, ScriptedServer]]:
    """Serve a :class:`ScriptedServer` on 127.0.0.1:0; yield its MCP URL and itself."""
    app = ScriptedServer(handler)
    config = hypercorn_config()

    async def run(*, task_status: trio.TaskStatus[list[str]]) -> None:
        await serve(app, config, task_status=task_status, mode="asgi")  # type: ignore[arg-type]

    async with trio.open_nursery() as nursery:
        binds = await nursery.start(run)
        yield binds[0] + "/mcp", app
        nursery.cancel_scope.cancel()
