"""Watch a call be cancelled, in both eras.

The server runs in the same program, on an in-memory transport, so that both
sides' request records can be printed. The client calls a slow tool under a
deadline of 0.3 s: the deadline is a Trio cancel scope, and when it expires the
call is cancelled, the server is told, and the server's handler stops.
"""

from functools import partial

import trio

from trio_mcp import Context, Server, open_client, serve_session
from trio_mcp.testing import memory_transport_pair

server = Server("slow-server")


@server.tool()
async def slow(ctx: Context, seconds: float) -> str:
    """Wait, then say so."""
    try:
        await trio.sleep(seconds)
        return "finished"
    except trio.Cancelled:
        print("  server: the handler was cancelled")
        raise


async def watch(era: str) -> None:
    print(f"era={era}")
    client_end, server_end = memory_transport_pair()
    async with trio.open_nursery() as nursery:
        serving = await nursery.start(partial(serve_session, server, server_end))
        async with open_client(client_end, era=era) as client:
            with trio.move_on_after(0.3) as scope:
                await client.call_tool("slow", {"seconds": 10})
            print("  client: deadline hit:", scope.cancelled_caught)
            await serving.wait_inbound_settled()
            [call] = [r for r in client.session.requests() if r.method == "tools/call"]
            print("  client record:", call.state.value, "by", call.cancel_origin.value)
        await serving.wait_closed()
        [call] = [r for r in serving.requests() if r.method == "tools/call"]
        print("  server record:", call.state.value, "by", call.cancel_origin.value)


async def main() -> None:
    await watch("legacy")  # the handshake era: initialize, then requests
    await watch("modern")  # 2026-07-28: no handshake, every request self-contained


trio.run(main)
