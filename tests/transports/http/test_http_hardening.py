"""Streamable HTTP hardening: Content-Type parsing, unknown bind addresses, slow
clients, and sessions that fail (reliability O-13, O-10, D-01..D-03).

Most tests drive the ASGI application directly (a ``receive`` that never
completes, on the autojump clock); the hypercorn settings are checked on the
configuration :func:`serve_http` builds, plus two real-socket runs with tiny
limits to show hypercorn honours them.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

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
    sse_messages,
)

from trio_mcp import http_app, serve_http, serve_session
from trio_mcp.lowlevel import Caller, Identity
from trio_mcp.transports._bounds import HEADER_TIMEOUT, LISTEN_BACKLOG
from trio_mcp.transports._http._common import (
    OriginPolicy,
    accepts,
    is_json_content_type,
    parse_media_type,
)
from trio_mcp.transports._http.server import _app as _http_server
from trio_mcp.transports._http.server._app import StreamableHTTPApp, hypercorn_config
from trio_mcp.transports._http.server._asgi import Message
from trio_mcp.transports._http.server._transport import HttpServerTransport

CALL = orjson.dumps(
    {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 1, "b": 2}},
    }
)


def asgi_scope(
    path: str = "/mcp",
    *,
    headers: dict[str, str] | None = None,
    server: tuple[str, int | None] | None = ("127.0.0.1", 8000),
    query: bytes = b"",
) -> dict[str, Any]:
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "root_path": "",
        "headers": [
            (k.encode(), v.encode())
            for k, v in (headers or {"host": "127.0.0.1:8000", **post_headers()}).items()
        ],
    }
    if server is not None:
        scope["server"] = server
    return scope


async def call_app(
    app: StreamableHTTPApp, scope: dict[str, Any], receive: Callable[[], Awaitable[Message]]
) -> tuple[int, bytes, dict[bytes, bytes]]:
    """Run one request through the ASGI app; return (status, body, headers)."""
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    start, *rest = sent
    assert start["type"] == "http.response.start"
    body = b"".join(m.get("body", b"") for m in rest)
    return start["status"], body, dict(start["headers"])


def body_then_block(*chunks: bytes) -> Callable[[], Awaitable[Message]]:
    """A receive() giving *chunks* (more to come), then never completing."""
    pending = list(chunks)

    async def receive() -> Message:
        if pending:
            await trio.lowlevel.checkpoint()
            return {"type": "http.request", "body": pending.pop(0), "more_body": True}
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    return receive


def whole_body(body: bytes) -> Callable[[], Awaitable[Message]]:
    """A receive() giving *body* complete, then blocking (the client waits)."""
    given = False

    async def receive() -> Message:
        nonlocal given
        if not given:
            given = True
            await trio.lowlevel.checkpoint()
            return {"type": "http.request", "body": body, "more_body": False}
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    return receive


# --------------------------------------------------------------- Content-Type (O-13)


@pytest.mark.spec("HT-02")
@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("application/json", True),
        ("APPLICATION/JSON; charset=utf-8", True),
        ("application/json;charset=UTF-8", True),
        ('application/json; charset="utf-8"', True),
        ("application/json ; charset=utf-8;", True),
        # CORS "simple" types smuggling application/json past a comma split (A4):
        ("text/plain; x=,application/json", False),
        ("multipart/form-data; boundary=,application/json", False),
        ("application/x-www-form-urlencoded; a=,application/json", False),
        ("text/plain, application/json", False),
        ("text/plain; application/json", False),
        ("text/plain", False),
        # Other types, and malformed values:
        ("", False),
        (None, False),
        ("application/json-seq", False),
        ("application/jsonx", False),
        ("application/json, text/plain", False),
        ("application/json; x=,text/plain", False),
        ('application/json; charset="utf-8', False),
        ("application/json; charset", False),
        ("application /json", False),
        ("application/", False),
        ("*/*", False),
    ],
)
def test_content_type_is_one_media_type(value: str | None, ok: bool) -> None:
    assert is_json_content_type(value) is ok


def test_parse_media_type_parameters() -> None:
    assert parse_media_type('Application/JSON; Charset="utf\\"8"; q=1') == (
        "application/json",
        {"charset": 'utf"8', "q": "1"},
    )
    assert parse_media_type("text/plain; x=,application/json") is None
    # Accept stays a comma list.
    assert accepts("text/plain, application/json;q=0.9", "application/json")
    assert not accepts("text/plain; x=,application/json-seq", "application/json")


@pytest.mark.spec("SS-01")
@pytest.mark.parametrize(
    "content_type",
    ["text/plain; x=,application/json", "multipart/form-data; boundary=,application/json", ""],
)
async def test_legacy_post_refuses_simple_content_types(content_type: str) -> None:
    delivered: list[bytes] = []

    async def handler(transport: HttpServerTransport, *, identity: Identity) -> None:
        delivered.append(await transport.receive())
        await transport.wait_closed()

    app = StreamableHTTPApp(transport_handler=handler)
    async with app.run():
        transport = app.new_session(Caller(), single_stream=True)
        assert transport is not None
        assert transport.session_id is not None
        query = f"session_id={transport.session_id}".encode()
        headers = {"host": "127.0.0.1:8000", "content-type": content_type}
        scope = asgi_scope("/messages/", headers=headers, query=query)
        status, body, _ = await call_app(app, scope, whole_body(init_body()))
        assert status == 415
        assert orjson.loads(body)["error"]["code"] == -32600
        headers["content-type"] = "Application/Json; charset=utf-8"
        scope = asgi_scope("/messages/", headers=headers, query=query)
        status, _, _ = await call_app(app, scope, whole_body(init_body()))
        assert status == 202
        await trio.testing.wait_all_tasks_blocked()
        assert [orjson.loads(d)["method"] for d in delivered] == ["initialize"]


# ---------------------------------------------------------- unknown bind (O-10)


@pytest.mark.spec("HT-02")
@pytest.mark.spec("SEC-01")
def test_unknown_bound_address_is_refused_unless_hosts_are_configured() -> None:
    rebinding = [(b"host", b"attacker.example:8000"), (b"origin", b"http://attacker.example:8000")]
    local = [(b"host", b"localhost:8000")]
    automatic = OriginPolicy()
    for server in (None, ("/run/mcp.sock", None)):
        refusal = automatic.check(rebinding, server)
        assert refusal is not None
        assert refusal[0] == 421
        assert "allowed_hosts" in refusal[1]
        assert automatic.check(local, server) == refusal  # not even the loopback names
    assert automatic.check(rebinding, ("127.0.0.1", 8000)) == (421, "Host not allowed")
    assert automatic.check(local, ("127.0.0.1", 8000)) is None
    configured = OriginPolicy(allowed_hosts={"localhost:8000"})
    assert configured.check(local, None) is None
    assert configured.check(rebinding, None) == (421, "Host not allowed")
    # An explicit empty allowlist admits nothing, bound address known or not.
    assert OriginPolicy(allowed_hosts=()).check(local, ("127.0.0.1", 8000)) is not None


@pytest.mark.spec("HT-02")
def test_default_ports_may_be_left_out_of_host_and_origin() -> None:
    # Browsers and curl leave :80 (http) and :443 (https) out of Host and Origin.
    bare = [(b"host", b"localhost"), (b"origin", b"http://localhost")]
    automatic = OriginPolicy()
    assert automatic.check(bare, ("127.0.0.1", 80)) is None
    assert automatic.check(bare, ("127.0.0.1", 443)) is None
    assert automatic.check(bare, ("127.0.0.1", 8000)) == (421, "Host not allowed")
    # "name:*" covers the name without a port too, for names and IPv6 alike.
    for host in (b"localhost", b"[::1]"):
        wildcard = OriginPolicy(allowed_hosts={"localhost:*", "[::1]:*"})
        assert wildcard.check([(b"host", host)], ("127.0.0.1", 8000)) is None
    assert OriginPolicy(allowed_hosts={"localhost:*"}).check(
        [(b"host", b"localhost.evil.example")], ("127.0.0.1", 8000)
    ) == (421, "Host not allowed")


@pytest.mark.spec("SEC-01")
async def test_app_without_a_server_entry_refuses_rebinding() -> None:
    headers = {"host": "attacker.example:8000", "origin": "http://attacker.example:8000"}
    headers.update(post_headers())
    app = http_app(make_server())
    async with app.run():
        status, body, _ = await call_app(
            app, asgi_scope(headers=headers, server=None), whole_body(init_body())
        )
        assert status == 421
        assert b"allowed_hosts" in body
        assert app.session_count == 0
    # Named hosts make such a mount usable again.
    app = http_app(make_server(), allowed_hosts={"localhost:8000"})
    async with app.run():
        headers = {"host": "localhost:8000", **post_headers()}
        status, body, _ = await call_app(
            app, asgi_scope(headers=headers, server=None), whole_body(init_body())
        )
        assert status == 200
        assert sse_messages(body.decode())[0]["result"]["protocolVersion"] == LATEST
        assert app.session_count == 1


# ------------------------------------------------------------ slow bodies (D-02)


@pytest.mark.parametrize("trickle", [False, True])
async def test_slow_body_gets_408_at_the_deadline(
    autojump_clock: trio.testing.MockClock, trickle: bool
) -> None:
    app = http_app(make_server(), body_timeout=30.0)

    async def trickling() -> Message:
        await trio.sleep(1.0)  # one byte a second: every read is prompt
        return {"type": "http.request", "body": b" ", "more_body": True}

    receive = trickling if trickle else body_then_block(b'{"jsonrpc":')
    async with app.run():
        start = trio.current_time()
        status, body, headers = await call_app(app, asgi_scope(), receive)
        assert status == 408
        assert trio.current_time() - start == pytest.approx(30.0)
        assert headers[b"connection"] == b"close"
        assert orjson.loads(body)["error"]["code"] == -32600
        assert app.session_count == 0


async def test_legacy_slow_body_gets_408(autojump_clock: trio.testing.MockClock) -> None:
    app = http_app(make_server(), body_timeout=5.0)
    async with app.run():
        transport = app.new_session(Caller(), single_stream=True)
        assert transport is not None
        query = f"session_id={transport.session_id}".encode()
        scope = asgi_scope("/messages/", query=query)
        start = trio.current_time()
        status, _, _ = await call_app(app, scope, body_then_block(b"{"))
        assert status == 408
        assert trio.current_time() - start == pytest.approx(5.0)


async def test_body_within_the_deadline_is_served(autojump_clock: trio.testing.MockClock) -> None:
    app = http_app(make_server(), body_timeout=30.0)
    pieces = [init_body()[:10], init_body()[10:]]

    async def slow_but_in_time() -> Message:
        if pieces:
            await trio.sleep(10.0)
            chunk = pieces.pop(0)
            return {"type": "http.request", "body": chunk, "more_body": bool(pieces)}
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    async with app.run():
        status, body, _ = await call_app(app, asgi_scope(), slow_but_in_time)
        assert status == 200
        assert sse_messages(body.decode())[0]["id"] == 1
    # None disables the deadline.
    app = http_app(make_server(), body_timeout=None)
    async with app.run():
        with trio.move_on_after(3600) as never:
            await call_app(app, asgi_scope(), body_then_block(b"{"))
        assert never.cancelled_caught


# ------------------------------------------------- hypercorn settings (D-01, D-03)


@pytest.mark.spec("HT-03")
def test_hypercorn_config_bounds_heads_and_idle_connections() -> None:
    config = hypercorn_config()
    assert HEADER_TIMEOUT == 10.0
    assert config.keep_alive_timeout == 10.0
    assert config.read_timeout is None  # it would cut SSE streams the client only reads
    assert config.bind == ["127.0.0.1:0"]
    config = hypercorn_config("::1", 8123, header_timeout=2.5, read_timeout=600.0)
    assert config.keep_alive_timeout == 2.5
    assert config.read_timeout == 600.0
    assert config.bind == ["[::1]:8123"]


async def test_the_listen_queue_holds_a_burst_of_connects_before_any_accept() -> None:
    # hypercorn's default backlog (100) drops the SYNs of a larger burst, and
    # the kernel retries a dropped SYN only after 1, 3, 7... s: the 1,000-client
    # soak saw calls wait a minute. The socket is listened on as hypercorn does
    # (``sock.listen(config.backlog)``) and never accepted from, so every
    # connect below completes only if the queue holds it.
    config = hypercorn_config()
    assert config.backlog == LISTEN_BACKLOG
    (sock,) = config.create_sockets().insecure_sockets
    with sock:
        sock.listen(config.backlog)
        port = sock.getsockname()[1]
        connections: list[trio.socket.SocketType] = []

        async def connect() -> None:
            connection = trio.socket.socket()
            connections.append(connection)
            await connection.connect(("127.0.0.1", port))

        try:
            # Real time, but not a race: with nothing accepted, a connect the
            # queue cannot hold is dropped again at every retry, so it never
            # completes; the bound only turns that hang into a failure.
            with trio.fail_after(5):
                async with trio.open_nursery() as nursery:
                    for _ in range(300):
                        nursery.start_soon(connect)
        finally:
            for connection in connections:
                connection.close()


async def test_serve_http_uses_its_timeout_options(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[Any] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        built.append(hypercorn_config(*args, **kwargs))
        return built[-1]

    monkeypatch.setattr(_http_server, "hypercorn_config", spy)
    async with trio.open_nursery() as nursery:
        await nursery.start(
            lambda task_status: serve_http(
                make_server(), header_timeout=3.0, read_timeout=900.0, task_status=task_status
            )
        )
        nursery.cancel_scope.cancel()
    (config,) = built
    assert (config.keep_alive_timeout, config.read_timeout) == (3.0, 900.0)


async def test_unfinished_request_head_is_closed_after_header_timeout() -> None:
    # Real sockets with a tiny limit: hypercorn closes the connection itself.
    async with trio.open_nursery() as nursery:
        url = await nursery.start(
            lambda task_status: serve_http(
                make_server(), header_timeout=0.05, task_status=task_status
            )
        )
        host, port = url.removeprefix("http://").rsplit(":", 1)
        stream = await trio.open_tcp_stream(host, int(port))
        async with stream:
            await stream.send_all(f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\n".encode())
            with trio.fail_after(10):
                assert await stream.receive_some() == b""  # closed, no response
        nursery.cancel_scope.cancel()


async def test_stalled_body_over_real_sockets_gets_408_and_close() -> None:
    async with running(make_server(), body_timeout=0.05) as (url, app):
        host, port = url.removeprefix("http://").rsplit(":", 1)
        stream = await trio.open_tcp_stream(host, int(port))
        async with stream:
            head = (
                f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\n"
                "Content-Type: application/json\r\n"
                "Accept: application/json, text/event-stream\r\n"
                "Content-Length: 4000000\r\n\r\n0123456789"
            )
            await stream.send_all(head.encode())
            seen = b""
            with trio.fail_after(10):
                while chunk := await stream.receive_some():
                    seen += chunk
            assert seen.startswith(b"HTTP/1.1 408")
            assert app.session_count == 0


# ----------------------------------------------------------- failing sessions


@pytest.mark.parametrize("in_a_nursery", [False, True])
async def test_a_failing_session_ends_alone(
    in_a_nursery: bool, caplog: pytest.LogCaptureFixture
) -> None:
    server = make_server()
    plan = ["serve", "fail", "serve"]

    async def fail(transport: HttpServerTransport) -> None:
        await transport.receive()  # its initialize arrived
        raise RuntimeError("a bug in this session")

    async def handler(transport: HttpServerTransport, *, identity: Identity) -> None:
        if plan.pop(0) == "serve":
            await serve_session(server, transport, identity=identity)
        elif in_a_nursery:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(fail, transport)
        else:
            await fail(transport)

    app = StreamableHTTPApp(transport_handler=handler)
    with caplog.at_level(logging.ERROR, logger="trio_mcp.http"):
        async with running(app) as (url, _), raw_client(url) as http:
            bystander = await open_raw_session(http)
            doomed = await http.post("/mcp", content=init_body(), headers=post_headers())
            assert doomed.status_code == 200
            assert sse_messages(doomed.text) == []  # the session died before answering
            doomed_sid = doomed.headers["mcp-session-id"]
            # Closing its transport (which ended that response) and leaving the
            # table happen together, before the answer could reach us.
            assert doomed_sid not in app.sessions()
            gone = await http.post("/mcp", content=CALL, headers=post_headers(doomed_sid))
            assert gone.status_code == 404
            # The server and the other sessions go on, and new ones open.
            for sid in (bystander, await open_raw_session(http)):
                answer = await http.post("/mcp", content=CALL, headers=post_headers(sid))
                assert sse_messages(answer.text)[0]["result"]["structuredContent"] == {"result": 3}
            assert app._nursery is not None
            assert app.session_count == 2
    (record,) = [r for r in caplog.records if r.name == "trio_mcp.http"]
    assert "session failed" in record.getMessage()
    assert record.exc_info is not None


async def test_a_failing_stateless_request_does_not_end_the_server(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls = 0

    async def handler(transport: HttpServerTransport, *, identity: Identity) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            await transport.receive()
            raise RuntimeError("a bug in this request's session")
        frame = orjson.loads(await transport.receive())
        reply = {"jsonrpc": "2.0", "id": frame["id"], "result": {"n": calls}}
        await transport.send(orjson.dumps(reply))
        await transport.wait_closed()

    app = StreamableHTTPApp(transport_handler=handler, stateless=True)
    with caplog.at_level(logging.ERROR, logger="trio_mcp.http"):
        async with running(app) as (url, _), raw_client(url) as http:
            headers = post_headers(**{"mcp-protocol-version": LATEST})
            with trio.fail_after(10):
                failed = await http.post("/mcp", content=CALL, headers=headers)
            assert failed.status_code == 200
            assert sse_messages(failed.text) == []
            served = await http.post("/mcp", content=CALL, headers=headers)
            assert sse_messages(served.text)[0]["result"] == {"n": 2}
    assert any("session failed" in r.getMessage() for r in caplog.records)
