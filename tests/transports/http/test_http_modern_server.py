"""The 2026-07-28 shape of Streamable HTTP, server side (real hypercorn on loopback).

One endpoint serves both eras: a POST naming 2026-07-28 (header or ``_meta``)
is served statelessly; ``initialize`` starts a handshake session as before.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

import httpx
import orjson
import pytest
import trio
from http_helpers import (
    LATEST,
    make_server,
    open_raw_session,
    post_headers,
    raw_client,
    running,
    sse_messages,
)

from trio_mcp import Context, Header, Server, http_app
from trio_mcp.lowlevel import CancelOrigin, RequestRecord, RequestState
from trio_mcp.protocol._headers import encode_header_value
from trio_mcp.testing import RecordingObserver
from trio_mcp.transports._http.server._modern import modern_status

MODERN = "2026-07-28"
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"


def meta(version: str = MODERN, **extra: Any) -> dict[str, Any]:
    return {VERSION_KEY: version, CAPABILITIES_KEY: {}, **extra}


def modern_body(
    method: str, params: dict[str, Any] | None = None, request_id: Any = 1, **meta_extra: Any
) -> dict[str, Any]:
    params = dict(params or {})
    params.setdefault("_meta", meta(**meta_extra))
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def modern_headers(body: dict[str, Any], **overrides: str | None) -> dict[str, str]:
    """The headers a conforming client sends with *body* (HM-15, HM-19)."""
    params = body.get("params") or {}
    headers = post_headers(**{"mcp-protocol-version": MODERN, "mcp-method": body["method"]})
    name = params.get("name", params.get("uri"))
    if body["method"] in ("tools/call", "prompts/get", "resources/read") and name is not None:
        headers["mcp-name"] = encode_header_value(name)
    for key, value in overrides.items():
        header = key.replace("_", "-")
        if value is None:
            headers.pop(header, None)
        else:
            headers[header] = value
    return headers


async def post(
    http: httpx.AsyncClient, body: Any, headers: dict[str, str] | None = None
) -> httpx.Response:
    return await http.post(
        "/mcp", content=orjson.dumps(body), headers=headers or modern_headers(body)
    )


def annotated_server() -> Server:
    server = make_server()

    @server.tool()
    async def forecast(
        region: Annotated[str, Header("Region")], count: Annotated[int, Header("Count")] = 1
    ) -> str:
        """A forecast for a region."""
        return f"{region} x{count}"

    return server


@asynccontextmanager
async def raw_post(
    url: str, body: dict[str, Any]
) -> AsyncIterator[tuple[trio.SocketStream, bytes]]:
    """POST *body* on a plain socket (leaving an httpx stream early would leave
    its generators to the garbage collector); yield the socket and b"". Leaving
    the block closes the socket: the client disconnects."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    payload = orjson.dumps(body)
    head = "".join(f"{k}: {v}\r\n" for k, v in modern_headers(body).items())
    stream = await trio.open_tcp_stream(host, int(port))
    async with stream:
        await stream.send_all(
            f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\n{head}"
            f"content-length: {len(payload)}\r\n\r\n".encode()
            + payload
        )
        yield stream, b""


@asynccontextmanager
async def modern_http(
    server: Server | None = None, **options: Any
) -> AsyncIterator[httpx.AsyncClient]:
    served = server if server is not None else make_server()
    async with running(http_app(served, **options)) as (url, _), raw_client(url) as http:
        yield http


# ------------------------------------------------------------ requests


