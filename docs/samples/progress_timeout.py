"""A timeout that progress extends.

``progress_idle_timeout`` is how long a call may go *without progress*: each
progress notification from the server starts the clock again. A tool that keeps
reporting runs as long as it needs; one that goes quiet fails with
``RequestTimeout``, and the server is told to stop. Progress is sent only to a
caller that asks for it, with ``on_progress``. ``max_duration`` is a hard bound
that progress never extends.
"""

import trio

from trio_mcp import Context, RequestTimeout, Server
from trio_mcp.lowlevel import Progress
from trio_mcp.testing import open_memory_client

server = Server("progress")


@server.tool()
async def steady(ctx: Context, steps: int) -> str:
    """Report progress every 0.1 s."""
    for step in range(1, steps + 1):
        await trio.sleep(0.1)
        await ctx.report_progress(step, total=steps)
    return f"{steps} steps done"


@server.tool()
async def quiet(seconds: float) -> str:
    """Work without reporting progress."""
    await trio.sleep(seconds)
    return "done"


def show(progress: Progress) -> None:
    print(f"  progress {progress.progress:g}/{progress.total:g}")


async def main() -> None:
    async with open_memory_client(server) as client:
        # 2 s of work, twice the timeout, but 0.1 s at most between two reports.
        result = await client.call_tool(
            "steady", {"steps": 20}, on_progress=show, progress_idle_timeout=1.0
        )
        print("steady:", result.content[0].text)
        try:
            await client.call_tool("quiet", {"seconds": 5}, progress_idle_timeout=1.0)
        except RequestTimeout as error:
            print("quiet: RequestTimeout:", error)
        try:
            await client.call_tool(
                "steady",
                {"steps": 50},
                on_progress=lambda progress: None,
                progress_idle_timeout=1.0,
                max_duration=2.0,
            )
        except RequestTimeout as error:
            print("steady with max_duration: RequestTimeout:", error)


trio.run(main)
