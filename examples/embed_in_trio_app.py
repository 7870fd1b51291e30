"""Embed an MCP server and client in a Trio application's own nursery.

The server session is started with ``nursery.start`` (no hidden tasks), the
client runs a few calls, one of them under a deadline that cancels it, and the
program prints both sides' request records. Run: ``python examples/embed_in_trio_app.py``.
"""

from __future__ import annotations

from functools import partial

import trio

import trio_mcp
from trio_mcp.testing import memory_transport_pair

server = trio_mcp.Server("embedded", version="1.0")


@server.tool()
async def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@server.tool()
async def slow(ctx: trio_mcp.Context, seconds: float) -> str:
    """Wait, reporting progress every second."""
    for second in range(int(seconds)):
        await trio.sleep(1)
        await ctx.report_progress(second + 1, total=seconds)
    return "done"


async def main() -> None:
    client_end, server_end = memory_transport_pair()
    async with trio.open_nursery() as nursery:
        server_session = await nursery.start(partial(trio_mcp.serve_session, server, server_end))
        async with trio_mcp.open_client(client_end) as client:
            print("2 + 3 =", (await client.call_tool("add", {"a": 2, "b": 3})).content[0])
            with trio.move_on_after(0.5) as scope:
                await client.call_tool("slow", {"seconds": 10})
            print("slow call cancelled by our deadline:", scope.cancelled_caught)
            await server_session.wait_inbound_settled()
            for record in client.session.requests():
                print("client", record.id, record.method, record.state.value, record.cancel_origin)
        await server_session.wait_closed()
        for record in server_session.requests():
            print("server", record.id, record.method, record.state.value, record.cancel_origin)


if __name__ == "__main__":
    trio.run(main)