@pytest.mark.spec("HM-01", "HM-07", "HM-31")
async def test_a_modern_call_is_answered_statelessly_as_json() -> None:
    async with modern_http() as http:
        body = modern_body("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
        response = await post(http, body)
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        assert "mcp-session-id" not in response.headers
        answer = response.json()
        assert answer["id"] == 1
        assert answer["result"]["structuredContent"] == {"result": 5}
        assert answer["result"]["resultType"] == "complete"


@pytest.mark.spec("HM-31")
async def test_a_session_id_on_a_modern_post_is_ignored_and_not_echoed() -> None:
    async with modern_http() as http:
        body = modern_body("tools/list")
        response = await post(http, body, modern_headers(body, mcp_session_id="no-such-session"))
        assert response.status_code == 200
        assert "tools" in response.json()["result"]
        assert "mcp-session-id" not in response.headers


@pytest.mark.spec("HM-01", "VR-09")
async def test_one_endpoint_serves_a_handshake_session_and_modern_requests_at_once() -> None:
    async with modern_http() as http:
        session_id = await open_raw_session(http)

        async def legacy_call(i: int) -> None:
            frame = {
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {"name": "add", "arguments": {"a": i, "b": 1}},
            }
            response = await http.post(
                "/mcp",
                content=orjson.dumps(frame),
                headers=post_headers(session_id, **{"mcp-protocol-version": LATEST}),
            )
            assert response.status_code == 200
            assert response.headers["mcp-session-id"] == session_id
            (message,) = sse_messages(response.text)
            assert message["result"]["structuredContent"] == {"result": i + 1}
            assert "resultType" not in message["result"]

        async def modern_call(i: int) -> None:
            body = modern_body(
                "tools/call", {"name": "add", "arguments": {"a": i, "b": 2}}, request_id=i
            )
            response = await post(http, body)
            assert response.status_code == 200
            assert "mcp-session-id" not in response.headers
            assert response.json()["result"]["structuredContent"] == {"result": i + 2}

        async with trio.open_nursery() as nursery:
            for i in range(1, 9):
                nursery.start_soon(legacy_call, i)
                nursery.start_soon(modern_call, i)


@pytest.mark.spec("HM-06")
async def test_a_notification_is_accepted_with_202_and_no_body() -> None:
    async with modern_http() as http:
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": 7, "_meta": meta()},
        }
        response = await post(http, note, modern_headers({"method": note["method"]}))
        assert response.status_code == 202
        assert response.content == b""


@pytest.mark.spec("HM-05")
@pytest.mark.parametrize(
    "body",
    [
        [modern_body("tools/list", request_id=1), modern_body("tools/list", request_id=2)],
        {"jsonrpc": "2.0", "id": 1, "result": {}},
    ],
    ids=["batch", "response"],
)
async def test_a_body_that_is_not_one_request_or_notification_is_400(body: Any) -> None:
    async with modern_http() as http:
        response = await post(http, body, modern_headers({"method": "tools/list"}))
        assert response.status_code == 400
        assert response.json()["error"]["code"] == -32600


# ------------------------------------------------------------- refusals


@pytest.mark.spec("ME-07", "HM-22")
@pytest.mark.parametrize("drop", ["meta", "version", "capabilities"])
async def test_missing_meta_fields_are_400_with_invalid_params_and_the_id(drop: str) -> None:
    async with modern_http() as http:
        body = modern_body("tools/list", request_id=41)
        if drop == "meta":
            del body["params"]["_meta"]
        elif drop == "version":
            del body["params"]["_meta"][VERSION_KEY]
        else:
            del body["params"]["_meta"][CAPABILITIES_KEY]
        response = await post(http, body, modern_headers(body))
        assert response.status_code == 400
        error = response.json()
        assert error["id"] == 41
        assert error["error"]["code"] == -32602
        assert error["error"]["data"]["missing"]


@pytest.mark.spec("HM-16", "VR-02")
async def test_an_unsupported_version_is_400_with_the_supported_ones() -> None:
    async with modern_http() as http:
        body = modern_body("tools/list", request_id=301, version="1999-01-01")
        response = await post(http, body, modern_headers(body, mcp_protocol_version="1999-01-01"))
        assert response.status_code == 400
        error = response.json()
        assert error["id"] == 301
        assert error["error"]["code"] == -32022
        assert error["error"]["data"]["requested"] == "1999-01-01"
        assert MODERN in error["error"]["data"]["supported"]


