"""PG-09 end to end: a session's ``progress_interval`` thins the progress it sends.

The rule itself is table-tested on the sans-I/O protocol in
tests/protocol/test_progress_interval_rows.py.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing
from helpers import open_pair

from trio_mcp import Context, Server
from trio_mcp.lowlevel import Progress, open_session
from trio_mcp.testing import memory_transport_pair


def _scanner() -> Server:
    server = Server("scanner")

    @server.tool()
    async def scan(ctx: Context) -> str:
        # 100 reports, one every 10 ms: one second of work.
        for step in range(1, 101):
            await trio.sleep(0.01)
            await ctx.report_progress(step, 100)
        return "scanned"

    return server


@pytest.mark.spec("PG-09")
async def test_a_session_with_an_interval_thins_the_stream_end_to_end(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[Progress] = []
    options = {"progress_interval": 0.25}
    async with open_pair(_scanner(), server_options=options) as (client, session):
        result = await client.call_tool("scan", on_progress=seen.append)
        assert result.content[0].text == "scanned"  # type: ignore[union-attr]
        steps = [p.progress for p in seen]
        # One report per 250 ms (every 25th step, measured from the last one
        # sent), and the final one, which reaches its total.
        assert steps == [1, 26, 51, 76, 100]
        [record] = [r for r in session.requests() if r.method == "tools/call"]
        assert record.progress == Progress(100, 100)


@pytest.mark.spec("PG-09")
async def test_a_negative_interval_is_refused() -> None:
    a, _ = memory_transport_pair()
    server = _scanner()
    with pytest.raises(ValueError, match="progress_interval"):
        async with open_session(a, server.make_protocol, server, progress_interval=-1):
            pass  # pragma: no cover
