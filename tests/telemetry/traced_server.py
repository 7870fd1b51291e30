"""Our server over stdio in a process of its own, with the OpenTelemetry SDK
configured globally (nothing else: telemetry is on by default). When it exits
it writes its finished spans as JSON lines to the file named by
``TRACED_SPANS``. Its ``relay`` tool calls ``echo`` on a second copy of itself
(spans to ``TRACED_SPANS`` + ``.2``): one trace across three processes.

Usage: python traced_server.py (the tests spawn it)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from otel_sdk import Sdk, write_spans

SDK = Sdk().install()

import trio_mcp  # noqa: E402  (after the SDK, as an application would)
from trio_mcp import types as mcp_types  # noqa: E402

server = trio_mcp.Server("traced", version="1.0")


@server.tool()
async def echo(text: str) -> str:
    """Says *text* back."""
    return text


@server.tool()
async def relay(text: str) -> str:
    """Asks a second copy of this server to echo *text*."""
    spans = os.environ["TRACED_SPANS"] + ".2"
    async with trio_mcp.open_stdio_client(
        sys.executable, [__file__], env={"TRACED_SPANS": spans}, era="legacy"
    ) as client:
        result = await client.call_tool("echo", {"text": text})
    block = result.content[0]
    assert isinstance(block, mcp_types.TextContent)
    return f"relayed: {block.text}"


def main() -> None:
    try:
        server.run_stdio()
    finally:
        spans = Path(os.environ["TRACED_SPANS"])
        write_spans(spans, SDK.spans())
        spans.with_suffix(".metrics").write_text(json.dumps(SDK.points()))


if __name__ == "__main__":
    main()