@pytest.mark.spec("HM-17")
@pytest.mark.parametrize("method", ["no/such/method", "initialize", "ping", "logging/setLevel"])
async def test_an_unimplemented_method_is_404_with_method_not_found(method: str) -> None:
    async with modern_http() as http:
        body = modern_body(method, request_id=601)
        response = await post(http, body)
        assert response.status_code == 404
        error = response.json()
        assert error["id"] == 601
        assert error["error"]["code"] == -32601


@pytest.mark.spec("HM-15", "HM-19", "HM-22")
@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"mcp_protocol_version": "2025-11-25"}, "MCP-Protocol-Version"),
        ({"mcp_protocol_version": None}, "MCP-Protocol-Version"),
        ({"mcp_method": "tools/list"}, "Mcp-Method"),
        ({"mcp_method": None}, "Mcp-Method"),
        ({"mcp_name": "echo"}, "Mcp-Name"),
        ({"mcp_name": None}, "Mcp-Name"),
        ({"mcp_name": "ADD"}, "Mcp-Name"),
    ],
    ids=[
        "version-differs",
        "version-missing",
        "method-differs",
        "method-missing",
        "name-differs",
        "name-missing",
        "name-case",
    ],
)
async def test_a_header_that_disagrees_with_the_body_is_400_header_mismatch(
    overrides: dict[str, str | None], reason: str
) -> None:
    async with modern_http() as http:
        body = modern_body("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}}, 7)
        response = await post(http, body, modern_headers(body, **overrides))
        assert response.status_code == 400
        error = response.json()
        assert error["id"] == 7
        assert error["error"]["code"] == -32020
        assert reason in error["error"]["message"]


@pytest.mark.spec("HM-20", "HM-21")
async def test_a_sentinel_encoded_name_is_decoded_before_comparing() -> None:
    server = make_server()

    @server.prompt(name="météo")
    def weather() -> str:
        """Non-ASCII name."""
        return "sunny"

    async with modern_http(server) as http:
        body = modern_body("prompts/get", {"name": "météo"})
        headers = modern_headers(body)
        assert headers["mcp-name"].startswith("=?base64?")
        response = await post(http, body, headers)
        assert response.status_code == 200, response.text
        assert response.json()["result"]["messages"][0]["content"]["text"] == "sunny"


@pytest.mark.spec("HM-25", "HM-28", "HM-22")
async def test_mcp_param_headers_are_checked_against_the_tool_arguments() -> None:
    server = annotated_server()
    async with modern_http(server) as http:
        body = modern_body("tools/call", {"name": "forecast", "arguments": {"region": "EU"}})
        ok = await post(http, body, modern_headers(body, mcp_param_region="EU"))
        assert ok.status_code == 200, ok.text
        assert ok.json()["result"]["content"][0]["text"] == "EU x1"
        # An integer compares as a number (HM-22): "3.0" agrees with 3.
        counted = modern_body(
            "tools/call", {"name": "forecast", "arguments": {"region": "EU", "count": 3}}
        )
        numeric = await post(
            http, counted, modern_headers(counted, mcp_param_region="EU", mcp_param_count="3.0")
        )
        assert numeric.status_code == 200, numeric.text
        for bad in (
            {"mcp_param_region": "US"},  # disagrees
            {},  # missing while the body has the value (HM-28)
            {"mcp_param_region": "=?base64?not base64?="},  # undecodable
        ):
            refused = await post(http, body, modern_headers(body, **bad))
            assert refused.status_code == 400, bad
            assert refused.json()["error"]["code"] == -32020


@pytest.mark.spec("HM-02")
async def test_the_origin_check_applies_to_modern_posts() -> None:
    async with modern_http() as http:
        body = modern_body("tools/list")
        response = await post(http, body, modern_headers(body, origin="http://evil.example"))
        assert response.status_code == 403


# --------------------------------------------------------------- streams


@pytest.mark.spec("HM-08", "HM-10", "HM-11", "HM-12")
async def test_progress_goes_first_on_an_sse_stream_that_the_response_ends() -> None:
    server = make_server()

    @server.tool()
    async def slow(ctx: Context) -> str:
        """Reports progress."""
        await ctx.report_progress(1, 2)
        await ctx.report_progress(2, 2)
        return "done"

    async with modern_http(server) as http:
        body = modern_body("tools/call", {"name": "slow", "arguments": {}}, 9, progressToken="p")
        response = await post(http, body)
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["x-accel-buffering"] == "no"
        assert "mcp-session-id" not in response.headers
        assert "id:" not in response.text  # no event ids: nothing is resumable (HM-12)
        messages = sse_messages(response.text)
        assert [m.get("method") for m in messages] == [
            "notifications/progress",
            "notifications/progress",
            None,
        ]
        assert messages[-1]["id"] == 9


@pytest.mark.spec("HM-07")
async def test_json_response_mode_answers_modern_requests_with_their_status() -> None:
    async with modern_http(json_response=True) as http:
        body = modern_body("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
        response = await post(http, body)
        assert response.status_code == 200
        assert response.json()["result"]["content"][0]["text"] == "hi"
        missing = modern_body("no/such")
        assert (await post(http, missing)).status_code == 404


class _EndObserver(RecordingObserver):
    """Records, and says when request 77 reached a terminal state."""

    def __init__(self) -> None:
        super().__init__()
        self.ended = trio.Event()

    def on_transition(self, record: RequestRecord, old: RequestState | None) -> None:
        super().on_transition(record, old)
        if record.id == 77 and record.state.is_terminal:
            self.ended.set()


@pytest.mark.spec("HM-13", "CN-13", "CN-16")
async def test_closing_the_response_stream_cancels_the_request() -> None:
    server = make_server()
    started = trio.Event()
    stopped = trio.Event()
    observer = _EndObserver()

    @server.tool()
    async def forever(ctx: Context) -> str:
        """Never answers by itself."""
        started.set()
        try:
            await trio.sleep_forever()
        finally:
            stopped.set()

    app = http_app(server, session_options={"observer": observer})
    async with running(app) as (url, _):
        body = modern_body("tools/call", {"name": "forever", "arguments": {}}, 77)
        async with raw_post(url, body):
            with trio.fail_after(10):
                await started.wait()
        # The client went away mid-request (the socket is closed).
        with trio.fail_after(10):
            await stopped.wait()
            await observer.ended.wait()
    (record,) = [r for r in observer.snapshots if r.id == 77 and r.state is RequestState.CANCELLED]
    assert record.cancel_origin is CancelOrigin.TRANSPORT
    written = [data for direction, data, _ in observer.frames if direction.name == "OUT"]
    assert not any(orjson.loads(data).get("id") == 77 for data in written)


@pytest.mark.spec("HM-13", "CN-16")
async def test_closing_a_started_sse_response_cancels_the_request() -> None:
    # The head went out (the request reported progress first), so the
    # disconnect is seen by the SSE writer rather than while the head waits.
    server = make_server()
    stopped = trio.Event()
    observer = _EndObserver()

    @server.tool()
    async def reporting(ctx: Context) -> str:
        """Reports once, then never answers by itself."""
        try:
            await ctx.report_progress(1, 2)
            await trio.sleep_forever()
        finally:
            stopped.set()

    app = http_app(server, session_options={"observer": observer})
    async with running(app) as (url, _):
        body = modern_body(
            "tools/call", {"name": "reporting", "arguments": {}}, 77, progressToken="p"
        )
        async with raw_post(url, body) as (stream, seen):
            with trio.fail_after(10):
                while b"notifications/progress" not in seen:
                    seen += await stream.receive_some()
        assert b"text/event-stream" in seen
        with trio.fail_after(10):
            await stopped.wait()
            await observer.ended.wait()
    (record,) = [r for r in observer.snapshots if r.id == 77 and r.state is RequestState.CANCELLED]
    assert record.cancel_origin is CancelOrigin.TRANSPORT
    written = [data for direction, data, _ in observer.frames if direction.name == "OUT"]
    assert not any(orjson.loads(data).get("id") == 77 for data in written)


@pytest.mark.spec("SB-01", "SB-02", "SB-14", "HM-08")
async def test_listen_is_a_long_lived_stream_with_keepalives_and_change_notices() -> None:
    server = make_server()
    async with running(http_app(server, modern_keepalive=0.05)) as (url, _):
        body = modern_body(
            "subscriptions/listen",
            {"notifications": {"toolsListChanged": True}},
            request_id="listen-1",
        )
        async with raw_post(url, body) as (stream, seen):
            with trio.fail_after(10):
                while b"acknowledged" not in seen:
                    seen += await stream.receive_some()

                @server.tool()
                async def added() -> str:
                    """Registered while a client listens."""
                    return "new"

                while b"list_changed" not in seen or b":keep-alive" not in seen:
                    seen += await stream.receive_some()
    head, _, events = seen.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert b"text/event-stream" in head
    messages = sse_messages(events.decode())
    assert messages[0]["method"] == "notifications/subscriptions/acknowledged"
    assert messages[1]["method"] == "notifications/tools/list_changed"


# ----------------------------------------------------------------- modes


@pytest.mark.spec("HM-31")
async def test_a_modern_only_endpoint_answers_get_and_delete_with_405() -> None:
    server = Server("modern-only", version="1", protocol_versions=[MODERN])

    @server.tool()
    async def echo(text: str) -> str:
        """Echo the text."""
        return text

    async with modern_http(server) as http:
        for method in ("GET", "DELETE"):
            response = await http.request(
                method, "/mcp", headers={"accept": "text/event-stream", "mcp-session-id": "x"}
            )
            assert response.status_code == 405
            assert response.headers["allow"] == "POST"
        body = modern_body("tools/list")
        response = await post(http, body, modern_headers(body, last_event_id="1-1"))
        assert response.status_code == 200
        assert "mcp-session-id" not in response.headers
        # The legacy SSE endpoints are not served either.
        assert (await http.get("/sse", headers={"accept": "text/event-stream"})).status_code == 404


@pytest.mark.spec("VR-13")
async def test_a_modern_only_endpoint_refuses_initialize_with_its_versions() -> None:
    server = Server("modern-only", version="1", protocol_versions=[MODERN])
    async with modern_http(server) as http:
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": LATEST,
                "capabilities": {},
                "clientInfo": {"name": "old", "version": "1"},
            },
        }
        response = await http.post("/mcp", content=orjson.dumps(initialize), headers=post_headers())
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["code"] == -32022
        assert error["data"]["supported"] == [MODERN]


