"""``check_transport``: the conformance checks every transport must pass.

Modelled on ``trio.testing.check_two_way_stream``: give it a factory of
connected pairs and it checks the contract of
:data:`trio_mcp.lowlevel.Transport` end to end.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import trio

from .._transport import Transport

#: Makes a connected pair (as an async context manager that cleans up after).
PairFactory = Callable[[], AbstractAsyncContextManager[tuple[Transport, Transport]]]

#: A frame of about 1 MiB, and one with non-ASCII text.
LARGE_FRAME = b'{"jsonrpc":"2.0","method":"x","params":{"data":"' + b"a" * (1 << 20) + b'"}}'
UTF8_FRAME = '{"jsonrpc":"2.0","method":"x","params":{"text":"žluťoučký kůň 🐎"}}'.encode()


async def check_transport(make_pair: PairFactory, *, large: bool = True) -> None:
    """Run every check against fresh pairs from *make_pair*; raise AssertionError on failure.

    Checks: frames arrive whole and in order both ways; non-ASCII UTF-8 survives;
    a ~1 MiB frame survives (unless ``large=False``); a blocked ``receive`` can be
    cancelled and the transport still works afterwards; closing one end gives the
    other ``EndOfChannel`` after what was already sent; ``aclose`` is idempotent;
    using a closed end raises ``ClosedResourceError``.
    """
    checks: list[Callable[[Transport, Transport], Awaitable[None]]] = [
        _order_both_ways,
        _utf8,
        _cancel_blocked_receive,
        _eof_after_close,
        _closed_end_refuses,
    ]
    if large:
        checks.append(_large_frame)
    for check in checks:
        async with make_pair() as (a, b):
            with trio.fail_after(30):
                await check(a, b)


async def _order_both_ways(a: Transport, b: Transport) -> None:
    frames = [f'{{"jsonrpc":"2.0","method":"n","params":{{"i":{i}}}}}'.encode() for i in range(50)]

    async def send_all(end: Transport) -> None:
        for frame in frames:
            await end.send(frame)

    async def receive_all(end: Transport) -> list[bytes]:
        return [bytes(await end.receive()) for _ in frames]

    async with trio.open_nursery() as nursery:
        nursery.start_soon(send_all, a)
        nursery.start_soon(send_all, b)
        got_b = await receive_all(b)
        got_a = await receive_all(a)
    assert got_b == frames, "frames from a to b arrived changed or out of order"
    assert got_a == frames, "frames from b to a arrived changed or out of order"


async def _utf8(a: Transport, b: Transport) -> None:
    await a.send(UTF8_FRAME)
    assert bytes(await b.receive()) == UTF8_FRAME, "non-ASCII UTF-8 frame changed in transit"


async def _large_frame(a: Transport, b: Transport) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(a.send, LARGE_FRAME)
        got = bytes(await b.receive())
    assert got == LARGE_FRAME, f"large frame changed in transit ({len(got)} bytes arrived)"


async def _cancel_blocked_receive(a: Transport, b: Transport) -> None:
    with trio.move_on_after(0.1) as scope:
        await b.receive()
    assert scope.cancelled_caught, "receive returned with nothing sent"
    await a.send(UTF8_FRAME)
    assert bytes(await b.receive()) == UTF8_FRAME, "transport broken after a cancelled receive"


async def _eof_after_close(a: Transport, b: Transport) -> None:
    await a.send(UTF8_FRAME)
    await a.aclose()
    await a.aclose()  # idempotent
    assert bytes(await b.receive()) == UTF8_FRAME, "a frame sent before close was lost"
    try:
        await b.receive()
    except (trio.EndOfChannel, trio.BrokenResourceError):
        return
    raise AssertionError("receive after the peer closed did not signal end of channel")


async def _closed_end_refuses(a: Transport, b: Transport) -> None:
    await a.aclose()
    try:
        await a.send(UTF8_FRAME)
    except trio.ClosedResourceError:
        return
    raise AssertionError("send on a closed transport did not raise ClosedResourceError")


@asynccontextmanager
async def memory_pair() -> AsyncIterator[tuple[Transport, Transport]]:
    """A :data:`PairFactory` for the in-memory transport."""
    from ._memory import memory_transport_pair

    a, b = memory_transport_pair()
    try:
        yield a, b
    finally:
        await a.aclose()
        await b.aclose()
