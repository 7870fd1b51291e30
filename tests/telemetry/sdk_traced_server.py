"""A stdio server written with the official Python SDK (``mcp`` 2.3.0, which
emits spans by default), with the OpenTelemetry SDK configured globally; when
it exits it writes its finished spans as JSON lines to ``TRACED_SPANS``."""

from __future__ import annotations

import os
from pathlib import Path

from otel_sdk import Sdk, write_spans

SDK = Sdk().install()

from mcp.server.mcpserver import MCPServer  # noqa: E402

server = MCPServer("sdk-traced")


@server.tool()
def echo(text: str) -> str:
    """Says *text* back."""
    return text


if __name__ == "__main__":
    try:
        server.run("stdio")
    finally:
        write_spans(Path(os.environ["TRACED_SPANS"]), SDK.spans())
