"""A 2026-07-28-only stdio MCP server: it refuses ``initialize`` with -32022
naming the one version it speaks (VR-13), and has one tool, ``hello``."""

from __future__ import annotations

from trio_mcp import Server

server = Server("modern-only", version="1", protocol_versions=("2026-07-28",))


@server.tool()
async def hello() -> str:
    return "hi"


if __name__ == "__main__":
    server.run_stdio()
