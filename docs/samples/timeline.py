"""Draw a session's requests: the request table, and the timeline as one HTML page."""

import sys
from pathlib import Path

import trio

from trio_mcp import Context, Server
from trio_mcp.lowlevel import FrameLog, request_table, request_timeline
from trio_mcp.testing import open_memory_client

server = Server("shop")


@server.tool()
async def report(ctx: Context, steps: int) -> str:
    for done in range(1, steps + 1):
        await trio.sleep(0.05)  # a step's work
        await ctx.report_progress(done, total=steps)
    return "ready"


@server.tool(task_support="optional")
async def render(seconds: float) -> str:
    await trio.sleep(seconds)
    return "rendered"


async def main(page: Path) -> None:
    frames = FrameLog()  # keeps the frames, for the timeline to show on hover
    async with open_memory_client(server, era="legacy", observer=frames) as client:
        await client.call_tool("report", {"steps": 4}, on_progress=lambda progress: None)
        with trio.move_on_after(0.1):  # we stop waiting: the call is cancelled
            await client.call_tool("render", {"seconds": 10})
        task = await client.call_tool("render", {"seconds": 0.4}, as_task=True)
        await client.call_tool("report", {"steps": 2}, on_progress=lambda progress: None)
        await task.wait()  # the task outlives the call that made it
        records = client.session.requests()
    print(request_table(records))
    html = request_timeline(records, frames=frames.frames, title="The shop's session")
    await trio.Path(page).write_text(html)


trio.run(main, Path(sys.argv[1] if len(sys.argv) > 1 else "timeline.html"))
