"""The same server as sdk_side_official.py, written with trio_mcp."""

import trio

from trio_mcp import Context, Server, run_stdio

server = Server("weather")


@server.tool()
async def forecast(ctx: Context, city: str, days: int = 3) -> str:
    """Forecast the weather for a city."""
    for day in range(days):
        await trio.sleep(0.01)  # look the day up
        await ctx.report_progress(day + 1, total=days)
    return f"{city}: sunny for {days} days"


@server.resource("weather://cities", mime_type="application/json")
async def cities() -> str:
    """The cities we know."""
    return '["Paris", "Oslo"]'


if __name__ == "__main__":
    run_stdio(server)
