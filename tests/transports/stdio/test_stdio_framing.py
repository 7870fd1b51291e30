"""Newline framing (LineChannel) over pipes: SI-02, and check_transport on a pipe pair."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio
import trio.testing
from stdio_helpers import open_fds

from trio_mcp._transport import Transport
from trio_mcp.testing import check_transport
from trio_mcp.transports import LineChannel


def _pipe_pair(max_size: int = 4 << 20) -> tuple[LineChannel, LineChannel]:
    a_to_b = os.pipe()
    b_to_a = os.pipe()
    a = LineChannel(
        trio.lowlevel.FdStream(a_to_b[1]),
        trio.lowlevel.FdStream(b_to_a[0]),
        max_message_size=max_size,
    )
    b = LineChannel(
        trio.lowlevel.FdStream(b_to_a[1]),
        trio.lowlevel.FdStream(a_to_b[0]),
        max_message_size=max_size,
    )
    return a, b


@asynccontextmanager
async def pipe_pair() -> AsyncIterator[tuple[Transport, Transport]]:
    a, b = _pipe_pair()
    try:
        yield a, b
    finally:
        await a.aclose()
        await b.aclose()


@pytest.mark.spec("SI-02")
async def test_check_transport_over_pipes() -> None:
    before = open_fds()
    await check_transport(pipe_pair)
    assert open_fds() == before


def _reader(max_size: int = 1000) -> tuple[LineChannel, trio.testing.MemorySendStream]:
    send, receive = trio.testing.memory_stream_one_way_pair()
    return LineChannel(None, receive, max_message_size=max_size), send


RECHUNK_WIRE = b'{"a":1}\r\n\n   \n{"b":"\xc5\xbe"}\n{"c"' + b':3}\n{"partial"'


def _chunkings(wire: bytes) -> list[list[bytes]]:
    """Every split of *wire* into two reads, and every fixed read size."""
    splits = [[wire[:i], wire[i:]] for i in range(1, len(wire))]
    sizes = [[wire[i : i + n] for i in range(0, len(wire), n)] for n in range(1, len(wire) + 1)]
    return splits + sizes


@pytest.mark.spec("SI-02")
@pytest.mark.parametrize("chunks", _chunkings(RECHUNK_WIRE))
async def test_reframes_any_chunking_crlf_and_blank_lines(chunks: list[bytes]) -> None:
    channel, send = _reader()
    got: list[bytes] = []

    async def read_to_the_end() -> None:
        got.extend([await channel.receive() for _ in range(3)])
        with pytest.raises(trio.EndOfChannel):
            await channel.receive()  # the partial last line is dropped

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read_to_the_end)
        for chunk in chunks:
            await send.send_all(chunk)
            # The reader takes this chunk on its own before the next is written.
            await trio.testing.wait_all_tasks_blocked()
        await send.aclose()
    assert got == [b'{"a":1}', '{"b":"ž"}'.encode(), b'{"c":3}']
    stats = channel.statistics()
    assert (stats.blank_lines, stats.discarded_tail, stats.frames_in) == (2, 10, 3)


@pytest.mark.spec("SI-02")
async def test_oversize_line_is_cut_and_the_next_line_survives() -> None:
    channel, send = _reader(max_size=100)
    await send.send_all(b"x" * 5000 + b"\n" + b'{"ok":1}\n')
    first = await channel.receive()
    assert first == b"x" * 101  # over the limit: the codec refuses it by size
    assert await channel.receive() == b'{"ok":1}'
    assert channel.statistics().oversize_lines == 1


@pytest.mark.spec("SI-06")
async def test_send_refuses_embedded_newline() -> None:
    a, b = _pipe_pair()
    async with a, b:
        with pytest.raises(ValueError, match="newline"):
            await a.send(b'{"a":\n1}')
        await a.send(b'{"a":1}')
        assert await b.receive() == b'{"a":1}'
        assert a.statistics().frames_out == 1
