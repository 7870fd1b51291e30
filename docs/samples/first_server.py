"""Your first server: one tool, served over stdio.

Run it by itself (``python first_server.py``) and it waits for MCP messages on
stdin; ``first_host.py`` starts it for you.
"""

import trio

from trio_mcp import Context, Server, run_stdio

server = Server("first", version="1.0")


@server.tool()
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def count(ctx: Context, to: int, delay: float = 0.1) -> str:
    """Count slowly, reporting progress after each number."""
    for number in range(1, to + 1):
        await trio.sleep(delay)
        await ctx.report_progress(number, total=to)
    return f"counted to {to}"


if __name__ == "__main__":
    run_stdio(server)
