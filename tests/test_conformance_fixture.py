"""The conformance fixtures expose exactly what the official harness calls.

``examples/conformance_server.py`` is checked in memory, scenario by scenario
of harness 0.1.16 and of the 2025-11-25 and 2026-07-28 requirement sets of
0.2.0-alpha.12 (names, shapes, the round trips; the 2026-07-28 ones as the
harness sends them, raw frames with per-request ``_meta``), so a change that
would break the harness run fails here in a second;
``examples/conformance_client.py`` is checked against small in-memory servers
that play the harness's mocks. ``scripts/conformance`` runs the real harness.
"""

from __future__ import annotations

import base64
import importlib.util
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from helpers import RawPeer

from trio_mcp import Context, Server, serve_session
from trio_mcp import types as t
from trio_mcp.testing import memory_transport_pair, open_memory_client

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
    "test_header_param",
    # server-stateless (2026-07-28)
    "test_missing_capability",
    "test_streaming_elicitation",
    "test_logging_tool",
    "test_trigger_tool_change",
    "test_trigger_prompt_change",
    # input-required-result-* (2026-07-28)
    "test_input_required_result_elicitation",
    "test_input_required_result_sampling",
    "test_input_required_result_list_roots",
    "test_input_required_result_request_state",
    "test_input_required_result_multiple_inputs",
    "test_input_required_result_multi_round",
    "test_input_required_result_tampered_state",
    "test_input_required_result_capabilities",
    # The tasks extension's fixtures (SEP-2663).
    "greet",
    "slow_compute",
    "failing_job",
    "protocol_error_job",
    "confirm_delete",
    "multi_input",
    "test_tool_with_task",
}
PROMPTS = {
    "test_simple_prompt",
    "test_prompt_with_arguments",
    "test_prompt_with_embedded_resource",
    "test_prompt_with_image",
    "test_input_required_result_prompt",
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
        # The listed schema is the one arguments are checked against (SEP-2106's
        # allOf and if/then/else: no phone, so an email is required).
        result = await client.call_tool(
            "json_schema_2020_12_tool",
            {"name": "n", "address": {"city": "c"}, "email": "n@example.org"},
        )
        assert not result.is_error
        refused = await client.call_tool("json_schema_2020_12_tool", {"name": "n"})
        assert refused.is_error


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


# --------------------------------------------- 2026-07-28, as the harness asks

MODERN = "2026-07-28"
V = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
INFO = "io.modelcontextprotocol/clientInfo"
LEVEL = "io.modelcontextprotocol/logLevel"
SUB_ID = "io.modelcontextprotocol/subscriptionId"
#: What the harness's stateless requests declare unless a scenario says otherwise.
HARNESS_CAPS: dict[str, Any] = {"sampling": {}, "elicitation": {}, "roots": {"listChanged": True}}
ACCEPT_ALICE = {"action": "accept", "content": {"name": "Alice"}}
SAMPLED = {
    "role": "assistant",
    "content": {"type": "text", "text": "Paris."},
    "model": "test-model",
    "stopReason": "endTurn",
}
ROOTS = {"roots": [{"uri": "file:///test/root", "name": "Test Root"}]}


def _meta(capabilities: dict[str, Any] | None = None, level: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {
        V: MODERN,
        INFO: {"name": "conformance-test-client", "version": "1.0.0"},
        CAPS: HARNESS_CAPS if capabilities is None else capabilities,
    }
    if level is not None:
        meta[LEVEL] = level
    return meta


@asynccontextmanager
async def _stateless() -> AsyncIterator[RawPeer]:
    """The fixture served to a raw peer that speaks 2026-07-28 (no handshake)."""
    peer_end, server_end = memory_transport_pair()
    peer = RawPeer(peer_end)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.collect)
        session = await nursery.start(serve_session, fixture.build_server(), server_end)
        yield peer
        await session.aclose()
        await peer.wait_eof()


async def _call(
    peer: RawPeer,
    name: str,
    capabilities: dict[str, Any] | None = None,
    level: str | None = None,
    **params: Any,
) -> dict[str, Any]:
    rid = await peer.send_request(
        "tools/call", {"name": name, "arguments": {}, "_meta": _meta(capabilities, level), **params}
    )
    frame: dict[str, Any] = await peer.wait_response(rid)
    return frame


def _texts(result: dict[str, Any]) -> str:
    return " ".join(block["text"] for block in result["content"] if block["type"] == "text")


@pytest.mark.parametrize(
    ("tool", "asked", "answers", "text"),
    [
        (
            "test_input_required_result_elicitation",
            {"user_name": "elicitation/create"},
            {"user_name": ACCEPT_ALICE},
            "Hello, Alice!",
        ),
        (
            "test_input_required_result_sampling",
            {"capital_question": "sampling/createMessage"},
            {"capital_question": SAMPLED},
            "The model said: Paris.",
        ),
        (
            "test_input_required_result_list_roots",
            {"client_roots": "roots/list"},
            {"client_roots": ROOTS},
            "Client roots: file:///test/root",
        ),
        (
            "test_input_required_result_request_state",
            {"confirm": "elicitation/create"},
            {"confirm": {"action": "accept", "content": {"ok": True}}},
            "state-ok: ok=True",
        ),
        (
            "test_input_required_result_multiple_inputs",
            {
                "user_name": "elicitation/create",
                "greeting": "sampling/createMessage",
                "client_roots": "roots/list",
            },
            {"user_name": ACCEPT_ALICE, "greeting": SAMPLED, "client_roots": ROOTS},
            "Paris. Alice; roots: file:///test/root",
        ),
    ],
)
async def test_input_required_tools_ask_with_the_keys_the_scenarios_name(
    tool: str, asked: dict[str, str], answers: dict[str, Any], text: str
) -> None:
    # input-required-result-basic-*, -request-state, -multiple-input-requests,
    # -result-type: round 1 is an InputRequiredResult with these keys and a
    # requestState; the retry with the answers and that state completes.
    async with _stateless() as peer:
        first = (await _call(peer, tool))["result"]
        assert first["resultType"] == "input_required"
        assert {k: v["method"] for k, v in first["inputRequests"].items()} == asked
        assert isinstance(first["requestState"], str)
        final = await _call(peer, tool, inputResponses=answers, requestState=first["requestState"])
        assert final["result"]["resultType"] == "complete"
        assert _texts(final["result"]) == text


async def test_input_required_params_are_what_the_scenarios_describe() -> None:
    async with _stateless() as peer:
        first = (await _call(peer, "test_input_required_result_multiple_inputs"))["result"]
    requests = first["inputRequests"]
    assert requests["user_name"]["params"]["message"] == "What is your name?"
    assert requests["user_name"]["params"]["requestedSchema"] == fixture.NAME_FORM
    sampling = requests["greeting"]["params"]
    assert sampling["maxTokens"] == 50
    assert sampling["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Generate a greeting"}}
    ]
    assert requests["client_roots"] == {"method": "roots/list"}


