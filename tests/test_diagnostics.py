"""SlowStepReporter makes a handler that blocks the event loop visible (reliability H-09).

The reporter reads a clock the test controls: the "blocking" tool advances it
inside one task step, exactly as ``time.sleep`` would advance the real one,
so the test takes no real time and cannot flake.
"""

from __future__ import annotations

import pytest
import trio
from helpers import open_pair

from trio_mcp import Server
from trio_mcp.lowlevel import SlowStepReporter


class StepClock:
    """A wall clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _server(clock: StepClock) -> Server:
    server = Server("blocking")

    @server.tool()
    async def crunch(seconds: float) -> str:
        clock.now += seconds  # a blocking call: no checkpoint while time passes
        return "done"

    return server


async def test_a_handler_that_blocks_is_reported_with_its_request(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = StepClock()
    reporter = SlowStepReporter(0.1, clock=clock)
    trio.lowlevel.add_instrument(reporter)
    try:
        async with open_pair(_server(clock), discover=False) as (client, _):
            await client.call_tool("crunch", {"seconds": 0.05})  # under the threshold
            assert reporter.reports == []
            await client.call_tool("crunch", {"seconds": 2.0})
    finally:
        trio.lowlevel.remove_instrument(reporter)
    [(name, seconds, request)] = reporter.reports
    assert name == "trio_mcp inbound request"
    assert seconds == pytest.approx(2.0)
    assert request is not None
    assert request.startswith("tools/call (id ")
    [record] = [r for r in caplog.records if r.name == "trio_mcp.diagnostics"]
    assert record.levelname == "WARNING"
    assert "blocked the event loop for 2.000 s while serving tools/call" in record.getMessage()


def test_the_threshold_must_be_positive() -> None:
    with pytest.raises(ValueError, match="threshold"):
        SlowStepReporter(0)
