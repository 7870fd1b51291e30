"""Streamable HTTP server: statuses, security checks, sessions (real loopback sockets)."""

from __future__ import annotations

import orjson
import pytest
import trio
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

from trio_mcp.transports._http._common import is_visible_ascii, new_session_id

CALL = orjson.dumps(
    {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 1, "b": 2}},
    }
)


@pytest.mark.spec("HT-28")
def test_session_ids_are_random_visible_ascii() -> None:
    ids = {new_session_id() for _ in range(10_000)}
    assert len(ids) == 10_000
    assert all(is_visible_ascii(i) and len(i) == 32 for i in ids)


@pytest.mark.spec("HT-09")
@pytest.mark.spec("HT-27")
@pytest.mark.spec("HT-13")
async def test_call_over_sse_then_delete_then_404() -> None:
    async with running(make_server()) as (url, app), raw_client(url) as http:
        sid = await open_raw_session(http)
        headers = post_headers(sid, **{"mcp-protocol-version": LATEST})
        response = await http.post("/mcp", content=CALL, headers=headers)
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream"
        (answer,) = sse_messages(response.text)
        assert answer["id"] == 2
        assert answer["result"]["structuredContent"] == {"result": 3}
        assert app.session_count == 1
        assert (await http.delete("/mcp", headers=headers)).status_code == 200
        assert app.session_count == 0
        assert (await http.post("/mcp", content=CALL, headers=headers)).status_code == 404


@pytest.mark.spec("HT-09")
async def test_json_response_mode() -> None:
    async with running(make_server(), json_response=True) as (url, _), raw_client(url) as http:
        sid = await open_raw_session(http)
        response = await http.post("/mcp", content=CALL, headers=post_headers(sid))
        assert response.headers["content-type"] == "application/json"
        assert response.json()["result"]["structuredContent"] == {"result": 3}


@pytest.mark.spec("HT-08")
@pytest.mark.spec("HT-31")
@pytest.mark.spec("HT-32")
@pytest.mark.spec("HT-37")
@pytest.mark.spec("HT-19")
@pytest.mark.spec("HT-02")
async def test_refusals() -> None:
    async with running(make_server(), allow_delete=False) as (url, app), raw_client(url) as http:
        sid = await open_raw_session(http)
        cases = [
            (post_headers(), CALL, 400),  # no session id
            (post_headers("nope"), CALL, 404),  # unknown session
            (post_headers(sid, **{"mcp-protocol-version": "1999-01-01"}), CALL, 400),
            (post_headers(sid), b"{not json", 400),
            (post_headers(sid), b'{"jsonrpc":"2.0","id":null,"method":"x"}', 400),
            (post_headers(sid, accept="application/json"), CALL, 406),
            (post_headers(sid, **{"content-type": "text/plain"}), CALL, 415),
        ]
        # Content-Type is ONE media type, never a comma list: CORS "simple"
        # types cannot smuggle application/json in (reliability O-13, A4).
        not_json = [
            "text/plain; x=,application/json",
            "multipart/form-data; boundary=,application/json",
            "application/x-www-form-urlencoded; a=,application/json",
            "text/plain, application/json",
            "",
            "application/json-seq",
            "application/jsonx",
        ]
        cases += [(post_headers(sid, **{"content-type": t}), CALL, 415) for t in not_json]
        for headers, body, status in cases:
            response = await http.post("/mcp", content=body, headers=headers)
            assert response.status_code == status, (headers, body)
            assert response.json()["error"]["code"] in (-32600, -32700)
        upper = post_headers(sid, **{"content-type": "APPLICATION/JSON; charset=utf-8"})
        response = await http.post("/mcp", content=CALL, headers=upper)
        assert response.status_code == 200
        # A supported version other than the negotiated one is accepted (only an
        # invalid or unsupported version is 400; the conformance harness 0.1.16
        # sends such headers inside a 2025-11-25 session).
        other = post_headers(sid, **{"mcp-protocol-version": "2025-03-26"})
        response = await http.post("/mcp", content=CALL, headers=other)
        assert response.status_code == 200
        note = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
        response = await http.post("/mcp", content=note, headers=post_headers(sid))
        assert (response.status_code, response.content) == (202, b"")
        assert (await http.delete("/mcp", headers=post_headers(sid))).status_code == 405
        assert (await http.put("/mcp", headers=post_headers(sid))).status_code == 405
        assert app.session_count == 1


@pytest.mark.spec("HT-02")
@pytest.mark.spec("SEC-01")
@pytest.mark.parametrize(
    ("origin", "host", "status"),
    [
        ("http://evil.example", None, 403),
        ("null", None, 403),
        ("http://localhost.evil.example", None, 403),
        ("http://127.0.0.1.evil.example", None, 403),
        ("http://evil.example#@localhost", None, 403),
        (None, "evil.example", 421),
        (None, "localhost.", 421),
        (None, None, 200),
    ],
)
async def test_dns_rebinding_defence(origin: str | None, host: str | None, status: int) -> None:
    async with running(make_server()) as (url, app), raw_client(url) as http:
        headers = post_headers()
        port = url.rsplit(":", 1)[1]
        if origin is not None:
            headers["origin"] = origin
        if host is not None:
            headers["host"] = f"{host}:{port}"
        response = await http.post("/mcp", content=init_body(), headers=headers)
        assert response.status_code == status
        assert app.session_count == (1 if status == 200 else 0)


