"""The examples in the docstrings of ``Server.tool``, ``Server.resource`` and
``Server.prompt`` (what ``help()`` and the API reference show) run as written."""

from __future__ import annotations

import inspect
import textwrap
from typing import Any

import pytest

import trio_mcp
from trio_mcp import types
from trio_mcp.testing import open_memory_client


def _example(method: Any) -> str:
    doc = inspect.getdoc(method) or ""
    block = doc.split("Example::\n\n", 1)[1].split("\n\n")
    # The example runs until the first paragraph that is not indented.
    lines: list[str] = []
    for paragraph in block:
        if not paragraph.startswith("    "):
            break
        lines.append(paragraph)
    return textwrap.dedent("\n\n".join(lines))


@pytest.mark.parametrize("method", ["tool", "resource", "prompt"])
def test_the_example_registers(method: str) -> None:
    server = trio_mcp.Server("docstrings")
    exec(_example(getattr(trio_mcp.Server, method)), {"server": server, "types": types})
    assert server._tools or server._resources or server._prompts


async def test_the_examples_answer() -> None:
    server = trio_mcp.Server("docstrings")
    for method in ("tool", "resource", "prompt"):
        exec(_example(getattr(trio_mcp.Server, method)), {"server": server})
    async with open_memory_client(server) as client:
        added = await client.call_tool("add", {"a": 1, "b": 2})
        assert added.structured_content == {"result": 3}
        assert client.tools["add"].title == "Add"
        annotations = client.tools["add"].annotations
        assert annotations is not None
        assert annotations.read_only_hint is True
        config = await client.read_resource("config://app")
        assert isinstance(config.contents[0], types.TextResourceContents)
        assert config.contents[0].text == '{"theme": "dark"}'
        assert config.contents[0].mime_type == "application/json"
        prompt = await client.get_prompt("summarise", {"text": "t"})
        assert isinstance(prompt.messages[0].content, types.TextContent)
        assert prompt.messages[0].content.text == "Summarise this:\nt"
