"""A tiny authorization server for the verifier tests: a JWKS and an RFC 7662
introspection endpoint, a plain ASGI app on hypercorn's Trio worker (127.0.0.1,
port 0). It counts the requests it saw, so tests can tell a cache hit from a
fetch."""

from __future__ import annotations

import base64
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, cast

import attrs
import orjson
import trio
from hypercorn.trio import serve

from trio_mcp.transports._http_server import hypercorn_config

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


@attrs.define
class AuthServer:
    """What the endpoints answer; tests change it between requests."""

    #: The JWKS document served at /jwks.
    jwks: dict[str, Any] = attrs.field(factory=lambda: {"keys": []})
    #: Status of /jwks (anything but 200 answers an error body).
    jwks_status: int = 200
    #: token -> introspection answer; unknown tokens are inactive.
    tokens: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    introspection_status: int = 200
    #: The Basic credentials /introspect accepts.
    client: tuple[str, str] = ("rs", "rs-secret")
    #: Request counts by path.
    seen: dict[str, int] = attrs.field(factory=dict)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        path = scope["path"]
        self.seen[path] = self.seen.get(path, 0) + 1
        if path == "/jwks":
            status, answer = self.jwks_status, self.jwks
        elif path == "/introspect":
            status, answer = self._introspect(scope, body)
        else:
            status, answer = 404, {"error": "not_found"}
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": orjson.dumps(answer)})

    def _introspect(self, scope: Scope, body: bytes) -> tuple[int, dict[str, Any]]:
        if self.introspection_status != 200:
            return self.introspection_status, {"error": "server_error"}
        headers = dict(scope["headers"])
        expected = base64.b64encode(f"{self.client[0]}:{self.client[1]}".encode())
        if headers.get(b"authorization") != b"Basic " + expected:
            return 401, {"error": "invalid_client"}
        form = urllib.parse.parse_qs(body.decode())
        token = form.get("token", [""])[0]
        return 200, self.tokens.get(token, {"active": False})


@asynccontextmanager
async def running_auth_server(server: AuthServer) -> AsyncIterator[str]:
    """Serve *server*; yield its base URL."""
    config = hypercorn_config("127.0.0.1", 0)
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(
            lambda task_status: serve(cast(Any, server), config, task_status=task_status)
        )
        yield cast(list[str], binds)[0]
        nursery.cancel_scope.cancel()


async def closed_port_url() -> str:
    """A loopback URL nothing listens on (a port bound, then closed)."""
    sock = trio.socket.socket()
    await sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}"
