"""A recorded session for the timeline's tests: real client and server
sessions over the in-memory pair, in each era, with every kind of lane the
timeline draws (progress, a cancel by the caller, a deadline, a failure, a
task that outlives its request, an input-required call in two rounds).
Run under Trio's autojump clock, so every time is exact."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import attrs
import trio
import trio.testing

from trio_mcp import Context, MCPError, RequestTimeout, Server, ToolError
from trio_mcp import types as mcp_types
from trio_mcp.lowlevel import FrameLog, RequestRecord, SeenFrame
from trio_mcp.testing import open_memory_client


def build_server() -> Server:
    """The shop: a fresh one per session (a task runner keeps its clock's times)."""
    server = Server("timeline-shop")

    @server.tool()
    async def lookup(order_id: str) -> str:
        """An order's status."""
        if order_id != "PT-1":
            raise ToolError(f"no order {order_id}")
        return "shipped"

    @server.tool()
    async def report(ctx: Context, steps: int) -> str:
        """Reports progress after each step."""
        for done in range(1, steps + 1):
            await trio.sleep(0.1)
            await ctx.report_progress(done, total=steps)
        return "ready"

    @server.tool()
    async def slow(seconds: float) -> str:
        """Waits."""
        await trio.sleep(seconds)
        return "done"

    @server.tool()
    async def confirm(ctx: Context) -> str:
        """Asks the user (an input-required round in 2026-07-28)."""
        answer = await ctx.elicit(
            {
                "mode": "form",
                "message": "Go?",
                "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
            }
        )
        return f"answered {answer.action}"

    @server.tool(task_support="optional")
    async def render(frames: int) -> str:
        """A long job, run as a task."""
        await trio.sleep(frames * 0.1)
        return f"rendered {frames}"

    return server


@attrs.frozen
class Recorded:
    era: str
    records: Sequence[RequestRecord]
    frames: Sequence[SeenFrame]


async def _yes(request: object) -> mcp_types.ElicitResult:
    await trio.sleep(0.05)  # the user thinks
    return mcp_types.ElicitResult(action="accept", content={"ok": True})


async def _stop_after(scope: trio.CancelScope, seconds: float) -> None:
    await trio.sleep(seconds)
    scope.cancel(reason="the user pressed stop")


async def record(era: str) -> Recorded:
    log = FrameLog()
    async with open_memory_client(
        build_server(), era=era, observer=log, elicitation=_yes
    ) as client:
        await client.call_tool("lookup", {"order_id": "PT-1"})
        await client.call_tool("lookup", {"order_id": "PT-2"})  # a tool error: completed
        await client.call_tool("report", {"steps": 4}, on_progress=lambda progress: None)
        with trio.CancelScope() as scope:  # the caller gives up: cancelled by the caller
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_stop_after, scope, 0.3)
                await client.call_tool("slow", {"seconds": 5})
        with contextlib.suppress(MCPError):  # a request the server refuses: failed
            await client.session.request("tools/call", {"name": "nope", "arguments": {}})
        await client.call_tool("confirm", {})
        if era == "legacy":
            task = await client.call_tool("render", {"frames": 6}, as_task=True)
            await client.call_tool("lookup", {"order_id": "PT-1"})  # while the task runs
            await task.wait()
        with contextlib.suppress(RequestTimeout):  # a deadline: no progress for 0.5 s
            await client.call_tool("slow", {"seconds": 5}, progress_idle_timeout=0.5)
        await client.ping()
        records = client.session.requests()
    return Recorded(era, records, log.frames)


def record_both() -> list[Recorded]:
    """Both eras' sessions, recorded outside any running Trio loop."""

    async def both() -> list[Recorded]:
        return [await record("legacy"), await record("modern")]

    return trio.run(both, clock=trio.testing.MockClock(autojump_threshold=0))
