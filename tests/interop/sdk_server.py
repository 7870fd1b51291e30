"""A stdio server written with the official Python SDK (run by the interop tests)."""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("sdk-server")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def count(steps: int, ctx: Context) -> str:
    """Count to *steps*, reporting progress."""
    for done in range(1, steps + 1):
        await ctx.report_progress(done, steps, f"step {done}")
    return f"counted {steps}"


if __name__ == "__main__":
    server.run("stdio")
