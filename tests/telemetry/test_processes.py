"""One trace across processes: our client and our server each in a process
with the OpenTelemetry SDK configured globally and no other change (telemetry
is on by default), over stdio (a real subprocess) and Streamable HTTP, in both
eras; and a tool of ours that calls a second server, three processes in one
trace. Each process reads its spans with the SDK's in-memory exporter and
hands them over as JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from otel_sdk import Sdk, read_spans
from test_spans import observed

from trio_mcp import Server, http_app, serve_http

HERE = Path(__file__).resolve().parent
CLIENT = str(HERE / "traced_client.py")
SERVER = str(HERE / "traced_server.py")
ERAS = pytest.mark.parametrize("era", ["legacy", "modern"])


async def run_client(*args: str) -> dict[str, Any]:
    with trio.fail_after(60):
        done = await trio.run_process(
            [sys.executable, CLIENT, *args],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def one(spans: list[dict[str, Any]], name: str, kind: str) -> dict[str, Any]:
    [span] = [s for s in spans if s["name"] == name and s["kind"] == kind]
    return span


@ERAS
async def test_over_stdio_the_server_span_is_a_child_of_the_client_span(
    era: str, tmp_path: Path
) -> None:
    spans_file = tmp_path / "server.jsonl"
    answer = await run_client(era, "stdio", SERVER, str(spans_file), "echo")
    assert answer["result"] == "hi"
    sent = one(answer["spans"], "tools/call echo", "CLIENT")
    served = one(read_spans(spans_file), "tools/call echo", "SERVER")
    assert served["trace_id"] == sent["trace_id"]
    assert served["parent_id"] == sent["span_id"]
    for span in (sent, served):
        assert span["attributes"]["network.transport"] == "pipe"
        assert span["attributes"]["gen_ai.tool.name"] == "echo"
        assert "mcp.session.id" not in span["attributes"]
    # The server process recorded the call's duration, by the conventions.
    points = json.loads(spans_file.with_suffix(".metrics").read_text())
    calls = [
        a
        for a, _ in points["mcp.server.operation.duration"]
        if a["mcp.method.name"] == "tools/call"
    ]
    assert calls == [
        {
            "mcp.method.name": "tools/call",
            "mcp.protocol.version": {"legacy": "2025-11-25", "modern": "2026-07-28"}[era],
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "echo",
            "network.transport": "pipe",
        }
    ]
    assert (
        next(
            a
            for a, _ in answer["points"]["mcp.client.operation.duration"]
            if a["mcp.method.name"] == "tools/call"
        )["network.transport"]
        == "pipe"
    )
    # Each side timed the session, in the handshake era (2026-07-28 has none).
    for side, recorded in (("client", answer["points"]), ("server", points)):
        durations = recorded.get(f"mcp.{side}.session.duration", [])
        if era == "modern":
            assert durations == []
        else:
            assert durations == [
                [{"mcp.protocol.version": "2025-11-25", "network.transport": "pipe"}, 1]
            ]  # as JSON


@ERAS
async def test_over_http_the_server_span_is_a_child_of_the_client_span(era: str) -> None:
    sdk = Sdk()
    server = Server("traced-http", telemetry="off")
    server.add_middleware(observed(sdk, "server"))

    @server.tool()
    async def echo(text: str) -> str:
        return text

    async with trio.open_nursery() as nursery:
        base = await nursery.start(
            lambda task_status: serve_http(http_app(server), task_status=task_status)
        )
        answer = await run_client(era, "http", base + "/mcp", "-", "echo")
        nursery.cancel_scope.cancel()
    sent = one(answer["spans"], "tools/call echo", "CLIENT")
    served = one(sdk.spans(), "tools/call echo", "SERVER")
    assert served["trace_id"] == sent["trace_id"]
    assert served["parent_id"] == sent["span_id"]
    port = int(base.rsplit(":", 1)[1])
    assert {
        k: v for k, v in sent["attributes"].items() if k.startswith(("network.", "server."))
    } == {
        "network.transport": "tcp",
        "network.protocol.name": "http",
        "server.address": "127.0.0.1",
        "server.port": port,
    }
    assert served["attributes"]["network.transport"] == "tcp"
    # A handshake-era HTTP session has an id; a 2026-07-28 request never says one.
    assert ("mcp.session.id" in served["attributes"]) is (era == "legacy")


async def test_a_tool_that_calls_another_server_one_trace_across_three_processes(
    tmp_path: Path,
) -> None:
    spans_file = tmp_path / "first.jsonl"
    answer = await run_client("modern", "stdio", SERVER, str(spans_file), "relay")
    assert answer["result"] == "relayed: hi"
    first = read_spans(spans_file)
    second = read_spans(Path(str(spans_file) + ".2"))
    sent = one(answer["spans"], "tools/call relay", "CLIENT")
    relayed = one(first, "tools/call relay", "SERVER")
    forwarded = one(first, "tools/call echo", "CLIENT")
    echoed = one(second, "tools/call echo", "SERVER")
    assert {s["trace_id"] for s in (sent, relayed, forwarded, echoed)} == {sent["trace_id"]}
    assert relayed["parent_id"] == sent["span_id"]
    assert forwarded["parent_id"] == relayed["span_id"]
    assert echoed["parent_id"] == forwarded["span_id"]
