"""The in-memory transport passes the transport conformance checks."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio

from trio_mcp._transport import Transport
from trio_mcp.testing import check_transport, memory_pair, memory_transport_pair


@asynccontextmanager
async def clogged_memory_pair() -> AsyncIterator[tuple[Transport, Transport]]:
    a, b = memory_transport_pair(buffer=0)
    try:
        yield a, b
    finally:
        await a.aclose()
        await b.aclose()


async def test_memory_transport_passes_check_transport(autojump_clock: trio.abc.Clock) -> None:
    await check_transport(memory_pair, clogged=clogged_memory_pair)


async def test_memory_transport_rendezvous_blocks_until_received() -> None:
    a, b = memory_transport_pair(buffer=0)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(a.send, b"{}")
        await trio.testing.wait_all_tasks_blocked()
        # With no buffer the sender waits for the receiver (back-pressure).
        assert await b.receive() == b"{}"


async def test_memory_transport_nowait_fast_path() -> None:
    a, b = memory_transport_pair(buffer=1)
    with pytest.raises(trio.WouldBlock):
        b.receive_nowait()
    with trio.testing.assert_no_checkpoints():
        a.send_nowait(b"{}")
        with pytest.raises(trio.WouldBlock):
            a.send_nowait(b"[]")  # the buffer of one is full
        assert b.receive_nowait() == b"{}"
    await a.aclose()
    with pytest.raises(trio.EndOfChannel):
        b.receive_nowait()
    with pytest.raises(trio.ClosedResourceError):
        a.send_nowait(b"{}")


class _TruncatingTransport(trio.abc.Channel[bytes]):
    """A deliberately broken transport: it cuts long frames."""

    def __init__(self, inner: trio.abc.Channel[bytes]) -> None:
        self.inner = inner

    async def send(self, value: bytes) -> None:
        await self.inner.send(value[:1000])

    async def receive(self) -> bytes:
        return await self.inner.receive()

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_check_transport_catches_a_broken_transport(autojump_clock: trio.abc.Clock) -> None:
    @asynccontextmanager
    async def broken_pair() -> AsyncIterator[tuple[trio.abc.Channel[bytes], ...]]:
        a, b = memory_transport_pair()
        yield _TruncatingTransport(a), _TruncatingTransport(b)

    with pytest.raises(AssertionError, match="large frame"):
        await check_transport(broken_pair)  # type: ignore[arg-type]
