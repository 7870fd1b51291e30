"""The HTTP client in 2026-07-28: one POST per request, its headers, its answer, its cancel.

The server is :mod:`modern_http_script`: a scripted ASGI application on
hypercorn over loopback that records what the client sent and answers as each
test says (JSON, an SSE stream, a refusal, a stream broken off, or nothing
until the client leaves). Our own server, the TypeScript SDK v2 and the
Python SDK 2.x are in ``test_http_client_era.py`` and ``tests/interop``.
"""

from __future__ import annotations

import base64
import logging
from typing import Any

import orjson
import pytest
import trio
from modern_http_script import MODERN, BrokenOff, Post, complete, discover_result, scripted

from trio_mcp import open_client, open_http_client
from trio_mcp._client._connect import forget_eras
from trio_mcp._errors import RPCError
from trio_mcp._transport import HeaderMirroringTransport
from trio_mcp.protocol import RequestState
from trio_mcp.transports import open_http_transport

NOT_HUNG = 10.0

ANNOTATED = {
    "name": "route",
    "inputSchema": {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "note": {"type": "string"},
        },
    },
}
PLAIN = {"name": "plain", "inputSchema": {"type": "object", "properties": {}}}
INVALID = {
    "name": "broken_header",
    "inputSchema": {
        "type": "object",
        "properties": {"data": {"type": "object", "x-mcp-header": "Data"}},
    },
}


@pytest.fixture(autouse=True)
def _fresh_eras() -> None:
    forget_eras()


def text_result(text: str) -> dict[str, Any]:
    return complete({"content": [{"type": "text", "text": text}]})


def basic(tools: list[dict[str, Any]] | None = None) -> Any:
    """A handler serving discover, tools/list, resources/read, prompts/get and tools/call."""

    async def handler(post: Post) -> None:
        if post.method == "server/discover":
            caps: dict[str, Any] = {"tools": {}, "resources": {}, "prompts": {}}
            await post.result(discover_result(caps), {"mcp-session-id": "not-for-modern"})
        elif post.method == "tools/list":
            await post.result(complete({"tools": tools or [PLAIN]}, cacheable=True))
        elif post.method in ("resources/list", "resources/templates/list", "prompts/list"):
            key = {
                "resources/list": "resources",
                "resources/templates/list": "resourceTemplates",
                "prompts/list": "prompts",
            }[post.method]
            await post.result(complete({key: []}, cacheable=True))
        elif post.method == "resources/read":
            await post.result(complete({"contents": []}, cacheable=True))
        elif post.method == "prompts/get":
            await post.result(complete({"messages": []}))
        elif post.method == "tools/call":
            await post.result(text_result("ok"))
        else:
            await post.error(404, -32601, f"Method not found: {post.method}")

    return handler


# --- the era and the requests' shape --------------------------------------------


@pytest.mark.spec("HM-04", "HM-15", "HM-19", "HM-31", "HM-32", "VR-11")
async def test_auto_against_a_modern_server_sends_one_post_per_request() -> None:
    async with scripted(basic([PLAIN])) as (url, app):
        with trio.fail_after(NOT_HUNG):
            async with open_http_client(url) as client:
                assert client.era == "modern"
                assert client.protocol_version == MODERN
                await client.call_tool("plain", {})
                await client.read_resource("file:///a b.txt")
                await client.get_prompt("greet")
    # Only POSTs: no GET stream, no DELETE; never initialize.
    assert {verb for verb, _, _ in app.requests} == {"POST"}
    assert not app.posts("initialize")
    for headers, body in app.posts():
        # The session id the server sent is not a 2026-07-28 thing: never echoed.
        assert "mcp-session-id" not in headers
        assert headers["accept"] == "application/json, text/event-stream"
        assert headers["content-type"] == "application/json"
        meta = body["params"]["_meta"]
        assert headers["mcp-protocol-version"] == meta["io.modelcontextprotocol/protocolVersion"]
        assert headers["mcp-method"] == body["method"]
    names = {body["method"]: headers.get("mcp-name") for headers, body in app.posts()}
    assert names["tools/call"] == "plain"
    assert names["resources/read"] == "file:///a b.txt"
    assert names["prompts/get"] == "greet"
    assert names["tools/list"] is None


