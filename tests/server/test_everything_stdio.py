"""Round trips with ``examples/everything.py`` over real stdio, with our own client."""

from __future__ import annotations

import sys

import trio
from server_helpers import EVERYTHING, EVERYTHING_ENV

from trio_mcp import open_stdio_client
from trio_mcp import types as t


async def test_everything_over_stdio() -> None:
    with trio.fail_after(30):
        async with open_stdio_client(
            sys.executable, [str(EVERYTHING)], env=EVERYTHING_ENV
        ) as client:
            added = await client.call_tool("add", {"a": 1, "b": 2})
            assert added.structured_content == {"result": 3}
            progress: list[float] = []
            slow = await client.call_tool(
                "slow", {"steps": 2}, on_progress=lambda p: progress.append(p.progress)
            )
            assert slow.content == [t.TextContent(text="done in 2 steps")]
            assert progress == [1, 2]
            note = await client.read_resource("note://welcome")
            assert note.contents[0].text == "Hello from trio_mcp."  # type: ignore[union-attr]
            prompt = await client.get_prompt("greet", {"name": "Bo"})
            assert prompt.messages[0].content == t.TextContent(text="Greet Bo in english.")
            transport = client.session.transport
        # The process was reaped when the block ended.
        assert transport.exit_step is not None  # type: ignore[attr-defined]
