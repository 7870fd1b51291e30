"""Every rule check_transport checks fails for a transport that breaks it.

Each broken transport wraps the in-memory transport and breaks exactly one rule
of the contract in ``src/trio_mcp/_transport.py``; check_transport must name that
rule in its AssertionError.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio

from trio_mcp._transport import Transport
from trio_mcp.lowlevel import Network
from trio_mcp.testing import (
    MemoryTransport,
    PairFactory,
    check_transport,
    memory_pair,
    memory_transport_pair,
)


class _Wrapped(trio.abc.Channel[bytes]):
    """The in-memory transport, unchanged; each subclass breaks one rule."""

    def __init__(self, inner: MemoryTransport) -> None:
        self.inner = inner

    async def send(self, value: bytes) -> None:
        await self.inner.send(value)

    async def receive(self) -> bytes:
        return await self.inner.receive()

    async def aclose(self) -> None:
        await self.inner.aclose()


class _Reorders(_Wrapped):
    held: bytes | None = None

    async def send(self, value: bytes) -> None:
        if self.held is None:
            self.held = value
            await trio.lowlevel.checkpoint()
            return
        held, self.held = self.held, None
        await self.inner.send(value)
        await self.inner.send(held)


class _ManglesUtf8(_Wrapped):
    async def send(self, value: bytes) -> None:
        await self.inner.send(value.decode().encode("ascii", "replace"))


class _Truncates(_Wrapped):
    async def send(self, value: bytes) -> None:
        await self.inner.send(value[:1000])


class _ReplacesNewlines(_Wrapped):
    async def send(self, value: bytes) -> None:
        await self.inner.send(value.replace(b"\n", b" "))


class _RefusesNewlinesLate(_Wrapped):
    async def send(self, value: bytes) -> None:
        head, newline, _ = value.partition(b"\n")
        if newline:
            await self.inner.send(head)
            raise ValueError("newline")
        await self.inner.send(value)


class _NotACheckpointToSend(_Wrapped):
    async def send(self, value: bytes) -> None:
        self.inner.send_nowait(value)


class _NotACheckpointToReceive(_Wrapped):
    async def receive(self) -> bytes:
        try:
            return self.inner.receive_nowait()
        except trio.WouldBlock:
            return await self.inner.receive()


class _NotACheckpointToCloseTwice(_Wrapped):
    closed = False

    async def aclose(self) -> None:
        if not self.closed:
            self.closed = True
            await self.inner.aclose()


class _BrokenByACancelledReceive(_Wrapped):
    poisoned = False

    async def receive(self) -> bytes:
        if self.poisoned:
            await trio.lowlevel.checkpoint()
            return b"{}"
        try:
            return await self.inner.receive()
        except trio.Cancelled:
            self.poisoned = True
            raise


class _SendsThenChecksForCancel(_Wrapped):
    async def send(self, value: bytes) -> None:
        self.inner.send_nowait(value)
        await trio.lowlevel.checkpoint()


class _NoEndOfChannel(_Wrapped):
    async def receive(self) -> bytes:
        try:
            return await self.inner.receive()
        except trio.EndOfChannel:
            return b""


class _CloseDoesNotWakeReceive(_Wrapped):
    async def aclose(self) -> None:
        self.inner._send_channel.close()  # the receive side stays open
        await trio.lowlevel.checkpoint()


class _SendsAfterClose(_Wrapped):
    closed = False

    async def send(self, value: bytes) -> None:
        await trio.lowlevel.checkpoint()
        if not self.closed:
            await self.inner.send(value)

    async def aclose(self) -> None:
        self.closed = True
        await self.inner.aclose()


class _ReceivesEndAfterClose(_Wrapped):
    async def receive(self) -> bytes:
        try:
            return await self.inner.receive()
        except trio.ClosedResourceError:
            raise trio.EndOfChannel from None


class _CancelledCloseDoesNotClose(_Wrapped):
    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()
        await self.inner.aclose()


class _CloseDoesNotWakeSend(_Wrapped):
    async def aclose(self) -> None:
        await self.inner._receive_channel.aclose()  # the send side stays open


class _SwallowsCancelledSend(_Wrapped):
    async def send(self, value: bytes) -> None:
        try:
            await self.inner.send(value)
        except trio.Cancelled:
            return  # the bug under test: the caller never learns it was cancelled


class _NowaitDropsFrames(_Wrapped):
    def send_nowait(self, value: bytes) -> None:
        pass  # the bug under test: the frame is never sent

    def receive_nowait(self) -> bytes:
        return self.inner.receive_nowait()


class _NowaitSendsAfterClose(_Wrapped):
    closed = False

    def send_nowait(self, value: bytes) -> None:
        if not self.closed:
            self.inner.send_nowait(value)

    async def aclose(self) -> None:
        self.closed = True
        await self.inner.aclose()


class _NowaitIgnoresClog(_Wrapped):
    def send_nowait(self, value: bytes) -> None:
        # The bug under test: "sent", and the frame is gone.
        with contextlib.suppress(trio.WouldBlock):
            self.inner.send_nowait(value)


class _FlushPendingOnAFreshEnd(_Wrapped):
    def send_nowait(self, value: bytes) -> None:
        self.inner.send_nowait(value)

    def flush_pending(self) -> bool:
        return True  # the bug under test: nothing was ever sent

    async def flush(self) -> None:
        await trio.lowlevel.checkpoint()


class _BoundNotSettable(_Wrapped):
    max_message_size = 100

    def set_max_message_size(self, size: int) -> None:
        pass  # the bug under test: the bound stays as it was


class _NetworkOfNoKind(_Wrapped):
    @property
    def network(self) -> Network:
        return Network("carrier pigeon")  # type: ignore[arg-type]  # the bug under test


def _factory(broken: type[_Wrapped], buffer: int = 64) -> PairFactory:
    @asynccontextmanager
    async def pair() -> AsyncIterator[tuple[Transport, Transport]]:
        a, b = memory_transport_pair(buffer)
        try:
            yield broken(a), broken(b)
        finally:
            await a.aclose()
            await b.aclose()

    return pair


#: (broken transport, the rule's words in the failure, whether it is the clogged pair)
BROKEN = [
    (_Reorders, "out of order", False),
    (_ManglesUtf8, "non-ASCII", False),
    (_Truncates, "large frame", False),
    (_ReplacesNewlines, "holding a newline arrived as", False),
    (_RefusesNewlinesLate, "refused frame left", False),
    (_NotACheckpointToSend, "did not yield", False),
    (_NotACheckpointToReceive, "did not yield", False),
    (_NotACheckpointToCloseTwice, "did not yield", False),
    (_BrokenByACancelledReceive, "broken after a cancelled receive", False),
    (_SendsThenChecksForCancel, "cancelled before it began delivered", False),
    (_NoEndOfChannel, "receive after the peer closed", False),
    (_CloseDoesNotWakeReceive, "did not wake the task blocked in receive", False),
    (_SendsAfterClose, "send on a closed end", False),
    (_ReceivesEndAfterClose, "receive on a closed end", False),
    (_CancelledCloseDoesNotClose, "send after a cancelled aclose", False),
    (_NowaitDropsFrames, "sent by send_nowait", False),
    (_NowaitSendsAfterClose, "send_nowait on a closed end", False),
    (_FlushPendingOnAFreshEnd, r"flush_pending\(\) is True on an end that sent nothing", False),
    (_BoundNotSettable, "set_max_message_size did not change the bound", False),
    (_NetworkOfNoKind, "network.transport is 'carrier pigeon'", False),
    (_CloseDoesNotWakeSend, "did not wake the task blocked in send", True),
    (_NowaitIgnoresClog, "send_nowait on a clogged pair returned", True),
    (_SwallowsCancelledSend, "returned with nobody receiving", True),
]


@pytest.mark.parametrize(("broken", "rule", "clogged"), BROKEN, ids=[b[0].__name__ for b in BROKEN])
async def test_check_transport_fails(
    broken: type[_Wrapped], rule: str, clogged: bool, autojump_clock: trio.abc.Clock
) -> None:
    pairs: PairFactory
    clogged_pairs: PairFactory | None
    if clogged:
        pairs, clogged_pairs = memory_pair, _factory(broken, buffer=0)
    else:
        pairs, clogged_pairs = _factory(broken), None
    with pytest.raises(AssertionError, match=rule):
        await check_transport(pairs, clogged=clogged_pairs)


async def test_a_pair_without_back_pressure_is_not_clogged(autojump_clock: trio.abc.Clock) -> None:
    with pytest.raises(AssertionError, match="returned before the peer received"):
        await check_transport(memory_pair, clogged=memory_pair)