@pytest.mark.spec("HM-16", "HM-32", "VR-11", "VR-03")
async def test_a_32022_is_retried_with_a_named_version_never_a_fallback() -> None:
    refused: list[str] = []

    async def handler(post: Post) -> None:
        if not refused:
            refused.append(post.method)
            await post.error(400, -32022, "Unsupported protocol version", {"supported": [MODERN]})
            return
        await basic()(post)

    async with scripted(handler) as (url, app):
        with trio.fail_after(NOT_HUNG):
            async with open_http_client(url) as client:
                assert client.era == "modern"
    assert refused == ["server/discover"]
    assert [body["method"] for _, body in app.posts()][:2] == ["server/discover"] * 2
    assert not app.posts("initialize")


@pytest.mark.spec("HM-25", "HM-20")
async def test_annotated_arguments_are_mirrored_into_mcp_param_headers() -> None:
    async with scripted(basic([ANNOTATED])) as (url, app):
        with trio.fail_after(NOT_HUNG):
            async with open_http_client(url) as client:
                await client.call_tool(
                    "route",
                    {"region": "Zürich", "priority": 42, "verbose": False, "note": "x"},
                )
                await client.call_tool("route", {"region": "eu-west1", "verbose": None})
    (first, _), (second, _) = app.posts("tools/call")
    encoded = base64.b64encode("Zürich".encode()).decode()
    assert first["mcp-param-region"] == f"=?base64?{encoded}?="
    assert first["mcp-param-priority"] == "42"
    assert first["mcp-param-verbose"] == "false"
    assert "mcp-param-note" not in first  # not annotated
    assert second["mcp-param-region"] == "eu-west1"
    # null or absent: no header (HM-25).
    assert "mcp-param-verbose" not in second
    assert "mcp-param-priority" not in second


@pytest.mark.spec("HM-25")
async def test_a_client_over_a_transport_opened_apart_teaches_it_the_annotations() -> None:
    # The transport holds its header rules from its construction; any client
    # over it fills them from the tools it lists.
    async with scripted(basic([ANNOTATED])) as (url, app):
        with trio.fail_after(NOT_HUNG):
            async with open_http_transport(url) as transport:
                assert isinstance(transport, HeaderMirroringTransport)
                assert transport.tool_headers.annotations("route") == ()
                async with open_client(transport) as client:
                    await client.call_tool("route", {"region": "eu-west1"})
                names = [a.name for a in transport.tool_headers.annotations("route")]
    assert names == ["Region", "Priority", "Verbose"]
    ((headers, _),) = app.posts("tools/call")
    assert headers["mcp-param-region"] == "eu-west1"


