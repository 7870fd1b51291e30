"""open_http_client against servers that refuse the handshake: one typed error, never a crash.

Every way a server can refuse ``initialize`` (an error status, a body that is a
JSON-RPC error, HTML or empty, a refused HTTP+SSE fallback) ends in
:class:`~trio_mcp.HandshakeRefused`, whose message says what the server
answered and what the client tried. The servers are small ASGI applications on
hypercorn over loopback (port 0), or our own server at a wrong path.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest
import trio
from http_helpers import make_server, running
from hypercorn.trio import serve

from trio_mcp import open_http_client
from trio_mcp._errors import HandshakeRefused, MCPError
from trio_mcp._util import unwrap_group
from trio_mcp.transports._http._sse import format_event
from trio_mcp.transports._http.server._app import hypercorn_config
from trio_mcp.transports._http.server._asgi import Receive, Scope, Send

HTML = b"<!doctype html><html><body><h1>Not here</h1></body></html>"


def rpc_error(code: int, message: str, data: Any = None) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return orjson.dumps({"jsonrpc": "2.0", "id": 1, "error": error})


class Refusing:
    """An ASGI server that answers every POST with one canned response, and
    every GET with another (or with an SSE stream naming *endpoint*)."""

    def __init__(
        self,
        status: int,
        body: bytes = b"",
        content_type: bytes = b"application/json",
        *,
        get_status: int = 405,
        endpoint: str | None = None,
    ) -> None:
        self.status = status
        self.body = body
        self.content_type = content_type
        self.get_status = get_status
        self.endpoint = endpoint
        self.requests: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                kind = message["type"].rpartition(".")[2]  # startup or shutdown
                await send({"type": f"lifespan.{kind}.complete"})
                if kind == "shutdown":
                    return
        self.requests.append(scope["method"])
        while (await receive()).get("more_body", False):
            pass
        if scope["method"] == "GET" and self.endpoint is not None:
            headers = [(b"content-type", b"text/event-stream")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            event = format_event(self.endpoint, event="endpoint")
            await send({"type": "http.response.body", "body": event, "more_body": False})
            return
        if scope["method"] == "GET":
            status, body, ctype = self.get_status, b"", b"text/plain"
        else:
            status, body, ctype = self.status, self.body, self.content_type
        headers = [(b"content-type", ctype), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


@asynccontextmanager
async def serving(app: Refusing) -> AsyncIterator[str]:
    """Serve *app* on 127.0.0.1:0; yield its MCP URL."""
    config = hypercorn_config()

    async def run(*, task_status: trio.TaskStatus[list[str]]) -> None:
        await serve(app, config, task_status=task_status, mode="asgi")  # type: ignore[arg-type]

    async with trio.open_nursery() as nursery:
        binds = await nursery.start(run)
        yield binds[0] + "/mcp"
        nursery.cancel_scope.cancel()


async def refusal(url: str, **options: Any) -> HandshakeRefused:
    """The error that opening a client on *url* ends in (unwrapped from its group).

    These tests are about the handshake, so the client opens in
    ``era="legacy"`` (``initialize`` first); what ``era="auto"`` does with
    such servers (a ``server/discover`` POST first) is in
    ``test_http_client_era.py``."""
    options.setdefault("era", "legacy")
    with pytest.raises(BaseException) as info:  # noqa: PT011 (checked below)
        async with open_http_client(url, **options):
            pass
    error = info.value
    if isinstance(error, BaseExceptionGroup):
        error = unwrap_group(error)
    assert isinstance(error, HandshakeRefused), repr(error)
    assert isinstance(error, MCPError)
    return error


@pytest.mark.spec("SS-08")
async def test_a_wrong_path_on_our_server_says_what_was_tried() -> None:
    """The reported crash: our server at a wrong path answers the POST and the
    fallback GET with 404; the error names both, never 'started twice'."""
    async with running(make_server()) as (url, _):
        error = await refusal(url + "/wrong")
        assert error.status == 404
        message = str(error)
        assert message.startswith(f"{url}/wrong refused the MCP handshake")
        assert "POST initialize answered HTTP 404 with JSON-RPC error -32600: Not found" in message
        assert "GET for a 2024-11-05 HTTP+SSE endpoint answered HTTP 404" in message


async def test_a_wrong_path_without_the_fallback_tries_only_the_post() -> None:
    async with running(make_server()) as (url, _):
        error = await refusal(url + "/wrong", legacy_fallback=False)
        assert error.status == 404
        assert "POST initialize answered HTTP 404" in str(error)
        assert "GET" not in str(error)


@pytest.mark.parametrize("status", [400, 404, 405])
async def test_refusals_that_try_the_fallback_name_its_answer(status: int) -> None:
    app = Refusing(status, rpc_error(-32600, "Bad Request"), get_status=405)
    async with serving(app) as url:
        error = await refusal(url)
    assert error.status == status
    assert f"POST initialize answered HTTP {status} with JSON-RPC error -32600: Bad Request" in (
        str(error)
    )
    assert "GET for a 2024-11-05 HTTP+SSE endpoint answered HTTP 405 with an empty body" in (
        str(error)
    )
    assert app.requests == ["POST", "GET"]


@pytest.mark.parametrize("status", [401, 403, 415, 500, 502, 503])
async def test_refusals_without_a_fallback(status: int) -> None:
    """Statuses that say the endpoint exists but refuses: no HTTP+SSE GET."""
    app = Refusing(status, rpc_error(-32000, "No entry"))
    async with serving(app) as url:
        error = await refusal(url)
    assert error.status == status
    assert str(error).endswith(
        f"POST initialize answered HTTP {status} with JSON-RPC error -32000: No entry"
    )
    assert app.requests == ["POST"]


@pytest.mark.parametrize(
    ("status", "body", "content_type", "said"),
    [
        (404, HTML, b"text/html; charset=utf-8", "HTTP 404 with an HTML page"),
        (500, b"", b"text/plain", "HTTP 500 with an empty body"),
        (401, b"Unauthorized", b"text/plain", "HTTP 401 (text/plain): Unauthorized"),
        (200, HTML, b"text/html", "HTTP 200 with an HTML page"),
        (200, b"", b"application/json", "HTTP 200 with an empty body"),
        (
            200,
            b'{"jsonrpc": "2.0", "id": 99, "result": {}}',
            b"application/json",
            'HTTP 200 (application/json): {"jsonrpc": "2.0", "id": 99',
        ),
    ],
)
async def test_bodies_that_are_not_an_answer(
    status: int, body: bytes, content_type: bytes, said: str
) -> None:
    """HTML, an empty body, plain text, or JSON answering another id."""
    app = Refusing(status, body, content_type)
    async with serving(app) as url:
        error = await refusal(url, legacy_fallback=False)
    assert error.status == status
    assert said in str(error)


async def test_a_fallback_endpoint_on_another_origin_is_refused() -> None:
    app = Refusing(404, b"", endpoint="http://evil.example/messages/?session_id=1")
    async with serving(app) as url:
        error = await refusal(url)
    assert "POST initialize answered HTTP 404 with an empty body" in str(error)
    assert (
        "GET for a 2024-11-05 HTTP+SSE endpoint named an endpoint on another origin "
        "(http://evil.example/messages/?session_id=1)"
    ) in str(error)
    assert app.requests == ["POST", "GET"]  # nothing was POSTed to the other origin


@pytest.mark.parametrize("status", [400, 200])
async def test_a_server_of_another_era_is_named_as_such(status: int) -> None:
    """-32022 with ``supported``: the server speaks only other revisions (a
    modern-only server); no fallback is tried, and it is no transport failure."""
    body = rpc_error(
        -32022,
        "Unsupported protocol version",
        {"supported": ["2026-07-28"], "requested": "2025-11-25"},
    )
    app = Refusing(status, body)
    async with serving(app) as url:
        error = await refusal(url)
    assert error.supported == ("2026-07-28",)
    assert error.status == status
    assert str(error).endswith(
        f"POST initialize answered HTTP {status} with JSON-RPC error -32022: "
        "Unsupported protocol version: this server speaks only 2026-07-28"
    )
    assert app.requests == ["POST"]
