"""Our client in a process of its own, with the OpenTelemetry SDK configured
globally and no other change: it calls one tool and prints, as one JSON
object, the tool's text answer and the spans it made.

Usage: python traced_client.py ERA stdio SERVER_SCRIPT SPANS_FILE TOOL
       python traced_client.py ERA http URL - TOOL
"""

from __future__ import annotations

import json
import sys

from otel_sdk import Sdk

SDK = Sdk().install()

import trio  # noqa: E402

import trio_mcp  # noqa: E402
from trio_mcp import types as mcp_types  # noqa: E402


async def main(era: str, how: str, target: str, spans: str, tool: str) -> None:
    if how == "stdio":
        opened = trio_mcp.open_stdio_client(
            sys.executable, [target], env={"TRACED_SPANS": spans}, era=era
        )
    else:
        opened = trio_mcp.open_http_client(target, era=era, remember_era=False)
    async with opened as client:
        result = await client.call_tool(tool, {"text": "hi"})
    block = result.content[0]
    assert isinstance(block, mcp_types.TextContent)
    print(json.dumps({"result": block.text, "spans": SDK.spans(), "points": SDK.points()}))


era, how, target, spans, tool = sys.argv[1:6]
trio.run(main, era, how, target, spans, tool)