async def test_same_origin_browser_request_is_allowed() -> None:
    async with running(make_server()) as (url, _), raw_client(url) as http:
        headers = post_headers(origin=url)
        assert (await http.post("/mcp", content=init_body(), headers=headers)).status_code == 200


@pytest.mark.spec("HT-31")
async def test_ten_thousand_refused_requests_allocate_no_session() -> None:
    async with running(make_server(), max_body_size=64) as (url, app), raw_client(url) as http:
        bad = [
            ("POST", post_headers(origin="http://evil.example"), init_body()),
            ("POST", post_headers(**{"content-type": "text/plain"}), init_body()),
            ("POST", post_headers(accept="text/html"), init_body()),
            ("GET", {"accept": "text/event-stream"}, b""),
            ("DELETE", {}, b""),
            ("POST", post_headers("guess"), CALL),
            ("POST", post_headers(), b"x" * 100),
        ]
        assert app._nursery is not None
        tasks_before = len(app._nursery.child_tasks)

        async def spray(n: int) -> None:
            for i in range(n):
                method, headers, body = bad[i % len(bad)]
                response = await http.request(method, "/mcp", headers=headers, content=body)
                assert response.status_code in (400, 403, 404, 406, 413, 415)

        async with trio.open_nursery() as nursery:
            for _ in range(10):
                nursery.start_soon(spray, 1000)
        assert app.session_count == 0
        assert len(app._nursery.child_tasks) == tasks_before  # no session task either


async def test_max_sessions_gives_503() -> None:
    async with running(make_server(), max_sessions=2) as (url, app), raw_client(url) as http:
        await open_raw_session(http)
        await open_raw_session(http)
        response = await http.post("/mcp", content=init_body(), headers=post_headers())
        assert response.status_code == 503
        assert app.session_count == 2


async def test_foreign_principal_gets_404() -> None:
    def principal(scope: dict[str, object]) -> object:
        return dict(scope["headers"]).get(b"x-user")  # type: ignore[call-overload]

    async with running(make_server(), principal_of=principal) as (url, _), raw_client(url) as http:
        response = await http.post(
            "/mcp", content=init_body(), headers=post_headers(**{"x-user": "alice"})
        )
        sid = response.headers["mcp-session-id"]
        for user in ("mallory", None):
            headers = post_headers(sid)
            if user:
                headers["x-user"] = user
            assert (await http.post("/mcp", content=CALL, headers=headers)).status_code == 404
        ok = await http.post("/mcp", content=CALL, headers=post_headers(sid, **{"x-user": "alice"}))
        assert ok.status_code == 200


async def test_second_get_stream_is_refused_and_first_keeps_working() -> None:
    async with running(make_server()) as (url, app), raw_client(url) as http:
        sid = await open_raw_session(http)
        headers = {"accept": "text/event-stream", "mcp-session-id": sid}
        async with http.stream("GET", "/mcp", headers=headers) as first:
            assert first.status_code == 200
            second = await http.get("/mcp", headers=headers)
            assert second.status_code == 409
            transport = app.sessions()[sid]
            assert transport.get_stream.conn is not None


async def test_duplicate_in_flight_id_is_refused() -> None:
    server = make_server()
    gate = trio.Event()

    @server.tool()
    async def wait() -> str:
        await gate.wait()
        return "done"

    body = orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "wait", "arguments": {}},
        }
    )
    async with running(server) as (url, _), raw_client(url) as http:
        sid = await open_raw_session(http)
        async with http.stream("POST", "/mcp", content=body, headers=post_headers(sid)) as first:
            second = await http.post("/mcp", content=body, headers=post_headers(sid))
            assert second.status_code == 409
            gate.set()
            text = (await first.aread()).decode()
        assert sse_messages(text)[0]["result"]["content"][0]["text"] == "done"


async def test_stateless_mode_serves_requests_without_sessions() -> None:
    async with running(make_server(), stateless=True) as (url, app), raw_client(url) as http:
        headers = post_headers(**{"mcp-protocol-version": LATEST})
        response = await http.post("/mcp", content=CALL, headers=headers)
        assert response.status_code == 200
        assert "mcp-session-id" not in response.headers
        assert sse_messages(response.text)[0]["result"]["structuredContent"] == {"result": 3}
        assert (await http.get("/mcp", headers={"accept": "text/event-stream"})).status_code == 405
        assert app.session_count == 0


async def test_bad_frames_do_not_end_the_session() -> None:
    async with running(make_server()) as (url, _), raw_client(url) as http:
        sid = await open_raw_session(http)
        bad = orjson.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": 5})
        response = await http.post("/mcp", content=bad, headers=post_headers(sid))
        assert sse_messages(response.text)[0]["error"]["code"] == -32602
        response = await http.post("/mcp", content=CALL, headers=post_headers(sid))
        assert sse_messages(response.text)[0]["result"]["structuredContent"] == {"result": 3}
