"""The client's own httpx client (``transports/_httpx_client``): cookies work
as in httpx, though the jar is read only for a response that sets one; an
endpoint's URL is parsed once.

Against a real server (hypercorn on 127.0.0.1, port 0) behind an ASGI
middleware that sets an affinity cookie, as a load balancer does, and notes the
``Cookie`` header of every POST.
"""

from __future__ import annotations

from typing import Any, cast

import httpx
import pytest
import trio
from http_helpers import make_server
from hypercorn.trio import serve

from trio_mcp import http_app, open_http_client
from trio_mcp.transports._http.client._httpx import OwnHttpClient, request_url
from trio_mcp.transports._http.server._app import hypercorn_config


class AffinityCookie:
    """Sets ``affinity=worker-1`` on the first POST's response; notes the
    ``Cookie`` header (or None) of every POST."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.cookies: list[str | None] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        cookie = headers.get(b"cookie")
        self.cookies.append(None if cookie is None else cookie.decode())
        first = len(self.cookies) == 1

        async def send_with_cookie(message: dict[str, Any]) -> None:
            if first and message["type"] == "http.response.start":
                extra = [(b"set-cookie", b"affinity=worker-1; Path=/")]
                message = {**message, "headers": [*message["headers"], *extra]}
            await send(message)

        await self.app(scope, receive, send_with_cookie)


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_a_cookie_the_server_sets_is_sent_back_on_every_later_post(era: str) -> None:
    app = http_app(make_server())
    middleware = AffinityCookie(app)
    config = hypercorn_config("127.0.0.1", 0)
    async with app.run(), trio.open_nursery() as nursery:
        asgi = cast(Any, middleware)  # hypercorn types its apps more narrowly
        binds = await nursery.start(
            lambda task_status: serve(asgi, config, task_status=task_status, mode="asgi")
        )
        async with open_http_client(f"{binds[0]}/mcp", era=era) as client:
            for text in ("one", "two"):
                result = await client.call_tool("echo", {"text": text})
                assert result.content[0].text == text  # type: ignore[union-attr]
        nursery.cancel_scope.cancel()
    # The first POST went without; it set the cookie; every later POST (the
    # handshake's notification and the calls, or each modern call) carries it.
    assert middleware.cookies[0] is None
    assert len(middleware.cookies) >= 3
    assert middleware.cookies[1:] == ["affinity=worker-1"] * (len(middleware.cookies) - 1)


async def test_the_jar_is_skipped_only_for_a_response_that_sets_no_cookie() -> None:
    seen: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("cookie"))
        if len(seen) == 2:
            return httpx.Response(200, headers=[("set-cookie", "a=1; Path=/")])
        return httpx.Response(200)

    async with OwnHttpClient(transport=httpx.MockTransport(handler)) as http:
        for _ in range(4):
            await http.post("http://127.0.0.1/mcp", content=b"{}")
        assert http.cookies.get("a") == "1"
        http.cookies = {"b": "2"}  # the setter keeps the skipping jar
        await http.post("http://127.0.0.1/mcp", content=b"{}")
        assert type(http.cookies) is not httpx.Cookies
    assert seen == [None, None, "a=1", "a=1", "b=2"]


def test_an_endpoint_url_is_parsed_once() -> None:
    url = "http://127.0.0.1:8000/mcp"
    assert request_url(url) is request_url(url)
    assert request_url(url) == httpx.URL(url)
