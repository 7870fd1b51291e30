"""Tools: schemas from signatures, validation, results, errors, sync tools,
list-changed notifications; all through the real session engine in memory."""

from __future__ import annotations

import enum
import threading
from typing import Any

import attrs
import jsonschema  # type: ignore[import-untyped]  # no stubs installed
import orjson
import pytest
import trio
import trio.testing
from helpers import settle
from server_helpers import error_code, everything, everything_module, open_raw

from trio_mcp import Context, RPCError, Server, ToolError
from trio_mcp import types as t
from trio_mcp.protocol import Direction, RequestState
from trio_mcp.testing import open_memory_client


@pytest.mark.spec("TL-01")
async def test_tools_capability_follows_the_registry() -> None:
    assert everything().capabilities()["tools"] == {"listChanged": True}
    empty = Server("empty")
    assert "tools" not in empty.capabilities()
    assert Server("x", features=("tools",), list_changed=False).capabilities()["tools"] == {}
    # Not declared, so refused on the wire (LC-11).
    async with open_raw(empty) as (peer, _):
        assert error_code(await peer.request("tools/list")) == -32601


@pytest.mark.spec("TL-02")
async def test_list_changed_goes_to_live_sessions_on_add_and_remove() -> None:
    server = everything()
    async with open_raw(server) as (peer, _):

        async def extra() -> str:
            return "x"

        server.add_tool(extra)
        server.add_tool(extra, name="extra2")  # coalesced with the first change
        note = await peer.wait_method("notifications/tools/list_changed")
        assert note == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        await settle()
        assert len([f for f in peer.unread() if f.get("method", "").endswith("list_changed")]) == 1
        server.remove_tool("extra")
        await settle()
        assert [f["method"] for f in peer.unread()] == ["notifications/tools/list_changed"]
        names = [tool["name"] for tool in (await peer.request("tools/list"))["result"]["tools"]]
        assert "extra2" in names
        assert "extra" not in names


async def test_no_list_changed_when_disabled() -> None:
    server = Server("quiet", list_changed=False, features=("tools",))
    async with open_raw(server) as (peer, _):
        server.add_tool(_noop)
        await settle()
        assert peer.unread() == []


async def _noop() -> str:
    return ""


@pytest.mark.spec("TL-06")
@pytest.mark.spec("JS-01")
@pytest.mark.spec("JS-04")
async def test_input_schema_comes_from_the_signature() -> None:
    async with open_memory_client(everything()) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    book = tools["book"].input_schema
    assert book == {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "seats": {"type": "integer"},
            "seat_class": {"enum": ["economy", "business"], "default": "economy"},
            "window": {"type": "boolean", "default": False},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        },
        "additionalProperties": False,
        "required": ["name", "seats"],
    }
    # Docstring Args: become descriptions; the Context parameter is not in the schema.
    echo_schema: Any = tools["echo"].input_schema
    assert echo_schema["properties"]["text"]["description"] == "what to echo."
    assert tools["echo"].description == "Echo the text back."
    slow_schema: Any = tools["slow"].input_schema
    assert "ctx" not in slow_schema["properties"]
    for tool in tools.values():
        assert "$schema" not in tool.input_schema  # default dialect: 2020-12
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        assert tool.input_schema["type"] == "object"


def test_unsupported_parameter_types_are_refused_at_registration() -> None:
    server = Server("x")

    async def bad(data: complex) -> str:
        return ""

    with pytest.raises(TypeError, match="parameter 'data'"):
        server.add_tool(bad)


@pytest.mark.spec("TL-11")
def test_tool_names_follow_the_naming_rule() -> None:
    server = Server("x")
    for name in ("has space", "", "x" * 129, "comma,name"):
        with pytest.raises(ValueError, match="invalid tool name"):
            server.add_tool(_noop, name=name)
    server.add_tool(_noop, name="ok-name_1.2")