async def test_multi_round_asks_step1_then_step2_with_a_new_state() -> None:
    tool = "test_input_required_result_multi_round"
    async with _stateless() as peer:
        r1 = (await _call(peer, tool))["result"]
        assert list(r1["inputRequests"]) == ["step1"]
        r2 = (
            await _call(
                peer, tool, inputResponses={"step1": ACCEPT_ALICE}, requestState=r1["requestState"]
            )
        )["result"]
        assert r2["resultType"] == "input_required"
        assert list(r2["inputRequests"]) == ["step2"]
        assert r2["inputRequests"]["step2"]["params"]["requestedSchema"] == fixture.COLOR_FORM
        assert r2["requestState"] != r1["requestState"]
        r3 = (
            await _call(
                peer,
                tool,
                inputResponses={"step2": {"action": "accept", "content": {"color": "blue"}}},
                requestState=r2["requestState"],
            )
        )["result"]
    assert r3["resultType"] == "complete"
    assert _texts(r3) == "Alice likes blue (round 3)"


async def test_tampered_state_is_refused_and_a_stateless_answer_is_not_state_ok() -> None:
    async with _stateless() as peer:
        tool = "test_input_required_result_tampered_state"
        first = (await _call(peer, tool))["result"]
        answers = {"confirm": {"action": "accept", "content": {"ok": True}}}
        tampered = await _call(
            peer, tool, inputResponses=answers, requestState=first["requestState"] + "-TAMPERED"
        )
        assert tampered["error"]["code"] == -32602
        # An answer without a requestState (ignore-extra-params sends one so)
        # completes, but nothing was verified: no "state-ok".
        bare = await _call(peer, "test_input_required_result_request_state", inputResponses=answers)
        assert _texts(bare["result"]) == "no requestState echoed: ok=True"