@pytest.mark.spec("HM-32")
async def test_a_legacy_only_endpoint_refuses_a_modern_post_without_a_modern_error() -> None:
    server = Server("legacy-only", version="1", protocol_versions=[LATEST])
    async with modern_http(server) as http:
        body = modern_body("server/discover")
        response = await post(http, body)
        assert response.status_code == 400
        assert response.json()["error"]["code"] not in (-32020, -32021, -32022)
        await open_raw_session(http)  # and it serves the handshake era as ever


@pytest.mark.parametrize(
    ("error", "status"),
    [
        ({"code": -32601, "message": "x"}, 404),
        ({"code": -32020, "message": "x"}, 400),
        ({"code": -32021, "message": "x"}, 400),
        ({"code": -32022, "message": "x"}, 400),
        ({"code": -32602, "message": "x", "data": {"missing": ["a"]}}, 400),
        ({"code": -32602, "message": "unknown tool"}, 200),
        ({"code": -32603, "message": "x"}, 200),
    ],
)
def test_modern_status_maps_error_codes_to_http_statuses(
    error: dict[str, Any], status: int
) -> None:
    assert modern_status(orjson.dumps({"jsonrpc": "2.0", "id": 1, "error": error})) == status
    assert modern_status(orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": {}})) == 200


# ------------------------------------------------- input rounds, capabilities

FORM = {"type": "object", "properties": {"ok": {"type": "boolean"}}}


def asking_server() -> Server:
    server = make_server()

    @server.tool()
    async def confirm(item: str, ctx: Context) -> str:
        """Asks the user first."""
        answer = await ctx.elicit(
            {"mode": "form", "message": f"Buy {item}?", "requestedSchema": FORM}
        )
        return f"{item}: {answer.action}"

    return server


@pytest.mark.spec("HM-09", "PT-01")
async def test_a_question_to_the_client_is_an_input_required_result_not_a_request() -> None:
    capabilities: dict[str, Any] = {"elicitation": {"form": {}}}
    async with modern_http(asking_server()) as http:
        first = modern_body("tools/call", {"name": "confirm", "arguments": {"item": "tea"}}, 1)
        first["params"]["_meta"][CAPABILITIES_KEY] = capabilities
        response = await post(http, first)
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"  # no request on a stream
        result = response.json()["result"]
        assert result["resultType"] == "input_required"
        (key,) = result["inputRequests"]
        retry = modern_body(
            "tools/call",
            {
                "name": "confirm",
                "arguments": {"item": "tea"},
                "inputResponses": {key: {"action": "accept", "content": {"ok": True}}},
                "requestState": result["requestState"],
            },
            2,
        )
        retry["params"]["_meta"][CAPABILITIES_KEY] = capabilities
        final = await post(http, retry)
        assert final.json()["result"]["content"][0]["text"] == "tea: accept"


@pytest.mark.spec("PT-08")
async def test_a_missing_client_capability_is_400() -> None:
    async with modern_http(asking_server()) as http:
        body = modern_body("tools/call", {"name": "confirm", "arguments": {"item": "tea"}}, 5)
        response = await post(http, body)
        assert response.status_code == 400
        error = response.json()
        assert error["id"] == 5
        assert error["error"]["code"] == -32021
        assert "elicitation" in error["error"]["data"]["requiredCapabilities"]


@pytest.mark.spec("HM-18")
async def test_a_post_naming_no_version_is_handshake_era_unless_modern_only() -> None:
    plain = {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}
    async with modern_http() as http:
        # Dual era: no header, no _meta version: the handshake era (a session is needed).
        response = await http.post("/mcp", content=orjson.dumps(plain), headers=post_headers())
        assert response.status_code == 400
        assert "Mcp-Session-Id" in response.json()["error"]["message"]
    modern_only = Server("modern-only", version="1", protocol_versions=[MODERN])

    @modern_only.tool()
    async def echo(text: str) -> str:
        """Echo."""
        return text

    async with modern_http(modern_only) as http:
        response = await http.post("/mcp", content=orjson.dumps(plain), headers=post_headers())
        assert response.status_code == 400
        error = response.json()
        assert error["id"] == 3
        assert error["error"]["code"] == -32602
        assert error["error"]["data"]["missing"]


@pytest.mark.spec("HM-24")
async def test_header_names_are_case_insensitive_and_values_case_sensitive() -> None:
    async with modern_http() as http:
        body = modern_body("tools/call", {"name": "echo", "arguments": {"text": "x"}})
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "mcp-PROTOCOL-version": MODERN,
            "MCP-METHOD": "tools/call",
            "Mcp-Name": "echo",
        }
        assert (await post(http, body, headers)).status_code == 200
        headers["MCP-METHOD"] = "TOOLS/CALL"
        refused = await post(http, body, headers)
        assert refused.status_code == 400
        assert refused.json()["error"]["code"] == -32020


async def test_a_listen_whose_filter_is_not_an_object_is_refused_at_once() -> None:
    # A string would otherwise pass as a filter with nothing set, and the
    # stream would stay open listening to nothing.
    async with modern_http() as http:
        body = modern_body("subscriptions/listen", {"notifications": "all"}, 8)
        with trio.fail_after(10):
            response = await post(http, body)
        assert response.status_code == 200
        error = response.json()
        assert error["id"] == 8
        assert error["error"]["code"] == -32602