@pytest.mark.spec("TL-07")
@pytest.mark.spec("TL-08")
@pytest.mark.spec("TL-09")
async def test_structured_output_with_schema_and_text() -> None:
    async with open_memory_client(everything()) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        weather = await client.call_tool("weather", {"city": "Oslo", "unit": "fahrenheit"})
        added = await client.call_tool("add", {"a": 2, "b": 3})
        stats = await client.call_tool("stats", {"values": [1, 2]})
    assert weather.structured_content == {
        "city": "Oslo",
        "temperature": 57.2,
        "unit": "fahrenheit",
        "conditions": ["cloudy", "mild"],
    }
    # TL-09: the same JSON as text; TL-07: it conforms to the outputSchema.
    text = weather.content[0]
    assert isinstance(text, t.TextContent)
    assert orjson.loads(text.text) == weather.structured_content
    schema = tools["weather"].output_schema
    assert schema is not None
    jsonschema.Draft202012Validator(schema).validate(weather.structured_content)
    # A non-object value is wrapped, because structuredContent is an object (TL-08).
    assert added.structured_content == {"result": 5}
    assert tools["add"].output_schema == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    assert stats.structured_content == {"count": 2, "mean": 1.5}
    assert tools["echo"].output_schema is None  # str: content only


async def test_no_structured_output_before_2025_06_18() -> None:
    async with open_memory_client(everything(), protocol_version="2025-03-26") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        added = await client.call_tool("add", {"a": 2, "b": 3})
    assert tools["add"].output_schema is None
    assert tools["add"].title is None
    assert added.structured_content is None
    assert added.content == [t.TextContent(text="5")]


async def test_a_tool_breaking_its_own_output_schema_is_a_tool_error() -> None:
    server = Server("x")

    @server.tool()
    async def liar() -> int:
        return "not an int"  # type: ignore[return-value]

    async with open_memory_client(server) as client:
        result = await client.call_tool("liar")
    assert result.is_error
    assert result.content == [t.TextContent(text="Tool liar returned an invalid result")]


@pytest.mark.spec("TL-14")
@pytest.mark.spec("TL-20")
async def test_invalid_arguments_are_a_tool_error_naming_the_argument() -> None:
    async with open_memory_client(everything()) as client:
        wrong_type = await client.call_tool("add", {"a": "x", "b": 2})
        missing = await client.call_tool("book", {"name": "Ann"})
        unknown = await client.call_tool("echo", {"text": "hi", "loud": True})
        bad_enum = await client.call_tool("weather", {"city": "Oslo", "unit": "kelvin"})
        still_fine = await client.call_tool("echo", {"text": "ok"})

    def text(result: t.CallToolResult) -> str:
        assert result.is_error
        block = result.content[0]
        assert isinstance(block, t.TextContent)
        return block.text

    assert text(wrong_type) == (
        "Invalid arguments for tool add: argument 'a': 'x' is not of type 'integer'"
    )
    assert text(missing) == (
        "Invalid arguments for tool book: argument 'seats': required argument is missing"
    )
    assert text(unknown) == "Invalid arguments for tool echo: argument 'loud': unknown argument"
    assert "argument 'unit'" in text(bad_enum)
    assert "kelvin" in text(bad_enum)
    assert still_fine.content == [t.TextContent(text="ok")]


async def test_arguments_are_structured_into_the_annotated_types() -> None:
    seen: list[Any] = []
    server = Server("x")

    @server.tool()
    async def typed(w: Weather, unit: Unit, pair: tuple[int, str], f: float) -> str:
        seen.extend([w, unit, pair, f])
        return "ok"

    weather = {"city": "A", "temperature": 1, "unit": "celsius", "conditions": []}
    async with open_memory_client(server) as client:
        result = await client.call_tool(
            "typed", {"w": weather, "unit": "fahrenheit", "pair": [1, "b"], "f": 2}
        )
    assert result.content == [t.TextContent(text="ok")]
    assert seen == [Weather("A", 1.0, Unit.CELSIUS, []), Unit.FAHRENHEIT, (1, "b"), 2.0]
    assert type(seen[3]) is float