async def test_missing_and_extra_and_invalid_answers() -> None:
    tool = "test_input_required_result_elicitation"
    async with _stateless() as peer:
        # missing-input-response: a wrong key is asked for again.
        wrong = await _call(
            peer, tool, inputResponses={"wrong_key": {"action": "accept", "content": {}}}
        )
        assert list(wrong["result"]["inputRequests"]) == ["user_name"]
        # ignore-extra-params: extra keys are ignored.
        extra = await _call(
            peer, tool, inputResponses={"user_name": ACCEPT_ALICE, "unknown": {"action": "cancel"}}
        )
        assert _texts(extra["result"]) == "Hello, Alice!"
        # validate-input: an answer that is no ElicitResult is an error.
        invalid = await _call(peer, tool, inputResponses={"user_name": 12345})
        assert invalid["error"]["code"] == -32602


@pytest.mark.parametrize(
    ("capabilities", "asked"),
    [
        ({"sampling": {}}, ["capital_question"]),
        ({"elicitation": {}}, ["user_name"]),
        (HARNESS_CAPS, ["capital_question", "user_name"]),
    ],
)
async def test_capabilities_tool_asks_only_for_what_was_declared(
    capabilities: dict[str, Any], asked: list[str]
) -> None:
    async with _stateless() as peer:
        result = (await _call(peer, "test_input_required_result_capabilities", capabilities))[
            "result"
        ]
    assert sorted(result["inputRequests"]) == asked


async def test_capabilities_tool_completes_when_nothing_can_be_asked() -> None:
    async with _stateless() as peer:
        result = (await _call(peer, "test_input_required_result_capabilities", {}))["result"]
    assert result["resultType"] == "complete"
    assert "nothing to ask" in _texts(result)


async def test_prompt_asks_for_its_context_then_renders() -> None:
    # input-required-result-non-tool-request: prompts/get may ask too.
    name = "test_input_required_result_prompt"
    async with _stateless() as peer:
        rid = await peer.send_request("prompts/get", {"name": name, "_meta": _meta()})
        first = (await peer.wait_response(rid))["result"]
        assert first["resultType"] == "input_required"
        assert list(first["inputRequests"]) == ["user_context"]
        rid = await peer.send_request(
            "prompts/get",
            {
                "name": name,
                "_meta": _meta(),
                "inputResponses": {
                    "user_context": {"action": "accept", "content": {"context": "tests"}}
                },
                "requestState": first["requestState"],
            },
        )
        final = (await peer.wait_response(rid))["result"]
    assert final["messages"][0]["content"]["text"].endswith("in mind: tests")


async def test_missing_capability_is_refused_with_the_capability_named() -> None:
    # server-stateless: a request that declared nothing gets -32021.
    async with _stateless() as peer:
        refused = await _call(peer, "test_missing_capability", {})
        asked = await _call(peer, "test_missing_capability", {"sampling": {}})
    assert refused["error"]["code"] == -32021
    assert refused["error"]["data"]["requiredCapabilities"] == {"sampling": {}}
    assert list(asked["result"]["inputRequests"]) == ["sampling-1"]


async def test_streaming_elicitation_sends_an_input_request_not_a_request() -> None:
    async with _stateless() as peer:
        reply = await _call(peer, "test_streaming_elicitation", {"elicitation": {}})
        assert reply["result"]["resultType"] == "input_required"
        # Nothing but the response went out: no elicitation/create request.
        assert not [f for f in peer.frames if "method" in f]


async def test_logging_tool_logs_only_for_a_request_that_set_a_level() -> None:
    async with _stateless() as peer:
        quiet = await _call(peer, "test_logging_tool")
        assert _texts(quiet["result"]) == "Logging tool executed"
        assert not [f for f in peer.frames if f.get("method") == "notifications/message"]
        await _call(peer, "test_logging_tool", level="info")
        logged = [f["params"] for f in peer.frames if f.get("method") == "notifications/message"]
    # The debug line is below the level asked for.
    assert [(m["level"], m["data"]) for m in logged] == [
        ("info", "Logging tool started"),
        ("info", "Logging tool completed"),
    ]


