"""An in-memory transport pair, for tests, benchmarks and embedding."""

from __future__ import annotations

import trio


class MemoryTransport(trio.abc.Channel[bytes]):
    """One end of an in-memory transport. Made by :func:`memory_transport_pair`.

    Closing one end makes the other end's ``receive`` raise ``EndOfChannel``
    (after it has drained what was already sent), like a closed pipe.
    """

    def __init__(
        self,
        send_channel: trio.MemorySendChannel[bytes],
        receive_channel: trio.MemoryReceiveChannel[bytes],
    ) -> None:
        self._send_channel = send_channel
        self._receive_channel = receive_channel

    async def send(self, value: bytes) -> None:
        # Like a pipe with room in its buffer: no scheduler round trip when the
        # frame fits, but still a cancellation point.
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            self._send_channel.send_nowait(value)
        except trio.WouldBlock:
            await self._send_channel.send(value)

    async def receive(self) -> bytes:
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            return self._receive_channel.receive_nowait()
        except trio.WouldBlock:
            return await self._receive_channel.receive()

    async def aclose(self) -> None:
        await self._send_channel.aclose()
        await self._receive_channel.aclose()


def memory_transport_pair(buffer: int = 64) -> tuple[MemoryTransport, MemoryTransport]:
    """Two connected transports: what one sends, the other receives.

    ``buffer`` bounds the frames in flight per direction (0 makes every send a
    rendezvous, handy for testing back-pressure).
    """
    a_send, b_receive = trio.open_memory_channel[bytes](buffer)
    b_send, a_receive = trio.open_memory_channel[bytes](buffer)
    return MemoryTransport(a_send, a_receive), MemoryTransport(b_send, b_receive)
