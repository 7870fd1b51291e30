"""Testing your server with pytest and trio_mcp.testing.

Run with ``pytest testing_my_server.py`` (pytest-trio runs the async tests).
``open_memory_client`` connects a real client to your server in memory: the
same code paths as over stdio, no process, no port.
"""

import pytest
import trio

from trio_mcp import Context, Server
from trio_mcp.testing import open_memory_client

server = Server("under-test")


@server.tool()
async def divide(a: float, b: float) -> float:
    """Divide a by b."""
    if b == 0:
        raise ValueError("division by zero")
    return a / b


@server.tool()
async def wait(ctx: Context, seconds: float) -> str:
    """Wait, then say so."""
    await trio.sleep(seconds)
    return "waited"


@pytest.mark.trio
async def test_divide() -> None:
    async with open_memory_client(server) as client:
        result = await client.call_tool("divide", {"a": 6, "b": 3})
        assert not result.is_error
        assert result.content[0].text == "2.0"


@pytest.mark.trio
async def test_a_failing_tool_is_an_error_result() -> None:
    async with open_memory_client(server) as client:
        result = await client.call_tool("divide", {"a": 1, "b": 0})
        assert result.is_error


@pytest.mark.trio
async def test_a_cancelled_call_is_recorded(autojump_clock: trio.abc.Clock) -> None:
    # autojump_clock: trio skips ahead whenever every task waits, so this takes no time.
    async with open_memory_client(server) as client:
        with trio.move_on_after(1):
            await client.call_tool("wait", {"seconds": 60})
        [call] = [r for r in client.session.requests() if r.method == "tools/call"]
        assert call.state.value == "cancelled"
        assert call.cancel_origin.value == "deadline"
