"""A long-running tool, called as a task: answered at once, then waited for."""

import trio

from trio_mcp import Context, Server
from trio_mcp.testing import open_memory_client

server = Server("renderer")


@server.tool(task_support="optional")  # "required": only ever a task
async def render(ctx: Context, frames: int) -> str:
    for done in range(frames):
        await trio.sleep(0.01)  # a frame's work
        await ctx.report_progress(done + 1, frames)
    return f"rendered {frames} frames"


async def main() -> None:
    async with open_memory_client(server) as client:
        task = await client.call_tool("render", {"frames": 20}, as_task=True)
        print(task.record.state)  # answered at once: TaskState.WORKING
        final = await task.wait()  # polls; cancelling the wait leaves the task running
        print(final.state, (await task.result()).content[0].text)  # or: await task.cancel()


trio.run(main)
