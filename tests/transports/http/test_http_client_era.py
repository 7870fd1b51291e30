"""``open_http_client(era=...)`` against real servers: which era, and what it is remembered as.

Our own server made handshake-only (``protocol_versions=("2025-11-25",)``)
is the legacy-only server: ``era="auto"`` POSTs ``server/discover``,
reads the refusal, and falls back to ``initialize`` on the same endpoint; the
endpoint is then remembered (VR-12) and the next client starts with
``initialize``. A counting ASGI wrapper sees what reached the server. The
modern and dual-era servers are in ``test_http_client_modern.py`` (scripted),
``tests/interop/test_ts_v2_interop.py`` (``createMcpHandler``) and
``tests/interop/test_http_python_sdk.py`` (mcp 2.x).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import orjson
import pytest
import trio
from http_helpers import make_server, running
from hypercorn.trio import serve
from modern_http_script import scripted

from trio_mcp import Server, http_app, open_http_client
from trio_mcp._client._connect import forget_eras
from trio_mcp._errors import HandshakeRefused, RPCError
from trio_mcp._util import unwrap_group
from trio_mcp.transports._http.server._app import hypercorn_config
from trio_mcp.transports._http.server._asgi import Receive, Scope, Send

NOT_HUNG = 10.0


@pytest.fixture(autouse=True)
def _fresh_eras() -> None:
    forget_eras()


class Counting:
    """Wraps an ASGI app; records the JSON-RPC method of every POST."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.methods: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        try:
            self.methods.append(orjson.loads(body).get("method", "(response)"))
        except (orjson.JSONDecodeError, AttributeError):
            self.methods.append("(other)")
        await self.before(self.methods[-1])
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def before(self, method: str) -> None:
        """Called with each POST's method before the app sees it."""


@asynccontextmanager
async def our_server(
    versions: tuple[str, ...], wrapper: type[Counting] = Counting
) -> AsyncIterator[tuple[str, Counting]]:
    """Our server (``http_app``) speaking *versions*, behind *wrapper* (a
    :class:`Counting`), on hypercorn, 127.0.0.1:0."""
    server = Server("era-test", version="1.0", protocol_versions=versions)

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    app = http_app(server)
    counting = wrapper(app)
    config = hypercorn_config()

    async def run(*, task_status: trio.TaskStatus[list[str]]) -> None:
        await serve(counting, config, task_status=task_status, mode="asgi")  # type: ignore[arg-type]

    async with app.run(), trio.open_nursery() as nursery:
        binds = await nursery.start(run)
        yield binds[0] + "/mcp", counting
        nursery.cancel_scope.cancel()


def our_legacy_server() -> AbstractAsyncContextManager[tuple[str, Counting]]:
    """Our server made handshake-only."""
    return our_server(("2025-11-25",))


@pytest.mark.spec("HM-32", "VR-11", "SI-16")
async def test_auto_falls_back_to_the_handshake_against_a_legacy_only_server() -> None:
    async with our_legacy_server() as (url, server):
        with trio.fail_after(NOT_HUNG):
            async with open_http_client(url) as client:
                assert client.era == "legacy"
                assert client.protocol_version == "2025-11-25"
                result = await client.call_tool("add", {"a": 2, "b": 3})
                assert result.structured_content == {"result": 5}
    assert server.methods[:2] == ["server/discover", "initialize"]


@pytest.mark.spec("VR-12")
async def test_a_legacy_endpoint_is_remembered_and_not_probed_again() -> None:
    async with our_legacy_server() as (url, server):
        with trio.fail_after(NOT_HUNG):
            async with open_http_client(url) as client:
                assert client.era == "legacy"
            first = list(server.methods)
            async with open_http_client(url) as client:
                assert client.era == "legacy"
            second = server.methods[len(first) :]
            forget_eras()
            async with open_http_client(url, remember_era=False) as client:
                assert client.era == "legacy"
            third = server.methods[len(first) + len(second) :]
    assert first[0] == "server/discover"
    assert second[0] == "initialize"
    assert "server/discover" not in second
    assert third[0] == "server/discover"


