"""A server that declares extensions no checker knows: the example's
``com.example/shout`` and ``org.example.unknown/thing``, beside one tool."""

from __future__ import annotations

import sys
from pathlib import Path

from trio_mcp import Server
from trio_mcp.extensions import Extension

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import extension as example


def build() -> Server:
    server = example.build_server()
    server.add_extension(Extension("org.example.unknown/thing", {"anything": [1, 2, 3]}))

    @server.tool(annotations={"readOnlyHint": True})
    async def echo(text: str) -> str:
        return text

    return server


if __name__ == "__main__":
    build().run_stdio()
