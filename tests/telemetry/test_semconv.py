"""The mapping of a request to the MCP semantic conventions (pinned in
``_semconv.SEMCONV_VERSION``): span names, attributes and metric names, checked
against the conventions' own names."""

from __future__ import annotations

import pytest

from trio_mcp._telemetry import _semconv as sc

#: The names of the pinned conventions (model/mcp/registry.yaml, metrics.yaml
#: of semantic-conventions-genai v0.1.0), written out here so that a change of
#: ours that drifts from them fails.
CONVENTION_ATTRIBUTES = {
    "mcp.method.name",
    "mcp.protocol.version",
    "mcp.session.id",
    "mcp.resource.uri",
    "jsonrpc.request.id",
    "rpc.response.status_code",
    "gen_ai.operation.name",
    "gen_ai.tool.name",
    "gen_ai.prompt.name",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "error.type",
    "network.transport",
    "network.protocol.name",
    "server.address",
    "server.port",
    "client.address",
    "client.port",
}
CONVENTION_METRICS = {
    "mcp.client.operation.duration",
    "mcp.server.operation.duration",
    "mcp.client.session.duration",
    "mcp.server.session.duration",
}


def test_the_pinned_version_and_scope() -> None:
    assert sc.SEMCONV_VERSION == "genai-0.1.0"
    assert sc.SEMCONV_CORE_VERSION == "1.45.0"
    assert sc.SCOPE == "trio_mcp"


def test_attribute_and_metric_names_are_the_conventions() -> None:
    ours = {
        value
        for name, value in vars(sc).items()
        if name.isupper()
        and isinstance(value, str)
        and "." in value
        and "/" not in value
        and not name.startswith("SEMCONV")
    }
    metrics = set(sc.METRICS)
    assert (
        ours - metrics - {sc.CANCEL_EVENT} - {a for a in ours if a.startswith("trio_mcp.")}
        == CONVENTION_ATTRIBUTES
    )
    assert {m for m in metrics if m.startswith("mcp.")} == CONVENTION_METRICS
    # Ours are all under trio_mcp., each documented with a unit.
    own = {m for m in metrics if not m.startswith("mcp.")}
    assert own == {
        "trio_mcp.request.queued.duration",
        "trio_mcp.request.cancellations",
        "trio_mcp.request.outcomes",
        "trio_mcp.request.in_flight",
    }
    for kind, unit, description in sc.METRICS.values():
        assert kind in ("histogram", "counter", "updowncounter")
        assert unit in ("s", "{request}")
        assert description.endswith(".")


@pytest.mark.parametrize(
    ("method", "params", "name"),
    [
        ("tools/call", {"name": "echo", "arguments": {}}, "tools/call echo"),
        ("prompts/get", {"name": "greet"}, "prompts/get greet"),
        ("resources/read", {"uri": "file:///a"}, "resources/read"),  # URI: opt-in only
        ("tools/list", None, "tools/list"),
        ("notifications/progress", {"progressToken": 1, "progress": 1}, "notifications/progress"),
    ],
)
def test_span_names(method: str, params: dict[str, object] | None, name: str) -> None:
    assert sc.span_name(method, params) == name


def test_a_tool_call_in_the_handshake_era() -> None:
    attributes = sc.request_attributes(
        "tools/call",
        {"name": "echo", "arguments": {"text": "secret"}},
        request_id=7,
        protocol_version="2025-11-25",
        session_id="abc",
        network=sc.network_attributes("tcp", protocol="http", peer=("127.0.0.1", 8000)),
    )
    assert attributes == {
        "mcp.method.name": "tools/call",
        "jsonrpc.request.id": "7",
        "mcp.protocol.version": "2025-11-25",
        "mcp.session.id": "abc",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "echo",
        "network.transport": "tcp",
        "network.protocol.name": "http",
        "server.address": "127.0.0.1",
        "server.port": 8000,
    }
    # Arguments are opt-in only: never by default.
    assert "gen_ai.tool.call.arguments" not in attributes


def test_no_session_id_on_2026_07_28() -> None:
    attributes = sc.request_attributes(
        "tools/call",
        {"name": "echo", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}},
        request_id="r1",
        protocol_version=sc.protocol_version_of(
            {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}, None
        ),
        session_id="abc",
    )
    assert attributes["mcp.protocol.version"] == "2026-07-28"
    assert "mcp.session.id" not in attributes


def test_a_prompt_a_resource_and_a_notification() -> None:
    prompt = sc.request_attributes(
        "prompts/get", {"name": "greet"}, request_id=1, protocol_version=None
    )
    assert prompt == {
        "mcp.method.name": "prompts/get",
        "jsonrpc.request.id": "1",
        "gen_ai.prompt.name": "greet",
    }
    updated = sc.request_attributes(
        "notifications/resources/updated",
        {"uri": "note://1"},
        request_id=None,
        protocol_version=None,
    )
    assert updated == {
        "mcp.method.name": "notifications/resources/updated",
        "mcp.resource.uri": "note://1",
    }


def test_errors_and_network() -> None:
    assert sc.error_attributes(-32602) == {
        "error.type": "-32602",
        "rpc.response.status_code": "-32602",
    }
    assert sc.network_attributes("pipe") == {"network.transport": "pipe"}
    assert sc.network_attributes("tcp", peer=("10.0.0.1", 5), role="server") == {
        "network.transport": "tcp",
        "client.address": "10.0.0.1",
        "client.port": 5,
    }


def test_metric_attributes_leave_out_what_has_no_bound() -> None:
    span = sc.request_attributes(
        "resources/read",
        {"uri": "file:///a"},
        request_id=3,
        protocol_version="2025-06-18",
        session_id="s",
        network=sc.network_attributes("tcp", peer=("h", 1)),
    )
    assert sc.metric_attributes(span, "client") == {
        "mcp.method.name": "resources/read",
        "mcp.protocol.version": "2025-06-18",
        "network.transport": "tcp",
        "server.address": "h",
        "server.port": 1,
    }
    assert "server.address" not in sc.metric_attributes(span, "server")
