"""The conformance fixtures expose exactly what the official harness calls.

``examples/conformance_server.py`` is checked in memory, scenario by scenario
of harness 0.1.16 (names, shapes, the round trips), so a change that would
break the harness run fails here in a second; ``examples/conformance_client.py``
is checked against small in-memory servers that play the harness's mocks.
``scripts/conformance`` runs the real harness.
"""

from __future__ import annotations

import base64
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from trio_mcp import Context, Server
from trio_mcp import types as t
from trio_mcp.testing import open_memory_client

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str) -> Any:
    module_name = f"examples_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, ROOT / "examples" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


fixture = _load("conformance_server")
conformance_client = _load("conformance_client")

TOOLS = {
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_tool_with_logging",
    "test_tool_with_progress",
    "test_error_handling",
    "test_reconnection",
    "test_sampling",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "json_schema_2020_12_tool",
}
PROMPTS = {
    "test_simple_prompt",
    "test_prompt_with_arguments",
    "test_prompt_with_embedded_resource",
    "test_prompt_with_image",
}


async def _sample(params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
    (message,) = params.messages
    assert isinstance(message.content, t.TextContent)
    assert params.max_tokens == 100
    return t.CreateMessageResult(
        role="assistant", content=t.TextContent(text=f"echo: {message.content.text}"), model="m"
    )


async def _accept_empty(request: Any) -> t.ElicitResult:
    content: dict[str, t.ElicitValue] = {}
    if "response" in request.schema["properties"]:
        content["response"] = "yes"
    return t.ElicitResult(action="accept", content=content)


async def test_lists_every_tool_prompt_and_resource_with_descriptions() -> None:
    async with open_memory_client(fixture.build_server()) as client:
        caps = client.server_capabilities
        assert caps.logging is not None
        assert caps.completions is not None
        assert caps.resources is not None
        assert caps.resources.subscribe
        tools = (await client.list_tools()).tools
        assert {tool.name for tool in tools} == TOOLS
        # tools-list: every tool has a description and an object input schema.
        assert all(tool.description and tool.input_schema["type"] == "object" for tool in tools)
        prompts = client.prompts  # fetched by the client's discovery
        assert set(prompts) == PROMPTS
        assert all(p.description for p in prompts.values())
        assert set(client.resources) == {
            "test://static-text",
            "test://static-binary",
            "test://watched-resource",
        }
        assert all(r.name for r in client.resources.values())
        templates = list(client.resource_templates.values())
        assert [x.uri_template for x in templates] == ["test://template/{id}/data"]


async def test_json_schema_2020_12_tool_is_listed_verbatim() -> None:
    async with open_memory_client(fixture.build_server()) as client:
        tool = {x.name: x for x in (await client.list_tools()).tools}["json_schema_2020_12_tool"]
        assert tool.input_schema == fixture.SCHEMA_2020_12
        assert tool.input_schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert tool.input_schema["$defs"] == fixture.SCHEMA_2020_12["$defs"]
        result = await client.call_tool(
            "json_schema_2020_12_tool", {"name": "n", "address": {"city": "c"}}
        )
        assert not result.is_error


async def test_content_tools_return_the_shapes_the_harness_checks() -> None:
    async with open_memory_client(fixture.build_server()) as client:
        # tools-call-simple-text calls with no arguments key at all.
        simple = await client.call_tool("test_simple_text")
        assert isinstance(simple.content[0], t.TextContent)
        assert simple.content[0].text
        (image,) = (await client.call_tool("test_image_content", {})).content
        assert isinstance(image, t.ImageContent)
        assert image.mime_type == "image/png"
        assert base64.b64decode(image.data).startswith(b"\x89PNG")
        (audio,) = (await client.call_tool("test_audio_content", {})).content
        assert isinstance(audio, t.AudioContent)
        assert audio.mime_type == "audio/wav"
        assert base64.b64decode(audio.data).startswith(b"RIFF")
        (embedded,) = (await client.call_tool("test_embedded_resource", {})).content
        assert isinstance(embedded, t.EmbeddedResource)
        assert isinstance(embedded.resource, t.TextResourceContents)
        assert embedded.resource.uri == "test://embedded-resource"
        assert embedded.resource.mime_type == "text/plain"
        assert embedded.resource.text
        mixed = (await client.call_tool("test_multiple_content_types", {})).content
        assert [type(c) for c in mixed] == [t.TextContent, t.ImageContent, t.EmbeddedResource]
        error = await client.call_tool("test_error_handling", {})
        assert error.is_error
        assert isinstance(error.content[0], t.TextContent)
        assert error.content[0].text == "This tool intentionally returns an error for testing"


async def test_logging_tool_sends_three_messages_during_the_call(
    autojump_clock: trio.testing.MockClock,
) -> None:
    messages: list[Any] = []
    async with open_memory_client(fixture.build_server(), log_handler=messages.append) as client:
        await client.set_logging_level("debug")
        result = await client.call_tool("test_tool_with_logging", {})
        assert not result.is_error
    assert [m.data for m in messages] == [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ]
    assert {m.level for m in messages} == {t.LoggingLevel("info")}


async def test_progress_tool_echoes_the_request_token(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[Any] = []
    async with open_memory_client(fixture.build_server()) as client:
        result = await client.call_tool("test_tool_with_progress", {}, on_progress=seen.append)
    assert [(p.progress, p.total) for p in seen] == [(0, 100), (50, 100), (100, 100)]
    assert isinstance(result.content[0], t.TextContent)
    assert result.content[0].text.startswith("progress token: ")


async def test_sampling_and_elicitation_round_trips() -> None:
    async with open_memory_client(
        fixture.build_server(),
        sampling=_sample,
        elicitation=_accept_empty,
        apply_elicitation_defaults=True,
    ) as client:
        sampled = await client.call_tool("test_sampling", {"prompt": "Test prompt"})
        assert sampled.content == [t.TextContent(text="LLM response: echo: Test prompt")]
        elicited = await client.call_tool("test_elicitation", {"message": "Please"})
        assert elicited.content == [
            t.TextContent(text='User response: action=accept, content={"response":"yes"}')
        ]
        defaults = await client.call_tool("test_elicitation_sep1034_defaults", {})
        assert isinstance(defaults.content[0], t.TextContent)
        assert '"name":"John Doe","age":30,"score":95.5' in defaults.content[0].text
        # The five enum shapes of SEP-1330 are accepted by the client's schema check.
        enums = await client.call_tool("test_elicitation_sep1330_enums", {})
        assert not enums.is_error
        assert enums.content == [
            t.TextContent(text="Elicitation completed: action=accept, content={}")
        ]


async def test_resources_prompts_and_completion() -> None:
    # resources/subscribe is of the handshake era, which the harness speaks.
    async with open_memory_client(fixture.build_server(), era="legacy") as client:
        (text,) = (await client.read_resource("test://static-text")).contents
        assert isinstance(text, t.TextResourceContents)
        assert text.mime_type == "text/plain"
        (blob,) = (await client.read_resource("test://static-binary")).contents
        assert isinstance(blob, t.BlobResourceContents)
        assert blob.mime_type == "image/png"
        (templated,) = (await client.read_resource("test://template/123/data")).contents
        assert isinstance(templated, t.TextResourceContents)
        assert templated.uri == "test://template/123/data"
        assert '"id":"123"' in templated.text
        await client.subscribe("test://watched-resource")
        await client.unsubscribe("test://watched-resource")
        args = await client.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
        assert isinstance(args.messages[0].content, t.TextContent)
        assert "arg1='a'" in args.messages[0].content.text
        embedded = await client.get_prompt(
            "test_prompt_with_embedded_resource", {"resourceUri": "test://example"}
        )
        content = embedded.messages[0].content
        assert isinstance(content, t.EmbeddedResource)
        assert content.resource.uri == "test://example"
        image = await client.get_prompt("test_prompt_with_image")
        assert isinstance(image.messages[0].content, t.ImageContent)
        completion = await client.complete(
            t.PromptReference(name="test_prompt_with_arguments"), "arg1", "test"
        )
        assert completion.completion.values == ["test", "testing", "tested"]


# ------------------------------------------------------------------ client


def _mock_server() -> tuple[Server, list[Any]]:
    """Plays the harness's client-mode mocks; returns it and the calls it saw."""
    server: Server = fixture.ConformanceServer("mock", "1.0")
    calls: list[Any] = []

    @server.tool()
    async def add_numbers(a: float, b: float) -> str:
        """Add two numbers (tools_call)."""
        calls.append(("add_numbers", (a, b)))
        return str(a + b)

    @server.tool()
    async def test_client_elicitation_defaults(ctx: Context) -> str:
        """Elicit a form whose fields all have defaults (sep1034-client-defaults)."""
        result = await ctx.elicit(
            t.ElicitRequestFormParams(message="defaults", requested_schema=fixture.DEFAULTS_SCHEMA)
        )
        calls.append(("elicited", result.content))
        return "ok"

    # ConformanceServer lists this one with the SEP-1613 schema.
    @server.tool(name="json_schema_2020_12_tool")
    async def schema_tool() -> str:
        """The SEP-1613 focal tool."""
        return "unused"

    @server.tool()
    async def json_schema_echo(schema: dict[str, Any]) -> str:
        """Echo a schema back (json-schema-2020-12-preservation)."""
        calls.append(("echo", schema))
        return "echoed"

    return server, calls


DEFAULTS = {"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": True}


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        ("tools_call", ("add_numbers", (5, 3))),
        ("elicitation-sep1034-client-defaults", ("elicited", DEFAULTS)),
        ("json-schema-2020-12-preservation", ("echo", fixture.SCHEMA_2020_12)),
    ],
)
async def test_client_does_what_each_scenario_expects(scenario: str, expected: Any) -> None:
    server, calls = _mock_server()
    async with open_memory_client(
        server,
        name="trio-mcp-conformance-client",
        elicitation=conformance_client.accept_with_defaults,
        apply_elicitation_defaults=True,
    ) as client:
        await conformance_client.run_scenario(client, scenario)
    assert calls == [expected]


def test_client_without_a_url_prints_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert conformance_client.cli([]) == 2
    assert "MCP_CONFORMANCE_SCENARIO" in capsys.readouterr().out


def test_expected_failures_list_only_oauth_client_scenarios() -> None:
    runner = _load_script()
    for version in runner.HARNESSES:
        expected = runner.load_expected(ROOT / "conformance" / f"expected-failures-{version}.yml")
        assert expected["server"] == set()
        assert expected["client"]
        assert all(s.startswith("auth/") for s in expected["client"])


def _load_script() -> Any:
    name = "scripts_conformance"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / "_conformance.py")
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]