@pytest.mark.spec("HM-27")
async def test_a_tool_with_an_invalid_annotation_is_dropped_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="trio_mcp.client")
    async with scripted(basic([PLAIN, INVALID])) as (url, _):
        with trio.fail_after(NOT_HUNG):
            async with open_http_client(url) as client:
                assert list(client.tools) == ["plain"]
                page = await client.list_tools()
                assert [tool.name for tool in page.tools] == ["plain"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("broken_header" in w and "'object' property" in w for w in warnings), warnings


@pytest.mark.spec("HM-29")
async def test_a_param_header_mismatch_lists_tools_again_and_retries_once() -> None:
    """The tool gained an annotation after the client listed it: the server
    refuses the call with -32020; the client lists again and retries, with the
    header this time."""
    listed: list[int] = []

    async def handler(post: Post) -> None:
        if post.method == "tools/list":
            listed.append(1)
            # The first listing predates the annotation.
            tool = PLAIN | {"name": "route"} if len(listed) == 1 else ANNOTATED
            await post.result(complete({"tools": [tool]}, cacheable=True))
        elif post.method == "tools/call" and "mcp-param-region" not in post.headers:
            await post.error(400, -32020, "Header mismatch: the Mcp-Param-Region header is missing")
        else:
            await basic()(post)

    async with scripted(handler) as (url, app):
        with trio.fail_after(NOT_HUNG):
            async with open_http_client(url) as client:
                result = await client.call_tool("route", {"region": "us-west1"})
    assert result.content[0].text == "ok"  # type: ignore[union-attr]
    calls = app.posts("tools/call")
    assert ["mcp-param-region" in headers for headers, _ in calls] == [False, True]
    assert len(listed) == 2


@pytest.mark.spec("HM-29")
async def test_a_mismatch_that_persists_is_raised_after_one_retry() -> None:
    async def handler(post: Post) -> None:
        if post.method == "tools/call":
            await post.error(400, -32020, "Header mismatch: Mcp-Param-Region does not match")
        else:
            await basic([ANNOTATED])(post)

    async with scripted(handler) as (url, app):
        with trio.fail_after(NOT_HUNG):
            async with open_http_client(url) as client:
                with pytest.raises(RPCError) as info:
                    await client.call_tool("route", {"region": "us-west1"})
    assert info.value.code == -32020
    assert len(app.posts("tools/call")) == 2


# --- the answer: JSON or SSE, and a broken stream ----------------------------------


@pytest.mark.spec("HM-07", "HM-08", "HM-10")
async def test_an_sse_answer_carries_the_calls_progress_and_log_messages() -> None:
    logged: list[Any] = []

    async def handler(post: Post) -> None:
        if post.method != "tools/call":
            await basic()(post)
            return
        token = post.params["_meta"]["progressToken"]
        await post.event(
            {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": token, "progress": 1, "total": 2},
            }
        )
        await post.event(
            {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": "halfway"},
            }
        )
        await post.event({"jsonrpc": "2.0", "id": post.body["id"], "result": text_result("done")})
        await post.end()

    progress: list[float] = []
    async with scripted(handler) as (url, _):
        with trio.fail_after(NOT_HUNG):
            async with open_http_client(url, log_handler=logged.append) as client:
                result = await client.call_tool(
                    "plain", {}, on_progress=lambda p: progress.append(p.progress)
                )
    assert result.content[0].text == "done"  # type: ignore[union-attr]
    assert progress == [1]
    assert [entry.data for entry in logged] == ["halfway"]


@pytest.mark.spec("HM-14")
async def test_a_broken_stream_fails_the_call_and_is_not_sent_again() -> None:
    async def handler(post: Post) -> None:
        if post.method != "tools/call":
            await basic()(post)
            return
        await post.event(
            {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": "started"},
            }
        )
        raise BrokenOff  # hypercorn drops the connection mid-stream

    async with scripted(handler) as (url, app):
        with trio.fail_after(NOT_HUNG):
            async with open_http_client(url, log_handler=lambda _: None) as client:
                with pytest.raises(RPCError) as info:
                    await client.call_tool("plain", {})
                # The connection is still usable for the next request.
                assert [tool.name for tool in (await client.list_tools()).tools] == ["plain"]
    assert "ended before the answer" in info.value.message
    assert "not sent again" in info.value.message
    assert len(app.posts("tools/call")) == 1


@pytest.mark.spec("HM-17", "HM-32")
async def test_a_refusal_without_a_json_rpc_body_names_the_status() -> None:
    async def handler(post: Post) -> None:
        if post.method == "tools/call":
            await post.json("not json-rpc", status=502)
        else:
            await basic()(post)

    async with scripted(handler) as (url, _):
        with trio.fail_after(NOT_HUNG):
            async with open_http_client(url) as client:
                with pytest.raises(RPCError, match="HTTP 502"):
                    await client.call_tool("plain", {})


# --- the cancel is the closed stream ----------------------------------------------


@pytest.mark.spec("HM-13", "CN-13")
async def test_cancelling_a_call_closes_its_stream_and_sends_nothing_else() -> None:
    running = trio.Event()
    left = trio.Event()

    async def handler(post: Post) -> None:
        if post.method != "tools/call":
            await basic()(post)
            return
        await post.event(
            {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": "working"},
            }
        )
        running.set()
        await post.wait_disconnect()
        left.set()

    async with scripted(handler) as (url, app):
        with trio.fail_after(NOT_HUNG):
            async with open_http_client(url, log_handler=lambda _: None) as client:
                with trio.CancelScope() as scope:

                    async def cancel_when_running() -> None:
                        await running.wait()
                        scope.cancel()

                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(cancel_when_running)
                        await client.call_tool("plain", {})
                assert scope.cancelled_caught
                # The server saw the client leave: that is the cancel.
                await left.wait()
                calls = [r for r in client.session.requests() if r.method == "tools/call"]
                assert [r.state for r in calls] == [RequestState.CANCELLED]
                # The connection keeps working.
                await client.ping()
    methods = [body["method"] for _, body in app.posts()]
    assert "notifications/cancelled" not in methods


@pytest.mark.spec("CN-13")
async def test_a_cancel_that_arrives_after_its_answer_is_dropped_not_posted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A timeout racing the answer queues notifications/cancelled just before
    # the answer ends the call's exchange. POSTed, the modern endpoint refuses
    # it (400: it takes no such notification), and the refusal failed the
    # client's whole transport: under load, one late cancel closed a session.
    async with scripted(basic()) as (url, app):
        with trio.fail_after(NOT_HUNG):
            async with open_http_client(url) as client:
                await client.call_tool("plain", {})
                (call,) = [r for r in client.session.requests() if r.method == "tools/call"]
                cancel = {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": call.id, "reason": "timed out"},
                }
                with caplog.at_level(logging.WARNING, logger="trio_mcp"):
                    await client.session.transport.send(orjson.dumps(cancel))
                    await client.ping()
                    assert (await client.call_tool("plain", {})).content
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    methods = [body["method"] for _, body in app.posts()]
    assert "notifications/cancelled" not in methods
    assert methods.count("tools/call") == 2


# --- input-required rounds over HTTP ------------------------------------------------


@pytest.mark.spec("PT-12", "PT-13", "PT-14")
async def test_input_required_rounds_are_posts_of_their_own() -> None:
    async def handler(post: Post) -> None:
        if post.method != "tools/call":
            caps: dict[str, Any] = {"tools": {}}
            if post.method == "server/discover":
                await post.result(discover_result(caps))
                return
            await basic([PLAIN])(post)
            return
        params = post.params
        if "inputResponses" not in params:
            ask = {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": "Sure?",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"ok": {"type": "boolean"}},
                    },
                },
            }
            await post.result(
                {"resultType": "input_required", "inputRequests": {"ok": ask}, "requestState": "s1"}
            )
            return
        answer = params["inputResponses"]["ok"]
        text = f"{answer['action']} {params.get('requestState')}"
        await post.result(text_result(text))

    async def accept(request: object) -> Any:
        from trio_mcp import types as t

        return t.ElicitResult(action="accept", content={"ok": True})

    async with scripted(handler) as (url, app):
        with trio.fail_after(NOT_HUNG):
            async with open_http_client(url, elicitation=accept) as client:
                result = await client.call_tool("plain", {})
    assert result.content[0].text == "accept s1"  # type: ignore[union-attr]
    (first_headers, first), (_, second) = app.posts("tools/call")
    assert first["id"] != second["id"]
    assert second["params"]["requestState"] == "s1"
    assert first_headers["mcp-name"] == "plain"
