"""Trio-specific cases of the robustness catalogue (reliability §3.14): the
public API under both settings of Trio's KeyboardInterrupt delivery, with
strict exception groups (Trio's only mode since 0.25, and the suite's)."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from trio_mcp import RequestTimeout, RPCError, Server, SessionClosed
from trio_mcp.lowlevel import RequestState
from trio_mcp.testing import open_memory_client


def make_server() -> Server:
    server = Server("trio-modes")

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @server.tool()
    async def broken() -> str:
        """Fails in its own nursery, twice over."""

        async def fail(n: int) -> None:
            raise ValueError(f"canary {n}")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(fail, 1)
            nursery.start_soon(fail, 2)
        return "unreachable"

    @server.tool()
    async def forever() -> str:
        """Returns only when cancelled (it never is, but by its caller)."""
        await trio.sleep(10**6)
        return "too late"

    return server


async def scenario() -> list[str]:
    """Every outcome of a call, each observed as a documented type, never a group."""
    seen: list[str] = []
    async with open_memory_client(make_server()) as client:
        result = await client.call_tool("add", {"a": 2, "b": 3})
        seen.append(f"result {result.structured_content}")
        failed = await client.call_tool("broken")
        seen.append(f"tool error {failed.is_error}")
        with pytest.raises(RPCError):
            await client.session.request("tools/call", {"name": "no-such-tool"})
        seen.append("rpc error")
        with pytest.raises(RequestTimeout):
            await client.call_tool("forever", max_duration=5)
        seen.append("timeout")
        with trio.move_on_after(5) as scope:
            await client.call_tool("forever")
        seen.append(f"cancelled {scope.cancelled_caught}")
        records = [r for r in client.session.requests() if r.method == "tools/call"]
        seen.append(" ".join(r.state.value for r in records))
    with pytest.raises(SessionClosed):
        await client.ping()
    seen.append("closed")
    return seen


@pytest.mark.parametrize("restrict", [False, True])
def test_the_public_api_under_either_keyboard_interrupt_mode(restrict: bool) -> None:
    """T-09: the same scenario, and the same outcomes, whether a
    KeyboardInterrupt may land anywhere or only at checkpoints."""
    clock = trio.testing.MockClock(autojump_threshold=0)
    seen = trio.run(
        scenario,
        clock=clock,
        strict_exception_groups=True,
        restrict_keyboard_interrupt_to_checkpoints=restrict,
    )
    states = " ".join(
        s.value
        for s in (
            RequestState.COMPLETED,
            RequestState.COMPLETED,
            RequestState.FAILED,
            RequestState.CANCELLED,
            RequestState.CANCELLED,
        )
    )
    assert seen == [
        "result {'result': 5}",
        "tool error True",
        "rpc error",
        "timeout",
        "cancelled True",
        states,
        "closed",
    ]
