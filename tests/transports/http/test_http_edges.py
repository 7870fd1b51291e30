"""Streamable HTTP edges: a body cut off mid-upload, and the Origin/Host policy's
corners (reliability S-10, O-04, O-06, O-08, O-09, O-11, O-14).

Most tests drive the ASGI application with hand-made scopes (Host and Origin
headers exactly as a hostile client would send them, on the autojump clock);
a few go through hypercorn on loopback to show nothing in front of the
application changes the answer.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import orjson
import pytest
import trio
import trio.testing
from http_helpers import (
    LATEST,
    init_body,
    make_server,
    open_raw_session,
    post_headers,
    raw_client,
    running,
)
from test_http_hardening import asgi_scope, call_app, whole_body

from trio_mcp import Server, http_app, serve_http
from trio_mcp.transports._http.server import _app as _http_server
from trio_mcp.transports._http.server._app import StreamableHTTPApp
from trio_mcp.transports._http.server._asgi import Message

Headers = list[tuple[str, str]]

POST_HEADERS: Headers = [
    ("accept", "application/json, text/event-stream"),
    ("content-type", "application/json"),
]


def scope_with(
    headers: Headers,
    *,
    method: str = "POST",
    server: tuple[str, int] | None = ("127.0.0.1", 8000),
) -> dict[str, Any]:
    """An ASGI scope with exactly *headers* (repeats and omissions included;
    values sent as UTF-8 bytes, as a client could)."""
    scope = asgi_scope(server=server)
    scope["method"] = method
    scope["headers"] = [(k.encode(), v.encode()) for k, v in headers]
    return scope


async def run_app(
    app: StreamableHTTPApp, scope: dict[str, Any], receive: Callable[[], Awaitable[Message]]
) -> list[Message]:
    """Run one request; every message the application sent (maybe none)."""
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent


async def initialize_status(app: StreamableHTTPApp, headers: Headers, **scope: Any) -> int:
    status, _, _ = await call_app(app, scope_with(headers, **scope), whole_body(init_body()))
    return status


# ------------------------------------------------------------ S-10: cut uploads


def cut_upload(*chunks: bytes) -> Callable[[], Awaitable[Message]]:
    """A receive(): *chunks* of a body that has more to come, then the client is gone."""
    pending = list(chunks)

    async def receive() -> Message:
        await trio.lowlevel.checkpoint()
        if pending:
            return {"type": "http.request", "body": pending.pop(0), "more_body": True}
        return {"type": "http.disconnect"}

    return receive


def counting_server() -> tuple[Server, list[int]]:
    server = make_server()
    runs: list[int] = []

    @server.tool()
    async def count(n: int) -> int:
        """Note a run."""
        runs.append(n)
        return n

    return server, runs


def call(n: int, request_id: int = 2) -> bytes:
    params = {"name": "count", "arguments": {"n": n}}
    return orjson.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    )


async def test_client_gone_during_the_body_dispatches_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """S-10: a body the client stops uploading (it disconnected) is not
    dispatched, creates no session, gets no response, and raises nothing."""
    server, runs = counting_server()
    app = http_app(server)
    async with app.run():
        host = [("host", "127.0.0.1:8000")]
        body = init_body()
        sent = await run_app(app, scope_with(host + POST_HEADERS), cut_upload(body[:20]))
        assert sent == []
        assert app.session_count == 0
        # On a live session: a call cut mid-body never runs, the session goes on.
        status, _, headers = await call_app(app, scope_with(host + POST_HEADERS), whole_body(body))
        assert status == 200
        sid = headers[b"mcp-session-id"].decode()
        session = host + POST_HEADERS + [("mcp-session-id", sid)]
        note = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert (await call_app(app, scope_with(session), whole_body(note)))[0] == 202
        # The last cut leaves a complete JSON message (the client meant to
        # send padding after it): still not dispatched, the body is not whole.
        whole = call(1) + b" " * 64
        for cut in (1, len(whole) // 2, len(whole) - 65, len(whole) - 1):
            sent = await run_app(app, scope_with(session), cut_upload(whole[:cut]))
            assert sent == []
        # A disconnect before any body byte, too.
        assert await run_app(app, scope_with(session), cut_upload()) == []
        await trio.testing.wait_all_tasks_blocked()
        assert runs == []
        status, body_out, _ = await call_app(app, scope_with(session), whole_body(call(7, 3)))
        assert status == 200
        assert b'"structuredContent":{"result":7}' in body_out
        assert runs == [7]
        assert app.session_count == 1


async def test_client_gone_during_the_body_over_a_socket(caplog: pytest.LogCaptureFixture) -> None:
    """S-10 through hypercorn: the connection closes mid-body; nothing runs,
    nothing is logged as an error, the session and the server go on."""
    server, runs = counting_server()
    with caplog.at_level(logging.DEBUG):
        async with running(server) as (url, app), raw_client(url) as http:
            sid = await open_raw_session(http)
            host, port = url.removeprefix("http://").rsplit(":", 1)
            body = call(1) + b" " * 64  # cut at -64: a whole message, an unfinished body
            for cut in (0, len(body) // 2, len(body) - 64):
                sock = await trio.open_tcp_stream(host, int(port))
                head = (
                    f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\n"
                    "Content-Type: application/json\r\n"
                    "Accept: application/json, text/event-stream\r\n"
                    f"Mcp-Session-Id: {sid}\r\nMcp-Protocol-Version: {LATEST}\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n"
                )
                await sock.send_all(head.encode() + body[:cut])
                await sock.aclose()
            await trio.testing.wait_all_tasks_blocked()
            assert runs == []
            answer = await http.post("/mcp", content=call(5), headers=post_headers(sid))
            assert answer.status_code == 200
            assert runs == [5]
            assert app.session_count == 1
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []


# --------------------------------------------------- O-04: case and trailing dots


@pytest.mark.spec("HT-02")
@pytest.mark.spec("SEC-01")
@pytest.mark.parametrize(
    ("host", "origin", "status"),
    [
        # Matching is exact after lower-casing (ASCII); a trailing "/" on an
        # Origin is ignored.
        ("LOCALHOST:8000", None, 200),
        ("LocalHost:8000", "HTTP://LOCALHOST:8000", 200),
        ("127.0.0.1:8000", "hTtP://lOcAlHoSt:8000/", 200),
        ("127.0.0.1:8000", "HTTPS://127.0.0.1:8000", 200),
        # A trailing dot names another host: refused, whatever the case.
        ("localhost.:8000", None, 421),
        ("LOCALHOST.:8000", None, 421),
        ("127.0.0.1:8000", "http://localhost.:8000", 403),
        ("127.0.0.1:8000", "HTTP://LOCALHOST.:8000", 403),
        ("127.0.0.1:8000", "http://localhost:8000.", 403),
        # No other spelling gets in either.
        ("127.0.0.1:8000", "http://localhost:8001", 403),
        ("127.0.0.1:8000", "http://user@localhost:8000", 403),
        ("127.0.0.1:8000", "http://localhost:8000/mcp", 403),
        ("127.0.0.1:8000", "http://local%68ost:8000", 403),
        ("127.0.0.1:8000", "ws://localhost:8000", 403),
        ("127.0.0.1:8000", " http://localhost:8000", 403),
        ("127.0.0.1:8000", "http://localhost:8000\x00", 403),
        ("127.0.0.1:8000", "http://LOCALHOST\u0130:8000", 403),
    ],
)
async def test_case_and_trailing_dot_variants(
    host: str, origin: str | None, status: int, autojump_clock: trio.testing.MockClock
) -> None:
    """O-04: one documented normalisation (ASCII lower case, an Origin's
    trailing slash), no bypass."""
    app = http_app(make_server())
    headers = [("host", host), *POST_HEADERS]
    if origin is not None:
        headers.append(("origin", origin))
    async with app.run():
        assert await initialize_status(app, headers) == status
        assert app.session_count == (1 if status == 200 else 0)


@pytest.mark.spec("HT-02")
async def test_configured_origins_are_matched_the_same_way(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """O-04 with an explicit allowlist: configured values are lower-cased and
    lose a trailing slash too; a trailing dot is still another origin."""
    app = http_app(make_server(), allowed_origins={"HTTPS://App.Example.COM/"})
    base = [("host", "127.0.0.1:8000"), *POST_HEADERS]
    async with app.run():
        for origin, status in [
            ("https://app.example.com", 200),
            ("HTTPS://APP.EXAMPLE.COM", 200),
            ("https://app.example.com.", 403),
            ("http://app.example.com", 403),
            ("https://app.example.com:443", 403),
        ]:
            assert await initialize_status(app, [*base, ("origin", origin)]) == status, origin


# --------------------------------------------------- O-06, O-08: repeats, absence


@pytest.mark.spec("HT-02")
@pytest.mark.spec("SEC-01")
@pytest.mark.parametrize(
    ("extra", "status"),
    [
        ([("origin", "http://127.0.0.1:8000"), ("origin", "http://127.0.0.1:8000")], 403),
        ([("origin", "http://127.0.0.1:8000"), ("origin", "http://evil.example")], 403),
        ([("origin", "http://evil.example"), ("origin", "http://127.0.0.1:8000")], 403),
        ([("origin", "null"), ("origin", "http://127.0.0.1:8000")], 403),
        ([("origin", "")], 403),
        ([("host", "127.0.0.1:8000")], 400),  # Host twice
        ([("host", "evil.example")], 400),
    ],
)
async def test_repeated_origin_or_host_is_refused(
    extra: Headers, status: int, autojump_clock: trio.testing.MockClock
) -> None:
    """O-06: repeated Origin headers get 403, whatever their values (a proxy
    or framework might read either one); a repeated Host gets 400."""
    app = http_app(make_server())
    async with app.run():
        headers = [("host", "127.0.0.1:8000"), *POST_HEADERS, *extra]
        assert await initialize_status(app, headers) == status
        assert app.session_count == 0


@pytest.mark.spec("SEC-01")
@pytest.mark.parametrize("method", ["POST", "GET", "DELETE"])
@pytest.mark.parametrize("host", [None, ""])
async def test_missing_host_is_refused(
    method: str, host: str | None, autojump_clock: trio.testing.MockClock
) -> None:
    """O-08: no Host (or an empty one) gets 400 before anything else, even
    with a configured allowlist."""
    for app in (
        http_app(make_server()),
        http_app(make_server(), allowed_hosts={"localhost:*"}),
    ):
        async with app.run():
            headers = list(POST_HEADERS)
            if host is not None:
                headers.insert(0, ("host", host))
            status, body, _ = await call_app(
                app, scope_with(headers, method=method), whole_body(init_body())
            )
            assert status == 400
            assert b"Host" in body
            assert app.session_count == 0


async def test_repeated_origin_and_missing_host_over_a_socket() -> None:
    """O-06 and O-08 through hypercorn: it passes repeated headers and an
    HTTP/1.0 request without Host to the application unchanged (HTTP/1.1
    without Host is refused by h11 itself), and the answers are the same."""
    async with running(make_server()) as (url, app), raw_client(url) as http:
        port = url.rsplit(":", 1)[1]
        same = f"http://127.0.0.1:{port}"
        headers = httpx.Headers([*post_headers().items(), ("origin", same), ("origin", same)])
        response = await http.post("/mcp", content=init_body(), headers=headers)
        assert response.status_code == 403
        host, _ = url.removeprefix("http://").rsplit(":", 1)
        body = init_body()
        for version in ("1.0", "1.1"):
            sock = await trio.open_tcp_stream(host, int(port))
            async with sock:
                head = (
                    f"POST /mcp HTTP/{version}\r\nContent-Type: application/json\r\n"
                    "Accept: application/json, text/event-stream\r\n"
                    f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
                )
                await sock.send_all(head.encode() + body)
                seen = b""
                with trio.fail_after(10):
                    while chunk := await sock.receive_some():
                        seen += chunk
            assert seen.split(b"\r\n", 1)[0].split(b" ")[1] == b"400", (version, seen[:200])
        assert app.session_count == 0


# ------------------------------------------------------ O-09: IPv6 and 0.0.0.0


LOOPBACK_V4 = ("127.0.0.1", 8000)
LOOPBACK_V6 = ("::1", 8000)
ANY_V4 = ("0.0.0.0", 8000)


@pytest.mark.spec("SEC-01")
@pytest.mark.parametrize(
    ("bound", "host", "status"),
    [
        # A loopback bind accepts exactly localhost, 127.0.0.1 and [::1] with
        # the bound port, whichever family it is bound to.
        (LOOPBACK_V4, "[::1]:8000", 200),
        (LOOPBACK_V6, "[::1]:8000", 200),
        (LOOPBACK_V6, "127.0.0.1:8000", 200),
        (LOOPBACK_V6, "localhost:8000", 200),
        (LOOPBACK_V4, "[::ffff:127.0.0.1]:8000", 421),
        (LOOPBACK_V4, "[0:0:0:0:0:0:0:1]:8000", 421),
        (LOOPBACK_V4, "[::1]", 421),
        (LOOPBACK_V4, "::1:8000", 421),
        (LOOPBACK_V4, "0.0.0.0:8000", 421),
        (LOOPBACK_V4, "127.0.0.2:8000", 421),
        (LOOPBACK_V4, "127.1:8000", 421),
        (LOOPBACK_V4, "2130706433:8000", 421),
        (LOOPBACK_V6, "[::1]:8001", 421),
        # Bound to every interface without an allowlist, Host is not checked
        # (serve_http warns about it, O-11).
        (ANY_V4, "0.0.0.0:8000", 200),
        (ANY_V4, "evil.example:8000", 200),
    ],
)
async def test_ipv6_and_unspecified_hosts(
    bound: tuple[str, int], host: str, status: int, autojump_clock: trio.testing.MockClock
) -> None:
    """O-09: the allowlist semantics for IPv6 literals, IPv4-mapped and
    unspecified addresses (exact spelling, bound port)."""
    app = http_app(make_server())
    async with app.run():
        assert await initialize_status(app, [("host", host), *POST_HEADERS], server=bound) == status


@pytest.mark.spec("HT-02")
async def test_origin_on_ipv6_and_unspecified_binds(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """O-09 for Origin: on a loopback bind an Origin must name an allowed
    host (IPv6 literals in brackets); on 0.0.0.0 it must be the request's own
    Host (a page elsewhere cannot post here)."""
    cases = [
        (LOOPBACK_V6, "[::1]:8000", "http://[::1]:8000", 200),
        (LOOPBACK_V6, "[::1]:8000", "http://localhost:8000", 200),
        (LOOPBACK_V6, "[::1]:8000", "http://[::ffff:127.0.0.1]:8000", 403),
        (LOOPBACK_V6, "[::1]:8000", "http://::1:8000", 403),
        (ANY_V4, "mcp.example:8000", "http://mcp.example:8000", 200),
        (ANY_V4, "MCP.Example:8000", "HTTP://mcp.EXAMPLE:8000", 200),
        (ANY_V4, "mcp.example:8000", "http://evil.example:8000", 403),
        (ANY_V4, "mcp.example:8000", "http://0.0.0.0:8000", 403),
    ]
    app = http_app(make_server())
    async with app.run():
        for bound, host, origin, status in cases:
            headers = [("host", host), ("origin", origin), *POST_HEADERS]
            assert await initialize_status(app, headers, server=bound) == status, origin


@pytest.mark.spec("SEC-01")
async def test_configured_ipv6_hosts(autojump_clock: trio.testing.MockClock) -> None:
    """O-09 with ``allowed_hosts``: IPv6 entries are bracketed, ``:*`` takes any port."""
    app = http_app(make_server(), allowed_hosts={"[::1]:*", "[fd00::1]:9000"})
    async with app.run():
        for host, status in [
            ("[::1]:1234", 200),
            ("[::1]:8000", 200),
            ("[fd00::1]:9000", 200),
            ("[FD00::1]:9000", 200),
            ("[fd00::1]:9001", 421),
            ("[fd00::2]:9000", 421),
            ("localhost:8000", 421),
        ]:
            assert await initialize_status(app, [("host", host), *POST_HEADERS]) == status, host


# ------------------------------------------------------- O-11: bind and warning


@pytest.mark.spec("HT-03")
async def test_default_bind_is_loopback_and_public_binds_warn(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """O-11: serve_http binds 127.0.0.1 unless told otherwise, and warns when
    binding 0.0.0.0 or :: without ``allowed_hosts``. (hypercorn's serve is
    replaced: the test binds nothing but loopback.)"""
    assert inspect.signature(serve_http).parameters["host"].default == "127.0.0.1"
    binds: list[list[str]] = []

    async def fake_serve(app: Any, config: Any, *, task_status: Any, mode: str) -> None:
        binds.append(list(config.bind))
        task_status.started([f"http://{config.bind[0]}"])
        await trio.sleep_forever()

    import hypercorn.trio

    monkeypatch.setattr(hypercorn.trio, "serve", fake_serve)
    cases: list[tuple[dict[str, Any], bool, str]] = [
        ({}, False, "127.0.0.1:0"),
        ({"host": "0.0.0.0"}, True, "0.0.0.0:0"),
        ({"host": "::"}, True, "[::]:0"),
        ({"host": "0.0.0.0", "allowed_hosts": {"mcp.example:8000"}}, False, "0.0.0.0:0"),
        ({"host": "::1"}, False, "[::1]:0"),
        ({"host": "localhost"}, False, "localhost:0"),
    ]
    for options, warns, bind in cases:
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="trio_mcp.http"):
            async with trio.open_nursery() as nursery:
                await nursery.start(
                    lambda task_status, options=options: serve_http(
                        make_server(), task_status=task_status, **options
                    )
                )
                nursery.cancel_scope.cancel()
        warned = [r for r in caplog.records if "without allowed_hosts" in r.getMessage()]
        assert bool(warned) is warns, options
        assert binds[-1] == [bind]
    assert _http_server.hypercorn_config().bind == ["127.0.0.1:0"]


# ------------------------------------------------------------ O-14: no CORS


@pytest.mark.spec("HT-02")
async def test_no_cors_headers_in_any_response(autojump_clock: trio.testing.MockClock) -> None:
    """O-14: no ``Access-Control-*`` header in any answer, to a same-origin or
    a foreign Origin, preflights included (403 from elsewhere, else 405):
    nothing invites a browser to let another site read a response or the
    ``Mcp-Session-Id``."""
    app = http_app(make_server())
    same = ("origin", "http://127.0.0.1:8000")
    evil = ("origin", "http://evil.example")
    host = ("host", "127.0.0.1:8000")
    answers: list[tuple[int, dict[bytes, bytes]]] = []

    async def ask(headers: Headers, method: str = "POST", body: bytes = b"") -> int:
        status, _, out = await call_app(app, scope_with(headers, method=method), whole_body(body))
        answers.append((status, out))
        return status

    async with app.run():
        assert await ask([host, same, *POST_HEADERS], body=init_body()) == 200
        sid = answers[-1][1][b"mcp-session-id"].decode()
        session = [host, same, *POST_HEADERS, ("mcp-session-id", sid)]
        note = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert await ask(session, body=note) == 202
        assert await ask(session, body=call(1)) == 200
        assert await ask([host, evil, *POST_HEADERS], body=init_body()) == 403
        preflight = [
            host,
            evil,
            ("access-control-request-method", "POST"),
            ("access-control-request-headers", "content-type, mcp-session-id"),
        ]
        assert await ask(preflight, "OPTIONS") == 403  # a foreign Origin first
        assert await ask([host, same, ("access-control-request-method", "POST")], "OPTIONS") == 405
        assert (
            await ask([host, same, *POST_HEADERS, ("mcp-session-id", "nope")], body=call(1)) == 404
        )
        assert await ask([host, same, ("mcp-session-id", sid)], "DELETE") == 200
    assert len(answers) == 8
    for status, headers in answers:
        cors = [name for name in headers if name.lower().startswith(b"access-control-")]
        assert cors == [], (status, cors)
    # The session id is a header of the initialize answer, never exposed to scripts.
    assert b"mcp-session-id" in answers[0][1]