async def test_triggers_reach_the_listen_streams_that_asked() -> None:
    async with _stateless() as peer:
        tools = await peer.send_request(
            "subscriptions/listen", {"notifications": {"toolsListChanged": True}, "_meta": _meta()}
        )
        prompts = await peer.send_request(
            "subscriptions/listen",
            {"notifications": {"promptsListChanged": True}, "_meta": _meta()},
        )
        # Both streams are acknowledged before anything changes (in either
        # order: the two handlers run concurrently).
        await trio.testing.wait_all_tasks_blocked()
        acknowledged = [
            f["params"]["_meta"][SUB_ID]
            for f in peer.frames
            if f.get("method") == "notifications/subscriptions/acknowledged"
        ]
        assert sorted(acknowledged) == sorted([tools, prompts])
        added = await _call(peer, "test_trigger_tool_change")
        assert _texts(added["result"]) == "test_dynamic_tool added"
        await peer.wait_method("notifications/tools/list_changed")
        await _call(peer, "test_trigger_prompt_change")
        await peer.wait_method("notifications/prompts/list_changed")
        rid = await peer.send_request("tools/list", {"_meta": _meta()})
        listed = {tool["name"] for tool in (await peer.wait_response(rid))["result"]["tools"]}
        assert listed == TOOLS | {"test_dynamic_tool"}
        removed = await _call(peer, "test_trigger_tool_change")
        assert _texts(removed["result"]) == "test_dynamic_tool removed"
        # Every notice queued by now has been written once all tasks wait.
        await trio.testing.wait_all_tasks_blocked()
        changes = [
            (f["method"], f["params"]["_meta"][SUB_ID])
            for f in peer.frames
            if f.get("method", "").endswith("/list_changed")
        ]
    # Each stream heard only its own kind (the notification filter).
    assert changes == [
        ("notifications/tools/list_changed", tools),
        ("notifications/prompts/list_changed", prompts),
        ("notifications/tools/list_changed", tools),
    ]


async def test_cache_hints_and_resource_not_found() -> None:
    async with _stateless() as peer:
        hints = {}
        for method in fixture.CACHE_HINTS:
            params: dict[str, Any] = {"_meta": _meta()}
            if method == "resources/read":
                params["uri"] = "test://static-text"
            result = (await peer.wait_response(await peer.send_request(method, params)))["result"]
            hints[method] = (result["ttlMs"], result["cacheScope"])
        missing = "test://nonexistent-resource-for-conformance-testing"
        rid = await peer.send_request("resources/read", {"uri": missing, "_meta": _meta()})
        error = (await peer.wait_response(rid))["error"]
    assert hints == fixture.CACHE_HINTS
    # sep-2164-resource-not-found: -32602 naming the URI in 2026-07-28.
    assert (error["code"], error["data"]) == (-32602, {"uri": missing})


async def test_header_param_is_annotated_for_the_custom_header_scenario() -> None:
    async with _stateless() as peer:
        rid = await peer.send_request("tools/list", {"_meta": _meta()})
        tools = {x["name"]: x for x in (await peer.wait_response(rid))["result"]["tools"]}
        reply = await _call(peer, "test_header_param", arguments={"region": "us-west1"})
    region = tools["test_header_param"]["inputSchema"]["properties"]["region"]
    assert region == {
        "type": "string",
        "description": region["description"],
        "x-mcp-header": "Region",
    }
    assert _texts(reply["result"]) == "Region: us-west1"


# ---------------------------------------------- the same tools through a Client


async def _elicited(request: Any) -> t.ElicitResult:
    properties = request.schema["properties"]
    content: dict[str, t.ElicitValue] = {}
    for name, value in (("name", "Alice"), ("color", "blue"), ("ok", True), ("context", "c")):
        if name in properties:
            content[name] = value
    return t.ElicitResult(action="accept", content=content)