class Unit(enum.Enum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


@attrs.frozen
class Weather:
    city: str
    temperature: float
    unit: Unit
    conditions: list[str]


@pytest.mark.spec("TL-13")
async def test_unknown_tool_is_a_protocol_error() -> None:
    async with open_memory_client(everything()) as client:
        with pytest.raises(RPCError) as info:
            await client.call_tool("nope")
    assert info.value.code == -32602
    assert "Unknown tool: nope" in info.value.message


async def test_tool_errors_and_crashes_are_results_without_internals(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with open_memory_client(everything()) as client:
        tool_error = await client.call_tool("fail", {"kind": "tool"})
        crash = await client.call_tool("fail", {"kind": "crash"})
    assert tool_error.is_error
    assert tool_error.content == [t.TextContent(text="failed on purpose")]
    assert crash.is_error
    assert crash.content == [t.TextContent(text="Tool fail failed")]
    assert "secret" not in repr(crash)
    assert "secret internal detail" in caplog.text  # the traceback is logged


async def test_rpc_error_from_a_tool_is_a_json_rpc_error() -> None:
    server = Server("x")

    @server.tool()
    async def strict() -> str:
        raise RPCError(-32000, "custom")

    async with open_memory_client(server) as client:
        with pytest.raises(RPCError) as info:
            await client.call_tool("strict")
    assert info.value.code == -32000


@pytest.mark.spec("TL-10")
async def test_annotations_title_and_icons_are_advertised() -> None:
    server = Server("x")
    server.add_tool(
        _noop,
        title="No-op",
        annotations=t.ToolAnnotations(read_only_hint=True, destructive_hint=False),
        icons=[t.Icon(src="https://example.com/i.png", mime_type="image/png")],
    )
    async with open_raw(server) as (peer, _):
        (tool,) = (await peer.request("tools/list"))["result"]["tools"]
    assert tool["title"] == "No-op"
    assert tool["annotations"] == {"readOnlyHint": True, "destructiveHint": False}
    assert tool["icons"] == [{"src": "https://example.com/i.png", "mimeType": "image/png"}]


async def test_content_results_images_and_lists() -> None:
    async with open_memory_client(everything()) as client:
        result = await client.call_tool("pixel")
    image, caption = result.content
    assert isinstance(image, t.ImageContent)
    assert image.decoded() == everything_module.PIXEL
    assert caption == t.TextContent(text="1x1 pixel")


async def test_sync_tool_runs_in_a_thread_abandoned_on_cancel() -> None:
    started, release = threading.Event(), threading.Event()
    contexts: list[Context] = []
    server = Server("x")

    @server.tool()
    def blocking(ctx: Context) -> str:
        contexts.append(ctx)
        started.set()
        release.wait(10)
        return "late"

    try:
        async with open_memory_client(server) as client:
            with trio.CancelScope() as scope:
                async with trio.open_nursery() as nursery:

                    async def call() -> None:
                        await client.call_tool("blocking")

                    nursery.start_soon(call)
                    await trio.to_thread.run_sync(started.wait, 10)
                    scope.cancel()
            # The server gave up on the thread at once: the request is over.
            with trio.fail_after(5):
                await contexts[0].session.wait_inbound_settled()
            records = [
                r
                for r in contexts[0].session.requests()
                if r.direction is Direction.INBOUND and r.method == "tools/call"
            ]
            assert records[0].state is RequestState.CANCELLED
            assert records[0].in_worker_thread  # the record says a thread was abandoned
            assert contexts[0].ran_in_thread
            # The session still serves.
            assert (await client.list_tools()).tools[0].name == "blocking"
    finally:
        release.set()


async def test_sync_tool_result_is_returned() -> None:
    async with open_memory_client(everything()) as client:
        result = await client.call_tool("checksum", {"data": "abc"})
    assert result.content == [t.TextContent(text="96354")]


async def test_progress_only_when_asked(autojump_clock: trio.testing.MockClock) -> None:
    seen: list[float] = []
    async with open_raw(everything()) as (peer, _):
        reply = await peer.request("tools/call", {"name": "slow", "arguments": {"steps": 2}})
        assert reply["result"]["content"][0]["text"] == "done in 2 steps"
        methods = [f.get("method") for f in peer.unread()]
        assert "notifications/progress" not in methods
    async with open_memory_client(everything()) as client:
        await client.call_tool("slow", {"steps": 3}, on_progress=lambda p: seen.append(p.progress))
    assert seen == [1, 2, 3]


async def test_malformed_tools_call_gets_an_error_and_the_session_goes_on() -> None:
    async with open_raw(everything()) as (peer, _):
        assert error_code(await peer.request("tools/call", {"name": 5})) == -32602
        assert error_code(await peer.request("tools/call", {"name": "echo", "arguments": [1]})) == (
            -32602
        )
        assert error_code(await peer.request("tools/call")) == -32602
        reply = await peer.request("tools/call", {"name": "echo", "arguments": {"text": "ok"}})
        assert reply["result"]["content"] == [{"type": "text", "text": "ok"}]


def test_tool_error_is_exported() -> None:
    assert issubclass(ToolError, Exception)
