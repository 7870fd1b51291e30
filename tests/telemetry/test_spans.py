"""Spans and metrics of our client and our server in one process, over the
in-memory pair, in both eras, read with the OpenTelemetry SDK's in-memory
exporters (providers of the test's own: the process's global ones are left
alone, so no other test sees trace context in its frames)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import pytest
import trio
from otel_sdk import Sdk

from trio_mcp import Client, Context, RequestTimeout, RPCError, Server, ToolError
from trio_mcp._telemetry._middleware import Telemetry
from trio_mcp.lowlevel import FrameDirection, FrameLog
from trio_mcp.testing import open_memory_client

ERAS = pytest.mark.parametrize("era", ["legacy", "modern"])
VERSION = {"legacy": "2025-11-25", "modern": "2026-07-28"}
Mode = Literal["native", "propagation"]


def shop(sdk: Sdk, mode: Mode = "native", name: str = "shop") -> Server:
    server = Server(name, telemetry="off")
    server.add_middleware(observed(sdk, "server", mode))

    @server.tool()
    async def echo(text: str) -> str:
        return text

    @server.tool()
    async def refuse() -> str:
        raise ToolError("no such order")

    @server.tool()
    async def slow(seconds: float) -> str:
        await trio.sleep(seconds)
        return "done"

    return server


def observed(
    sdk: Sdk, role: Literal["client", "server"], mode: Mode = "native", *, capture: bool = False
) -> Telemetry:
    return Telemetry(
        role,
        mode,
        tracer_provider=sdk.tracer_provider,
        meter_provider=sdk.meter_provider,
        capture=capture,
    )


@asynccontextmanager
async def connected(
    sdk: Sdk, era: str, server: Server | None = None, mode: Mode = "native", **options: Any
) -> AsyncIterator[Client]:
    async with open_memory_client(
        server or shop(sdk, mode),
        era=era,
        telemetry="off",
        middleware=[observed(sdk, "client", mode)],
        **options,
    ) as client:
        yield client


def named(spans: list[dict[str, Any]], name: str, kind: str) -> list[dict[str, Any]]:
    return [s for s in spans if s["name"] == name and s["kind"] == kind]


@ERAS
async def test_a_call_is_a_client_span_and_its_child_server_span(era: str) -> None:
    sdk = Sdk()
    async with connected(sdk, era) as client:
        await client.call_tool("echo", {"text": "hi"})
    spans = sdk.spans()
    [sent] = named(spans, "tools/call echo", "CLIENT")
    [served] = named(spans, "tools/call echo", "SERVER")
    assert served["trace_id"] == sent["trace_id"]
    assert served["parent_id"] == sent["span_id"]
    assert sent["parent_id"] is None
    expected = {
        "mcp.method.name": "tools/call",
        "jsonrpc.request.id": sent["attributes"]["jsonrpc.request.id"],
        "mcp.protocol.version": VERSION[era],
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "echo",
    }
    assert sent["attributes"] == expected
    assert served["attributes"] == expected
    assert sent["status"] == served["status"] == "UNSET"
    assert sent["scope"] == "trio_mcp"
    # Every request of the session has its pair (the opening, the list).
    for span in named(spans, "tools/list", "CLIENT"):
        [child] = [s for s in spans if s["parent_id"] == span["span_id"]]
        assert child["name"] == "tools/list"
        assert child["kind"] == "SERVER"
    assert not [s for s in spans if "mcp.session.id" in s["attributes"]]


@ERAS
async def test_the_sessions_own_requests_have_their_pair_of_spans(era: str) -> None:
    # Answered by the session before any handler runs, and still observed.
    sdk = Sdk()
    async with connected(sdk, era) as client:
        await client.ping()
    spans = sdk.spans()
    # 2026-07-28 has no ping: the client's ping asks server/discover again.
    opening = "initialize" if era == "legacy" else "server/discover"
    for method in (opening, "ping" if era == "legacy" else opening):
        sent_spans = named(spans, method, "CLIENT")
        assert len(sent_spans) == (2 if era == "modern" else 1)
        for sent in sent_spans:
            [served] = [s for s in spans if s["parent_id"] == sent["span_id"]]
            assert served["name"] == method
            assert served["kind"] == "SERVER"
            assert served["trace_id"] == sent["trace_id"]
            assert served["attributes"]["mcp.method.name"] == method
            request_id = sent["attributes"]["jsonrpc.request.id"]
            assert served["attributes"]["jsonrpc.request.id"] == request_id
            assert served["status"] == "UNSET"
    if era == "legacy":
        # The handshake's closing notification: a span on each side, one trace.
        [told] = named(spans, "notifications/initialized", "CLIENT")
        [heard] = named(spans, "notifications/initialized", "SERVER")
        assert heard["parent_id"] == told["span_id"]
    points = sdk.points()["mcp.server.operation.duration"]
    assert {attributes["mcp.method.name"] for attributes, _ in points} >= {opening}


async def test_the_peers_progress_and_cancel_have_server_spans(
    autojump_clock: trio.abc.Clock,
) -> None:
    sdk = Sdk()
    server = shop(sdk)

    @server.tool()
    async def steps(ctx: Context) -> str:
        await ctx.report_progress(1, 2)
        return "done"

    async with connected(sdk, "legacy", server) as client:
        await client.call_tool("steps", {}, on_progress=lambda _: None)
        with trio.move_on_after(1):
            await client.call_tool("slow", {"seconds": 10})
        await client.ping()  # the cancel has been read by now
    spans = sdk.spans()
    [progress] = named(spans, "notifications/progress", "SERVER")
    [cancel] = named(spans, "notifications/cancelled", "SERVER")
    # Each has its CLIENT span on the sending side, and is its child.
    [told] = named(spans, "notifications/progress", "CLIENT")
    assert progress["parent_id"] == told["span_id"]
    [told] = named(spans, "notifications/cancelled", "CLIENT")
    assert cancel["parent_id"] == told["span_id"]
    assert progress["attributes"]["mcp.method.name"] == "notifications/progress"
    assert cancel["attributes"]["mcp.method.name"] == "notifications/cancelled"
    assert "jsonrpc.request.id" not in cancel["attributes"]


@ERAS
async def test_errors_set_error_type_and_the_status(era: str) -> None:
    sdk = Sdk()
    async with connected(sdk, era) as client:
        result = await client.call_tool("refuse", {})
        assert result.is_error
        with pytest.raises(RPCError):
            await client.session.request("tools/call", {"name": "nope", "arguments": {}})
    spans = sdk.spans()
    for kind in ("CLIENT", "SERVER"):
        [refused] = named(spans, "tools/call refuse", kind)
        assert refused["attributes"]["error.type"] == "tool_error"
        assert refused["status"] == "ERROR"
        [unknown] = named(spans, "tools/call nope", kind)
        assert unknown["attributes"]["error.type"] == "-32602"
        assert unknown["attributes"]["rpc.response.status_code"] == "-32602"
        assert unknown["status"] == "ERROR"
    [unknown] = named(spans, "tools/call nope", "CLIENT")
    assert unknown["description"] == "Unknown tool: nope"


@ERAS
async def test_a_cancelled_call_ends_with_an_event_naming_who_asked(
    era: str, autojump_clock: trio.abc.Clock
) -> None:
    sdk = Sdk()
    async with connected(sdk, era) as client:
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:

                async def stop() -> None:
                    await trio.sleep(1)
                    scope.cancel(reason="the user pressed stop")

                nursery.start_soon(stop)
                await client.call_tool("slow", {"seconds": 10})
        with pytest.raises(RequestTimeout):
            await client.call_tool("slow", {"seconds": 10}, progress_idle_timeout=2)
    spans = sdk.spans()
    sent = named(spans, "tools/call slow", "CLIENT")
    served = named(spans, "tools/call slow", "SERVER")
    assert [s["events"] for s in sent] == [
        [
            {
                "name": "trio_mcp.request.cancelled",
                "attributes": {
                    "trio_mcp.cancel.origin": "caller",
                    "trio_mcp.cancel.reason": "the user pressed stop",
                },
            }
        ],
        [
            {
                "name": "trio_mcp.request.cancelled",
                "attributes": {
                    "trio_mcp.cancel.origin": "deadline",
                    "trio_mcp.cancel.reason": "tools/call timed out after 2s without progress",
                },
            }
        ],
    ]
    assert [s["attributes"]["error.type"] for s in sent] == ["cancelled", "timeout"]
    # The server learnt both from its peer.
    assert [s["events"][0]["attributes"]["trio_mcp.cancel.origin"] for s in served] == [
        "peer",
        "peer",
    ]


@ERAS
async def test_the_metrics(era: str, autojump_clock: trio.abc.Clock) -> None:
    sdk = Sdk()
    async with connected(sdk, era) as client:
        await client.call_tool("echo", {"text": "hi"})
        await client.call_tool("refuse", {})
        with trio.move_on_after(1):
            await client.call_tool("slow", {"seconds": 10})
    points = sdk.points()
    server_calls = [
        (attributes, count)
        for attributes, count in points["mcp.server.operation.duration"]
        if attributes.get("mcp.method.name") == "tools/call"
    ]
    by_error = {attributes.get("error.type"): count for attributes, count in server_calls}
    assert by_error == {None: 1, "tool_error": 1, "cancelled": 1}
    for attributes, _ in server_calls:
        assert attributes["gen_ai.tool.name"] in ("echo", "refuse", "slow")
        assert "jsonrpc.request.id" not in attributes
    client_calls = [
        a
        for a, _ in points["mcp.client.operation.duration"]
        if a["mcp.method.name"] == "tools/call"
    ]
    assert {a.get("error.type") for a in client_calls} == {None, "tool_error", "timeout"}
    cancelled = {
        (a["trio_mcp.request.direction"], a["trio_mcp.cancel.origin"]): n
        for a, n in points["trio_mcp.request.cancellations"]
        if a["mcp.method.name"] == "tools/call"
    }
    assert cancelled == {("outbound", "deadline"): 1, ("inbound", "peer"): 1}
    outcomes = {
        (a["trio_mcp.request.direction"], a["trio_mcp.request.state"]): n
        for a, n in points["trio_mcp.request.outcomes"]
        if a["mcp.method.name"] == "tools/call"
    }
    assert outcomes == {
        ("outbound", "completed"): 2,
        ("outbound", "cancelled"): 1,
        ("inbound", "completed"): 2,
        ("inbound", "cancelled"): 1,
    }
    # Nothing runs any more; every request was queued for some time, even none.
    assert {n for _, n in points["trio_mcp.request.in_flight"]} == {0}
    queued = {
        a["trio_mcp.request.direction"]: n
        for a, n in points["trio_mcp.request.queued.duration"]
        if a["mcp.method.name"] == "tools/call"
    }
    assert queued == {"outbound": 3, "inbound": 3}


@ERAS
async def test_a_call_made_by_a_handler_continues_the_trace(era: str) -> None:
    sdk = Sdk()
    inner = shop(sdk, name="inner")
    outer = Server("outer", telemetry="off")
    outer.add_middleware(observed(sdk, "server"))

    @outer.tool()
    async def relay(text: str) -> str:
        async with connected(sdk, "legacy", inner) as second:
            result = await second.call_tool("echo", {"text": text})
        return f"relayed {result.content[0].text}"  # type: ignore[union-attr]

    async with connected(sdk, era, outer) as client:
        await client.call_tool("relay", {"text": "hi"})
    spans = sdk.spans()
    [first] = named(spans, "tools/call relay", "CLIENT")
    [relayed] = named(spans, "tools/call relay", "SERVER")
    [second] = named(spans, "tools/call echo", "CLIENT")
    [echoed] = named(spans, "tools/call echo", "SERVER")
    assert {s["trace_id"] for s in (first, relayed, second, echoed)} == {first["trace_id"]}
    assert relayed["parent_id"] == first["span_id"]
    assert second["parent_id"] == relayed["span_id"]
    assert echoed["parent_id"] == second["span_id"]


@pytest.mark.spec("ME-14")
@ERAS
async def test_trace_context_travels_in_meta_of_requests_and_notifications(era: str) -> None:
    sdk = Sdk()
    frames = FrameLog()
    server = shop(sdk)

    @server.tool()
    async def chatty(ctx: Context) -> str:
        await ctx.info("working on it")  # a notification, sent inside the call's span
        return "said"

    async with connected(sdk, era, server, observer=frames, log_handler=lambda m: None) as client:
        await client.set_logging_level("info")
        await client.call_tool("chatty", {})
    messages = [f for f in frames.frames if isinstance(f.message, dict) and "method" in f.message]
    [call] = [
        f.message
        for f in messages
        if f.direction is FrameDirection.OUT and f.message["method"] == "tools/call"
    ]
    [said] = [
        f.message
        for f in messages
        if f.direction is FrameDirection.IN and f.message["method"] == "notifications/message"
    ]
    spans = sdk.spans()
    [sent] = named(spans, "tools/call chatty", "CLIENT")
    [served] = named(spans, "tools/call chatty", "SERVER")
    assert call["params"]["_meta"]["traceparent"].split("-")[:3] == [
        "00",
        sent["trace_id"],
        sent["span_id"],
    ]
    # The server's notification: its own CLIENT span, a child of the call's.
    [notified] = named(spans, "notifications/message", "CLIENT")
    assert notified["parent_id"] == served["span_id"]
    assert said["params"]["_meta"]["traceparent"].split("-")[1:3] == [
        sent["trace_id"],
        notified["span_id"],
    ]
    [received] = named(spans, "notifications/message", "SERVER")  # the client received it
    assert received["parent_id"] == notified["span_id"]
    assert "jsonrpc.request.id" not in received["attributes"]


@ERAS
async def test_propagation_only_carries_the_callers_trace_and_makes_no_span(era: str) -> None:
    sdk, outer = Sdk(), Sdk()
    frames = FrameLog()
    seen: list[str] = []
    server = shop(sdk, mode="propagation")

    @server.tool()
    async def whose() -> str:
        from opentelemetry import trace

        seen.append(format(trace.get_current_span().get_span_context().trace_id, "032x"))
        return "ok"

    async with connected(sdk, era, server, mode="propagation", observer=frames) as client:
        await client.call_tool("echo", {"text": "no trace: nothing to carry"})
        tracer = outer.tracer_provider.get_tracer("the application")
        with tracer.start_as_current_span("checkout") as span:
            await client.call_tool("whose", {})
    assert sdk.spans() == []
    assert sdk.points() == {}
    [checkout] = outer.spans()
    assert seen == [checkout["trace_id"]]
    calls = [
        f.message["params"]
        for f in frames.frames
        if f.direction is FrameDirection.OUT
        and isinstance(f.message, dict)
        and f.message.get("method") == "tools/call"
    ]
    assert "traceparent" not in calls[0].get("_meta", {})
    assert calls[1]["_meta"]["traceparent"].split("-")[1:3] == [
        checkout["trace_id"],
        checkout["span_id"],
    ]
    del span


@pytest.mark.spec("ME-14")
@ERAS
async def test_off_adds_no_middleware_and_nothing_to_meta(era: str) -> None:
    frames = FrameLog()
    server = Server("plain", telemetry="off")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    assert server.middleware == []
    async with open_memory_client(server, era=era, telemetry="off", observer=frames) as client:
        assert client.middleware == ()
        await client.call_tool("echo", {"text": "hi"})
    assert b"traceparent" not in b"".join(f.text.encode() for f in frames.frames)


async def test_the_rounds_of_one_call_are_linked() -> None:
    sdk = Sdk()
    server = shop(sdk)

    @server.tool()
    async def confirm(ctx: Context) -> str:
        schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
        answer = await ctx.elicit({"mode": "form", "message": "Go?", "requestedSchema": schema})
        return answer.action

    async def yes(request: object) -> Any:
        from trio_mcp import types

        return types.ElicitResult(action="accept", content={"ok": True})

    async with connected(sdk, "modern", server, elicitation=yes) as client:
        await client.call_tool("confirm", {})
    spans = sdk.spans()
    for kind in ("CLIENT", "SERVER"):
        first, second = named(spans, "tools/call confirm", kind)
        assert first["links"] == []
        assert second["links"] == [first["span_id"]]
        assert first["trace_id"] != second["trace_id"]  # two requests, each its own trace


async def test_a_tasks_requests_link_to_the_call_that_made_it(
    autojump_clock: trio.abc.Clock,
) -> None:
    sdk = Sdk()
    server = shop(sdk)

    @server.tool(task_support="optional")
    async def render(seconds: float) -> str:
        await trio.sleep(seconds)
        return "rendered"

    async with connected(sdk, "legacy", server) as client:
        task = await client.call_tool("render", {"seconds": 3}, as_task=True)
        await task.wait()
    spans = sdk.spans()
    for kind in ("CLIENT", "SERVER"):
        [made] = named(spans, "tools/call render", kind)
        polls = [s for s in spans if s["name"].startswith("tasks/") and s["kind"] == kind]
        assert polls
        assert all(poll["links"] == [made["span_id"]] for poll in polls)


@ERAS
async def test_a_handshake_era_session_records_its_duration(era: str) -> None:
    sdk = Sdk()
    server = shop(sdk)
    [server.telemetry] = [m for m in server.middleware if isinstance(m, Telemetry)]
    async with connected(sdk, era, server):
        pass
    points = sdk.points()
    if era == "modern":  # 2026-07-28 has no session
        assert "mcp.server.session.duration" not in points
        return
    assert points["mcp.server.session.duration"] == [({"mcp.protocol.version": "2025-11-25"}, 1)]


@ERAS
async def test_captured_tool_arguments_and_results_only_when_asked(era: str) -> None:
    sdk = Sdk()
    server = Server("shop", telemetry="off")
    server.add_middleware(observed(sdk, "server", capture=True))

    @server.tool()
    async def echo(text: str) -> str:
        return text

    @server.tool()
    async def refuse() -> str:
        raise ToolError("no such order")

    async with open_memory_client(
        server, era=era, telemetry="off", middleware=[observed(sdk, "client", capture=True)]
    ) as client:
        await client.call_tool("echo", {"text": "hi"})
        await client.call_tool("refuse", {})
        await client.list_tools()
    spans = sdk.spans()
    for kind in ("CLIENT", "SERVER"):
        [span] = named(spans, "tools/call echo", kind)
        attributes = span["attributes"]
        assert json.loads(attributes["gen_ai.tool.call.arguments"]) == {"text": "hi"}
        result = json.loads(attributes["gen_ai.tool.call.result"])
        assert result["content"] == [{"type": "text", "text": "hi"}]
        [refused] = named(spans, "tools/call refuse", kind)
        assert "gen_ai.tool.call.arguments" in refused["attributes"]
        assert json.loads(refused["attributes"]["gen_ai.tool.call.result"])["isError"] is True
    # Only tools/call has them, and no metric ever does.
    for span in named(spans, "tools/list", "SERVER"):
        assert not [key for key in span["attributes"] if key.startswith("gen_ai.tool.call")]
    for points in sdk.points().values():
        for attributes, _ in points:
            assert not [key for key in attributes if key.startswith("gen_ai.tool.call")]