async def _echo(params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
    (message,) = params.messages
    assert isinstance(message.content, t.TextContent)
    return t.CreateMessageResult(
        role="assistant", content=t.TextContent(text=f"echo: {message.content.text}"), model="m"
    )


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_round_trips_through_a_client_in_both_eras(era: str) -> None:
    # The modern client loops through the input-required rounds; the handshake
    # era sends each input as a request. Same tools, same answers.
    async with open_memory_client(
        fixture.build_server(),
        era=era,
        sampling=_echo,
        elicitation=_elicited,
        roots=[t.Root(uri="file:///test/root", name="Test Root")],
    ) as client:
        assert client.era == era
        multiple = await client.call_tool("test_input_required_result_multiple_inputs", {})
        rounds = await client.call_tool("test_input_required_result_multi_round", {})
        prompt = await client.get_prompt("test_input_required_result_prompt")
    assert multiple.content == [
        t.TextContent(text="echo: Generate a greeting Alice; roots: file:///test/root")
    ]
    last_round = 3 if era == "modern" else 1
    assert rounds.content == [t.TextContent(text=f"Alice likes blue (round {last_round})")]
    assert isinstance(prompt.messages[0].content, t.TextContent)
    assert prompt.messages[0].content.text.endswith("in mind: c")


async def test_a_handshake_session_hears_the_triggers() -> None:
    async with open_memory_client(fixture.build_server(), era="legacy") as client:
        await client.call_tool("test_trigger_prompt_change", {})
        await client.wait_list_changed("prompts")
        assert "test_dynamic_prompt" in client.prompts


# ------------------------------------------------------------------ client


def _mock_server() -> tuple[Server, list[Any]]:
    """Plays the harness's client-mode mocks; returns it and the calls it saw."""
    server = Server("mock", "1.0")
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

    # Listed with the SEP-1613 schema, as the harness's mock does.
    @server.tool(name="json_schema_2020_12_tool", input_schema=fixture.SCHEMA_2020_12)
    async def schema_tool(
        name: str | None = None,
        address: dict[str, Any] | None = None,
        contactMethod: str | None = None,
        phone: str | None = None,
        email: str | None = None,
    ) -> str:
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


#: The OAuth extension scenarios of harness 0.2 (unscored), held to.
OAUTH_EXTENSIONS = {
    "auth/client-credentials-jwt",
    "auth/client-credentials-basic",
    "auth/enterprise-managed-authorization",
    "auth/dpop",
    "auth/dpop-nonce",
    "auth/wif-jwt-bearer",
}


def test_expected_failures_list_nothing_and_hold_the_extensions() -> None:
    runner = _load_script()
    assert [leg.name for leg in runner.LEGS] == [
        "0.1.16",
        "0.2.0-alpha.12/2025-11-25",
        "0.2.0-alpha.12/2026-07-28",
    ]
    for leg in runner.LEGS:
        assert leg.expected_path.is_file(), leg.expected_path
        expected = runner.load_expected(leg.expected_path)
        assert expected["server"] == set()
        assert expected["client"] == set()
        if leg.requirements is not None:
            assert expected["held_client"] == OAUTH_EXTENSIONS
    # The tasks extension's scenarios are unscored by the harness, and held to.
    held = runner.load_expected(legs_by_name(runner)["0.2.0-alpha.12/2026-07-28"].expected_path)
    assert len(held["held_server"]) == 10
    assert all(name.startswith("tasks-") for name in held["held_server"])


#: The shape of ``conformance list --requirements REV`` (harness 0.2.0-alpha.12).
LISTING = """Required for 2026-07-28 (5 scenarios, frozen; run at the 2026-07-28 wire):

Server scenarios (test against a server):
  - server-stateless
  - caching

Client scenarios (test against a client):
  - tools_call
  - auth/metadata-default

Run and reported, but never scored:
  extension (2):
    - auth/dpop [client]
    - tasks-lifecycle [server]
  pending (1):
    - json-schema-2020-12 [server]

"""


def test_a_requirement_set_listing_gives_scored_then_unscored_scenarios() -> None:
    runner = _load_script()
    plan = runner.parse_requirements(LISTING)
    assert plan.server == ["server-stateless", "caching", "tasks-lifecycle", "json-schema-2020-12"]
    assert plan.client == ["tools_call", "auth/metadata-default", "auth/dpop"]
    assert plan.scored("server") == ["server-stateless", "caching"]
    assert plan.unscored == {
        ("client", "auth/dpop"): "extension",
        ("server", "tasks-lifecycle"): "extension",
        ("server", "json-schema-2020-12"): "pending",
    }
    with pytest.raises(runner.SetupError):
        runner.parse_requirements("Server scenarios (test against a server):\n")


def test_a_requirement_leg_runs_each_scenario_at_its_revision() -> None:
    runner = _load_script()
    legs = {leg.name: leg for leg in runner.LEGS}
    assert legs["0.1.16"].scenario_args() == []
    # As the harness's own --requirements run: the mock speaks the revision.
    assert legs["0.2.0-alpha.12/2026-07-28"].scenario_args() == [
        "--spec-version",
        "2026-07-28",
        "--force",
    ]
    assert legs["0.2.0-alpha.12/2026-07-28"].expected_path.name == (
        "expected-failures-0.2.0-alpha.12-2026-07-28.yml"
    )


def test_unscored_scenarios_never_fail_the_run_and_stale_entries_do() -> None:
    runner = _load_script()
    unscored = runner.Outcome("server", "tasks-lifecycle", problems=["FAILURE x"])
    unscored.unscored = "extension"
    assert (unscored.verdict, unscored.ok) == ("fail", True)
    failed = runner.Outcome("client", "auth/metadata-default", problems=["FAILURE y"])
    assert (failed.verdict, failed.ok) == ("FAIL", False)
    failed.expected_failure = True
    assert (failed.verdict, failed.ok) == ("xfail", True)
    stale = runner.Outcome("client", "auth/metadata-default", expected_failure=True)
    assert (stale.verdict, stale.ok) == ("STALE", False)
    # An entry must name a scenario the leg scores: an unscored one never fails,
    # so listing it (or a typo) is refused.
    plan = runner.parse_requirements(LISTING)
    path = Path("expected.yml")
    runner.check_expected(path, files(client={"auth/metadata-default"}), plan)
    for entry in ("auth/dpop", "auth/metadata-defualt"):
        with pytest.raises(runner.SetupError, match=entry):
            runner.check_expected(path, files(client={entry}), plan)


@pytest.mark.spec("TK-19")
def test_a_held_unscored_scenario_must_pass_and_must_be_unscored() -> None:
    runner = _load_script()
    held = runner.Outcome("server", "tasks-lifecycle", problems=["FAILURE x"])
    held.unscored = "extension"
    held.held = True
    assert (held.verdict, held.ok) == ("FAIL", False)
    held.problems = []
    assert (held.verdict, held.ok) == ("PASS", True)
    plan = runner.parse_requirements(LISTING)
    path = Path("expected.yml")
    runner.check_expected(path, files(held_server={"tasks-lifecycle"}), plan)
    # Only an unscored scenario can be held: a scored one already must pass.
    for entry in ("caching", "tasks-lifecylce"):
        with pytest.raises(runner.SetupError, match=entry):
            runner.check_expected(path, files(held_server={entry}), plan)


def test_a_held_client_scenario_is_checked_as_a_held_server_one() -> None:
    runner = _load_script()
    held = runner.Outcome("client", "auth/dpop", problems=["FAILURE sep-1932-client-rs-nonce"])
    held.unscored = "extension"
    held.held = True
    assert (held.verdict, held.ok) == ("FAIL", False)
    plan = runner.parse_requirements(LISTING)
    path = Path("expected.yml")
    runner.check_expected(path, files(held_client={"auth/dpop"}), plan)
    for entry in ("auth/metadata-default", "auth/dpopp", "tasks-lifecycle"):
        with pytest.raises(runner.SetupError, match=entry):
            runner.check_expected(path, files(held_client={entry}), plan)


def files(**lists: set[str]) -> dict[str, set[str]]:
    """An expected-failures file's lists: *lists*, the others empty."""
    empty: dict[str, set[str]] = {
        "server": set(),
        "client": set(),
        "held_server": set(),
        "held_client": set(),
    }
    return {**empty, **lists}


def legs_by_name(runner: Any) -> dict[str, Any]:
    return {leg.name: leg for leg in runner.LEGS}


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
