"""What the documented fields of ``SessionStatistics`` count, as a user sees them."""

from __future__ import annotations

from functools import partial

import trio

from trio_mcp import Context, Server, open_client, serve_session
from trio_mcp.testing import memory_transport_pair

server = Server("counted")


@server.tool()
async def wait(ctx: Context, seconds: float) -> str:
    await trio.sleep(seconds)
    return "done"


async def test_peak_in_flight_counts_inbound_requests_only(autojump_clock: trio.abc.Clock) -> None:
    """Three concurrent calls: the server saw three at once, the client none
    (its calls are outbound); both count the three completions and the frames."""
    client_end, server_end = memory_transport_pair()
    async with trio.open_nursery() as nursery:
        serving = await nursery.start(partial(serve_session, server, server_end))
        async with open_client(client_end, era="legacy") as client:
            async with trio.open_nursery() as calls:
                for _ in range(3):
                    calls.start_soon(client.call_tool, "wait", {"seconds": 1})
                await trio.testing.wait_all_tasks_blocked()
                during = client.session.statistics()
                assert during.running == 3  # outbound, written, answers not in
                assert serving.statistics().running == 3  # inbound handlers
            ours = client.session.statistics()
            theirs = serving.statistics()
    assert ours.peak_in_flight == 0
    assert theirs.peak_in_flight == 3
    calls_done = [r for r in client.session.requests() if r.method == "tools/call"]
    assert len(calls_done) == 3
    assert ours.completed >= 3  # initialize and the tools/list discovery too
    assert ours.running == ours.queued == 0
    assert ours.frames_out >= 4  # initialize, initialized, three calls
    assert ours.invalid_messages == ours.ignored_events == 0
