"""Over Streamable HTTP (a real server on loopback): the W3C trace headers of
the POST that carried a message parent its SERVER span when the message's
``_meta`` has no trace context, and are linked when it has one; the span says
the client's address and port."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import trio
from http_helpers import (
    init_body,
    legacy_sse_stream,
    open_raw_session,
    post_headers,
    raw_client,
    running,
)
from otel_sdk import Sdk
from test_spans import named, observed

from trio_mcp import Server

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
#: A W3C trace context an outer HTTP client's span would send.
HEADER_TRACE = "0af7651916cd43dd8448eb211c80319c"
HEADER_SPAN = "b7ad6b7169203331"
HEADER = f"00-{HEADER_TRACE}-{HEADER_SPAN}-01"
#: Another, carried in _meta.
META_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
META_SPAN = "00f067aa0ba902b7"
META = f"00-{META_TRACE}-{META_SPAN}-01"


def echo_server(sdk: Sdk) -> Server:
    server = Server("traced-http", telemetry="off")
    server.add_middleware(observed(sdk, "server"))

    @server.tool()
    async def echo(text: str) -> str:
        return text

    return server


def call_body(request_id: int, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "echo", "arguments": {"text": "hi"}}
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def served(sdk: Sdk, name: str, request_id: int) -> dict[str, Any]:
    [span] = [
        span
        for span in named(sdk.spans(), name, "SERVER")
        if span["attributes"]["jsonrpc.request.id"] == str(request_id)
    ]
    return span


async def test_handshake_era_the_posts_trace_headers_parent_or_link_the_span() -> None:
    sdk = Sdk()
    async with running(echo_server(sdk)) as (url, _), raw_client(url) as http:
        session_id = await open_raw_session(http)
        headers = post_headers(session_id, **{"mcp-protocol-version": LEGACY})
        traced = {**headers, "traceparent": HEADER, "tracestate": "vendor=1"}
        # No trace context in _meta: the POST's is the parent.
        answer = await http.post("/mcp", content=orjson.dumps(call_body(2)), headers=traced)
        assert answer.status_code == 200, answer.text
        # Trace context in _meta: it is the parent, the POST's is linked.
        body = call_body(3, {"traceparent": META})
        answer = await http.post("/mcp", content=orjson.dumps(body), headers=traced)
        assert answer.status_code == 200, answer.text
        # What the session answers itself is parented the same way.
        ping = {"jsonrpc": "2.0", "id": 4, "method": "ping"}
        answer = await http.post("/mcp", content=orjson.dumps(ping), headers=traced)
        assert answer.status_code == 200, answer.text
        # A POST with no trace headers: a new trace (not the previous POST's).
        answer = await http.post("/mcp", content=orjson.dumps(call_body(5)), headers=headers)
        assert answer.status_code == 200, answer.text
    by_header = served(sdk, "tools/call echo", 2)
    assert (by_header["trace_id"], by_header["parent_id"]) == (HEADER_TRACE, HEADER_SPAN)
    assert by_header["links"] == []
    by_meta = served(sdk, "tools/call echo", 3)
    assert (by_meta["trace_id"], by_meta["parent_id"]) == (META_TRACE, META_SPAN)
    assert by_meta["links"] == [HEADER_SPAN]
    pinged = served(sdk, "ping", 4)
    assert (pinged["trace_id"], pinged["parent_id"]) == (HEADER_TRACE, HEADER_SPAN)
    untraced = served(sdk, "tools/call echo", 5)
    assert untraced["parent_id"] is None
    assert untraced["trace_id"] != HEADER_TRACE
    for span in (by_header, by_meta, pinged, untraced):
        attributes = span["attributes"]
        assert attributes["client.address"] == "127.0.0.1"
        assert isinstance(attributes["client.port"], int)
        assert attributes["client.port"] > 0
        assert "server.address" not in attributes
    # The client's address is no attribute of the duration histogram.
    for attributes, _ in sdk.points()["mcp.server.operation.duration"]:
        assert "client.address" not in attributes


@pytest.mark.parametrize("meta", [False, True])
async def test_modern_the_posts_trace_headers_parent_or_link_the_span(meta: bool) -> None:
    sdk = Sdk()
    version = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = call_body(7, {**version, "traceparent": META} if meta else version)
    headers = post_headers(
        **{"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "echo"}
    )
    headers["traceparent"] = HEADER
    async with running(echo_server(sdk)) as (url, _), raw_client(url) as http:
        answer = await http.post("/mcp", content=orjson.dumps(body), headers=headers)
        assert answer.status_code == 200, answer.text
        assert "result" in answer.text
    span = served(sdk, "tools/call echo", 7)
    if meta:
        assert (span["trace_id"], span["parent_id"]) == (META_TRACE, META_SPAN)
        assert span["links"] == [HEADER_SPAN]
    else:
        assert (span["trace_id"], span["parent_id"]) == (HEADER_TRACE, HEADER_SPAN)
        assert span["links"] == []
    assert span["attributes"]["client.address"] == "127.0.0.1"
    assert span["attributes"]["mcp.protocol.version"] == MODERN
    assert "mcp.session.id" not in span["attributes"]


async def test_the_initialize_post_parents_the_initialize_span() -> None:
    sdk = Sdk()
    async with running(echo_server(sdk)) as (url, _), raw_client(url) as http:
        headers = {**post_headers(), "traceparent": HEADER}
        answer = await http.post("/mcp", content=init_body(), headers=headers)
        assert answer.status_code == 200, answer.text
    span = served(sdk, "initialize", 1)
    assert (span["trace_id"], span["parent_id"]) == (HEADER_TRACE, HEADER_SPAN)
    assert span["attributes"]["client.address"] == "127.0.0.1"


async def test_the_legacy_sse_post_parents_the_span() -> None:
    # HTTP+SSE: the answer comes on the GET stream; the POST carries the headers.
    sdk = Sdk()
    headers = {"content-type": "application/json", "traceparent": HEADER}
    async with (
        running(echo_server(sdk)) as (url, _),
        raw_client(url) as http,
        legacy_sse_stream(url) as (stream, endpoint, seen),
    ):
        answer = await http.post(endpoint, content=init_body(), headers=headers)
        assert answer.status_code == 202
        with trio.fail_after(10):
            while b"protocolVersion" not in seen:
                seen += await stream.receive_some()
    span = served(sdk, "initialize", 1)
    assert (span["trace_id"], span["parent_id"]) == (HEADER_TRACE, HEADER_SPAN)
    assert span["attributes"]["client.address"] == "127.0.0.1"
