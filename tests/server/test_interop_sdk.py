"""Interop: the official Python SDK's client (``mcp``) against a trio_mcp server.

In memory, the SDK's ``mcp.Client`` gets a transport made of anyio memory
streams that carry exactly what its stdio transport would carry (each JSON-RPC
message serialised with ``model_dump_json`` and parsed back with
``jsonrpc_message_adapter``), bridged to one end of our in-memory transport;
the SDK runs on anyio's Trio backend in the test's own event loop. Over
stdio, the SDK launches ``examples/everything.py`` as a real subprocess.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp
import pytest
import trio
from mcp import types as sdk
from mcp.client.stdio import StdioServerParameters
from mcp.shared.message import SessionMessage
from server_helpers import CHILD_ENV, EVERYTHING, everything

from trio_mcp import Server, serve_session
from trio_mcp.testing import memory_transport_pair


@asynccontextmanager
async def sdk_transport(server: Server) -> AsyncIterator[tuple[Any, Any]]:
    """An ``mcp`` client transport served by *server* over our memory transport."""
    ours, theirs = memory_transport_pair()
    to_sdk, sdk_reads = anyio.create_memory_object_stream[SessionMessage | Exception](64)
    sdk_writes, from_sdk = anyio.create_memory_object_stream[SessionMessage](64)
    async with trio.open_nursery() as nursery:
        await nursery.start(serve_session, server, theirs)

        async def server_to_sdk() -> None:
            async with to_sdk:
                try:
                    while True:
                        data = await ours.receive()
                        message = sdk.jsonrpc_message_adapter.validate_json(data, by_name=False)
                        await to_sdk.send(SessionMessage(message))
                except (trio.EndOfChannel, trio.ClosedResourceError):
                    pass

        async def sdk_to_server() -> None:
            async with from_sdk:
                async for item in from_sdk:
                    text = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await ours.send(text.encode())
            await ours.aclose()

        nursery.start_soon(server_to_sdk)
        nursery.start_soon(sdk_to_server)
        yield sdk_reads, sdk_writes
        await sdk_writes.aclose()


async def _exercise(client: mcp.Client) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert tools["weather"].output_schema is not None
    assert tools["echo"].annotations is not None
    assert tools["echo"].annotations.read_only_hint

    # Structured output: the SDK validates structuredContent against the outputSchema.
    weather = await client.call_tool("weather", {"city": "Oslo"})
    assert not weather.is_error
    assert weather.structured_content == {
        "city": "Oslo",
        "temperature": 14.0,
        "unit": "celsius",
        "conditions": ["cloudy", "mild"],
    }
    added = await client.call_tool("add", {"a": 40, "b": 2})
    assert added.structured_content == {"result": 42}
    echoed = await client.call_tool("echo", {"text": "hi"})
    assert isinstance(echoed.content[0], sdk.TextContent)
    assert echoed.content[0].text == "hi"

    # Errors: tool errors are results, an unknown tool is a protocol error.
    failed = await client.call_tool("fail", {"kind": "tool"})
    assert failed.is_error
    assert isinstance(failed.content[0], sdk.TextContent)
    assert failed.content[0].text == "failed on purpose"
    invalid = await client.call_tool("add", {"a": "x", "b": 1})
    assert invalid.is_error
    assert isinstance(invalid.content[0], sdk.TextContent)
    assert "argument 'a'" in invalid.content[0].text
    with pytest.raises(mcp.MCPError) as info:
        await client.call_tool("nope", {})
    assert info.value.error.code == -32602

    # Resources and templates.
    resources = (await client.list_resources()).resources
    assert [str(r.uri) for r in resources] == ["config://app", "image://pixel"]
    templates = (await client.list_resource_templates()).resource_templates
    assert [tp.uri_template for tp in templates] == ["note://{name}", "colour://{colour}/{shade}"]
    note = await client.read_resource("note://welcome")
    assert note.contents[0].text == "Hello from trio_mcp."  # type: ignore[union-attr]
    pixel = await client.read_resource("image://pixel")
    assert pixel.contents[0].blob  # type: ignore[union-attr]
    with pytest.raises(mcp.MCPError) as info:
        await client.read_resource("note://missing")
    assert info.value.error.code == -32002

    # Prompts and completions.
    prompt = await client.get_prompt("greet", {"name": "Ann"})
    assert prompt.messages[0].content.text == "Greet Ann in english."  # type: ignore[union-attr]
    done = await client.complete(
        sdk.PromptReference(type="ref/prompt", name="greet"), {"name": "language", "value": "s"}
    )
    assert done.completion.values == ["spanish", "swedish"]
    colours = await client.complete(
        sdk.ResourceTemplateReference(type="ref/resource", uri="colour://{colour}/{shade}"),
        {"name": "colour", "value": "b"},
    )
    assert colours.completion.values == ["blue", "black"]


@pytest.mark.spec("TL-07")
async def test_sdk_client_in_memory() -> None:
    async with mcp.Client(sdk_transport(everything()), mode="legacy") as client:
        assert client.server_info is not None
        assert client.server_info.name == "everything"
        assert client.protocol_version == "2025-11-25"
        await _exercise(client)
    # Pagination: the SDK follows our cursors.
    async with mcp.Client(sdk_transport(everything(page_size=2)), mode="legacy") as client:
        first = await client.list_tools()
        assert len(first.tools) == 2
        assert first.next_cursor is not None
        second = await client.list_tools(cursor=first.next_cursor)
        assert [t.name for t in second.tools] == ["weather", "stats"]


async def test_sdk_client_over_stdio() -> None:
    params = StdioServerParameters(command=sys.executable, args=[str(EVERYTHING)], env=CHILD_ENV)
    with trio.fail_after(30):
        async with mcp.Client(params, mode="legacy") as client:
            assert client.protocol_version == "2025-11-25"
            await _exercise(client)
