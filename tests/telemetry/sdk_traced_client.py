"""The official Python SDK's stdio client (``mcp`` 2.3.0, which injects trace
context into ``_meta``) with the OpenTelemetry SDK configured globally: calls
``echo`` on SERVER_SCRIPT inside a span of its own application, and prints
its spans as one JSON object.

Usage: python sdk_traced_client.py SERVER_SCRIPT SPANS_FILE"""

from __future__ import annotations

import json
import sys

from otel_sdk import Sdk

SDK = Sdk().install()

import anyio  # noqa: E402
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402


async def main() -> None:
    params = StdioServerParameters(
        command=sys.executable, args=[sys.argv[1]], env={"TRACED_SPANS": sys.argv[2]}
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("echo", {"text": "hi"})
    print(json.dumps({"result": result.content[0].text, "spans": SDK.spans()}))  # type: ignore[union-attr]


anyio.run(main)
