"""The HTTP client's close (HT-34, reliability D-10).

A DELETE the server does not answer within ``close_timeout`` is given up with
a WARNING that names the session by its fingerprint and the bound, never by its
id (HT-29). There the server is our ASGI application in this process behind
httpx's ``ASGITransport`` (JSON responses, no GET stream: nothing is streamed),
with a DELETE handler that never answers. No sockets, so the autojump clock is
exact: the close takes ``close_timeout`` of virtual time, to the tick.

The DELETE goes on the connection of the last call (loopback, port 0), one the
server has already accepted.
"""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest
import trio
import trio.testing
from http_helpers import http_transport_of, make_server, running

from trio_mcp import Server, http_app, open_http_client
from trio_mcp.transports._http.client._transport import MAX_CONNECTIONS, session_fingerprint
from trio_mcp.transports._http.server._app import StreamableHTTPApp
from trio_mcp.transports._http.server._asgi import Receive, Scope, Send

URL = "http://127.0.0.1:8000/mcp"


class DeleteNeverAnswered:
    """The MCP application, except that a DELETE is received and never answered."""

    def __init__(self, app: StreamableHTTPApp) -> None:
        self.app = app
        self.deletes_received = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "DELETE":
            self.deletes_received += 1
            await trio.sleep_forever()
        await self.app(scope, receive, send)


async def close_against(answer_delete: bool, close_timeout: float) -> tuple[float, str, int, int]:
    """Open a session, make a call, close: (virtual seconds the close took, the
    session id, DELETEs the server received, sessions the server has left)."""
    app = http_app(make_server(), json_response=True, enable_get=False)
    served: Any = app if answer_delete else DeleteNeverAnswered(app)
    async with app.run():
        http = httpx.AsyncClient(transport=httpx.ASGITransport(app=served))
        async with http:
            async with open_http_client(
                URL, http_client=http, era="legacy", close_timeout=close_timeout
            ) as client:
                result = await client.call_tool("echo", {"text": "hi"})
                assert result.content[0].text == "hi"  # type: ignore[union-attr]
                session_id = http_transport_of(client).session_id
                assert session_id is not None
                start = trio.current_time()
            took = trio.current_time() - start
        received = served.deletes_received if not answer_delete else -1
        return took, session_id, received, app.session_count


@pytest.mark.spec("HT-34")
async def test_a_delete_not_answered_in_close_timeout_is_a_warning(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="trio_mcp")
    took, session_id, received, left = await close_against(answer_delete=False, close_timeout=1.5)
    # The DELETE went out at once and the close gave up exactly at the bound.
    assert received == 1
    assert took == 1.5
    assert left == 1  # what the warning is about: the server still has the session
    warnings = [
        r for r in caplog.records if r.name.startswith("trio_mcp") and r.levelno == logging.WARNING
    ]
    assert len(warnings) == 1
    message = warnings[0].getMessage()
    assert session_fingerprint(session_id) in message
    assert "close_timeout (1.5s)" in message
    assert "idle timeout" in message
    assert session_id not in message  # a credential (HT-29)


@pytest.mark.spec("HT-34")
async def test_an_answered_delete_ends_the_session_without_a_warning(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="trio_mcp")
    took, _, received, left = await close_against(answer_delete=True, close_timeout=1.5)
    assert received == -1  # not counted: the plain application answered it
    assert took == 0  # no timer was waited on
    assert left == 0
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_the_fingerprint_names_a_session_without_disclosing_it() -> None:
    fingerprint = session_fingerprint("a-session-id-of-sufficient-length")
    assert fingerprint == session_fingerprint("a-session-id-of-sufficient-length")
    assert fingerprint != session_fingerprint("another-session-id-of-the-same-kind")
    assert len(fingerprint) == 12
    assert int(fingerprint, 16) >= 0  # hex digits only


class RecordingEndpoint:
    """Delegates to the MCP endpoint, noting each request's method and client port
    (the port names the TCP connection it came on)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seen: list[tuple[str, int]] = []

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.seen.append((scope["method"], scope["client"][1]))
        await self.inner.handle(scope, receive, send)


@pytest.mark.spec("HT-34")
@pytest.mark.parametrize("json_response", [True, False], ids=["json", "sse"])
async def test_the_closing_delete_goes_on_the_last_calls_connection(json_response: bool) -> None:
    """Over loopback (hypercorn, port 0), with the pools the transport makes: the
    DELETE reuses the connection the last call came on, which the server has
    already accepted, instead of opening one that waits in its accept queue
    (at 1,000 sessions that wait outlasted ``close_timeout``, reliability D-10).
    """
    app = http_app(make_server(), json_response=json_response)
    endpoint = RecordingEndpoint(app._mcp)
    app._mcp = endpoint  # type: ignore[assignment]
    async with running(app) as (base, _):
        async with open_http_client(base + "/mcp", era="legacy") as client:
            result = await client.call_tool("echo", {"text": "hi"})
            assert result.content[0].text == "hi"  # type: ignore[union-attr]
            # The call's response has ended and its connection is back in the
            # pool (the close does not wait for that: this test is about the
            # pool the DELETE uses, not about that wait).
            await trio.testing.wait_all_tasks_blocked()
            assert http_transport_of(client).session_id is not None
        assert app.session_count == 0
    methods = [method for method, _ in endpoint.seen]
    assert methods[-2:] == ["POST", "DELETE"]
    assert endpoint.seen[-1][1] == endpoint.seen[-2][1]


@pytest.mark.spec("HT-34")
async def test_with_every_request_connection_busy_the_delete_goes_on_the_control_client() -> None:
    """The DELETE must not queue for a connection of the requests' pool: with
    ``MAX_CONNECTIONS`` calls in flight (each holds one) it goes on the control
    client, with one fewer on the requests' pool."""
    server = Server("slow", version="1.0")
    stop = trio.Event()

    @server.tool()
    async def slow() -> str:
        """Run until the test ends."""
        await stop.wait()
        return "done"

    async with (
        running(server) as (base, _),
        open_http_client(base + "/mcp", era="legacy") as client,
        trio.open_nursery() as nursery,
    ):
        transport = http_transport_of(client)
        for _ in range(MAX_CONNECTIONS - 1):
            nursery.start_soon(client.call_tool, "slow", {})
        await trio.testing.wait_all_tasks_blocked()
        assert transport._delete_client() is transport.http
        nursery.start_soon(client.call_tool, "slow", {})
        await trio.testing.wait_all_tasks_blocked()
        assert transport._delete_client() is transport.control
        assert transport.control is not transport.http
        stop.set()
