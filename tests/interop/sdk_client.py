"""The official Python SDK's stdio client against a trio_mcp server (run by the interop tests).

Usage: python sdk_client.py SERVER_SCRIPT. Prints one JSON object on stdout
with what it saw; the test checks it.
"""

from __future__ import annotations

import json
import os
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main() -> None:
    params = StdioServerParameters(command=sys.executable, args=[sys.argv[1]], env=dict(os.environ))
    seen: dict[str, object] = {}
    updates: list[list[object]] = []
    seen["progress"] = updates
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        seen["server"] = init.server_info.name
        seen["protocol"] = init.protocol_version
        tools = await session.list_tools()
        seen["tools"] = sorted(tool.name for tool in tools.tools)
        result = await session.call_tool("order_status", {"order_id": "PT-1042"})
        seen["order"] = result.content[0].text  # type: ignore[union-attr]

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            updates.append([progress, total, message])

        result = await session.call_tool(
            "prepare_report", {"steps": 3}, progress_callback=on_progress
        )
        seen["report"] = result.content[0].text  # type: ignore[union-attr]
        with anyio.move_on_after(0.3) as scope:
            await session.call_tool("sleep", {"seconds": 30})
        seen["cancelled"] = scope.cancel_called
        await session.send_ping()
        seen["ping"] = True
    print(json.dumps(seen), flush=True)


anyio.run(main)
