"""The same server as sdk_side_trio_mcp.py, written with the official Python SDK."""

import anyio
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("weather")


@server.tool()
async def forecast(ctx: Context, city: str, days: int = 3) -> str:
    """Forecast the weather for a city."""
    for day in range(days):
        await anyio.sleep(0.01)  # look the day up
        await ctx.report_progress(day + 1, total=days)
    return f"{city}: sunny for {days} days"


@server.resource("weather://cities", mime_type="application/json")
async def cities() -> str:
    """The cities we know."""
    return '["Paris", "Oslo"]'


if __name__ == "__main__":
    server.run("stdio")
