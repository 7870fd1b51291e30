"""An in-memory transport pair, for tests, benchmarks and embedding."""

from __future__ import annotations

import trio


class MemoryTransport(trio.abc.Channel[bytes]):
    """One end of an in-memory transport. Made by :func:`memory_transport_pair`.

    Closing one end makes the other end's ``receive`` raise ``EndOfChannel``
    (after it has drained what was already sent), like a closed pipe; a task
    blocked in ``receive`` or ``send`` on the end being closed gets
    ``ClosedResourceError``.

    Cancellation:
        ``send`` and ``receive`` are checkpoints, as a trio memory channel's:
        a cancelled ``send`` delivered nothing and a cancelled ``receive`` took
        nothing. ``send_nowait`` and ``receive_nowait`` never yield (see the
        transport contract's fast path). ``aclose`` is a checkpoint and closes
        even when cancelled.
    """

    def __init__(
        self,
        send_channel: trio.MemorySendChannel[bytes],
        receive_channel: trio.MemoryReceiveChannel[bytes],
    ) -> None:
        self._send_channel = send_channel
        self._receive_channel = receive_channel
        # The channels' own methods, bound on the instance: the methods below
        # only delegate, and each call through one was a Python frame more on
        # every frame each way (four a tools/call). They stay as
        # the documented, typed interface.
        self.send = send_channel.send  # type: ignore[method-assign]
        self.send_nowait = send_channel.send_nowait  # type: ignore[method-assign]
        self.receive = receive_channel.receive  # type: ignore[method-assign]
        self.receive_nowait = receive_channel.receive_nowait  # type: ignore[method-assign]

    async def send(self, value: bytes) -> None:
        await self._send_channel.send(value)

    def send_nowait(self, value: bytes) -> None:
        """Send *value* if the buffer has room, else raise ``trio.WouldBlock``."""
        self._send_channel.send_nowait(value)

    async def receive(self) -> bytes:
        return await self._receive_channel.receive()

    def receive_nowait(self) -> bytes:
        """A frame already sent, else raise ``trio.WouldBlock``."""
        return self._receive_channel.receive_nowait()

    async def aclose(self) -> None:
        self._send_channel.close()
        await self._receive_channel.aclose()


def memory_transport_pair(buffer: int = 64) -> tuple[MemoryTransport, MemoryTransport]:
    """Two connected transports: what one sends, the other receives.

    ``buffer`` bounds the frames in flight per direction (0 makes every send a
    rendezvous: a *clogged* pair for :func:`check_transport`).
    """
    a_send, b_receive = trio.open_memory_channel[bytes](buffer)
    b_send, a_receive = trio.open_memory_channel[bytes](buffer)
    return MemoryTransport(a_send, a_receive), MemoryTransport(b_send, b_receive)