@pytest.mark.spec("VR-12", "HM-32")
async def test_a_failed_open_is_not_remembered_and_a_modern_server_is_found_later() -> None:
    """A server refusing every POST with 400 and a handshake-era body: the
    probe falls back to ``initialize``, which is refused too; nothing is
    remembered, so once the server is modern the next client probes and goes
    modern."""
    from modern_http_script import MODERN, Post, complete, discover_result

    state = {"modern": False}

    async def handler(post: Post) -> None:
        if not state["modern"]:
            await post.error(400, -32600, "Bad Request: Missing session ID")
        elif post.method == "initialize":
            await post.error(400, -32022, "Unsupported protocol version", {"supported": [MODERN]})
        elif post.method == "server/discover":
            await post.result(discover_result({}))
        else:
            await post.result(complete({}))

    async with scripted(handler) as (url, app):
        with trio.fail_after(NOT_HUNG):
            # A server answering everything with 400: legacy, but no handshake either.
            with pytest.raises(BaseException) as info:  # noqa: PT011 (checked below)
                async with open_http_client(url, legacy_fallback=False):
                    pass
            assert (
                info.group_contains(HandshakeRefused)
                if isinstance(info.value, BaseExceptionGroup)
                else isinstance(info.value, HandshakeRefused)
            )
            assert [b["method"] for _, b in app.posts()] == ["server/discover", "initialize"]
            state["modern"] = True
            async with open_http_client(url) as client:
                assert client.era == "modern"
            # Probed again (nothing was remembered from a failed open): discover first.
            assert [b["method"] for _, b in app.posts()][2] == "server/discover"


@pytest.mark.spec("VR-14")
async def test_era_modern_against_a_legacy_only_server_fails_without_initialize() -> None:
    async with our_legacy_server() as (url, server):
        with trio.fail_after(NOT_HUNG), pytest.raises(BaseException) as info:  # noqa: PT011
            async with open_http_client(url, era="modern"):
                pass
    error = unwrap_group(info.value) if isinstance(info.value, BaseExceptionGroup) else info.value
    # Its refusal of the 2026-07-28 version, as it said it (HTTP 400).
    assert isinstance(error, RPCError)
    assert "2026-07-28" in error.message
    assert "initialize" not in server.methods
    assert server.methods[0] == "server/discover"


@pytest.mark.spec("HM-04", "HM-32")
@pytest.mark.parametrize(("era", "expected"), [("auto", "modern"), ("legacy", "legacy")])
async def test_our_client_against_our_dual_era_server(era: str, expected: str) -> None:
    """Our ``http_app`` serves both eras on one endpoint: auto goes 2026-07-28
    (no initialize), legacy gets a handshake-era session; both call a tool."""
    async with running(make_server()) as (base, _):
        with trio.fail_after(NOT_HUNG):
            async with open_http_client(base + "/mcp", era=era, remember_era=False) as client:
                assert client.era == expected
                result = await client.call_tool("add", {"a": 2, "b": 3})
                assert result.structured_content == {"result": 5}


#: Longer than the 2 s the era probe once waited before taking a silent
#: server for a handshake-era one: the cold start of a modern-only server.
COLD_START = 2.5


class SlowToDiscover(Counting):
    """:class:`Counting` that holds each ``server/discover`` POST for
    :data:`COLD_START` seconds of real time before the app sees it."""

    async def before(self, method: str) -> None:
        if method == "server/discover":
            await trio.sleep(COLD_START)


@pytest.mark.spec("SI-14", "DS-05", "VR-11")
async def test_auto_waits_for_a_slow_modern_servers_answer_to_the_probe() -> None:
    """Over Streamable HTTP every POST is answered, so the probe's answer
    decides the era, however late it comes: no timer takes a slow modern
    server for a handshake-era one (and no ``initialize`` is sent)."""
    async with our_server(("2026-07-28",), SlowToDiscover) as (url, server):
        started = trio.current_time()
        with trio.fail_after(NOT_HUNG + COLD_START):
            async with open_http_client(url) as client:
                assert client.era == "modern"
                result = await client.call_tool("add", {"a": 2, "b": 3})
                assert result.structured_content == {"result": 5}
        assert trio.current_time() - started >= COLD_START
    assert "initialize" not in server.methods
    assert server.methods[0] == "server/discover"
