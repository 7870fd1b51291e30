"""``check_transport``: the conformance checks every transport must pass.

Modelled on ``trio.testing.check_two_way_stream``: give it a factory of
connected pairs (and, optionally, of *clogged* pairs) and it checks the contract
of :data:`trio_mcp.lowlevel.Transport` written in ``src/trio_mcp/_transport.py``,
end to end. It raises :class:`AssertionError` on the first broken rule and
depends on nothing but trio, so it runs under any test runner.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager, suppress
from functools import partial

import trio
from trio.testing import assert_checkpoints, assert_no_checkpoints, wait_all_tasks_blocked

from .._transport import (
    BoundedTransport,
    FlushingTransport,
    Network,
    NetworkTransport,
    NowaitReceiveTransport,
    NowaitSendTransport,
    Transport,
)
from .._util import reraise_unwrapped

#: Makes a connected pair (as an async context manager that cleans up after).
PairFactory = Callable[[], AbstractAsyncContextManager[tuple[Transport, Transport]]]

#: A frame of about 1 MiB, and one with non-ASCII text.
LARGE_FRAME = b'{"jsonrpc":"2.0","method":"x","params":{"data":"' + b"a" * (1 << 20) + b'"}}'
UTF8_FRAME = '{"jsonrpc":"2.0","method":"x","params":{"text":"žluťoučký kůň 🐎"}}'.encode()
#: Valid JSON with a newline between tokens, which the contract lets a transport refuse.
NEWLINE_FRAME = b'{"jsonrpc":"2.0",\n"method":"x"}'
#: Frames that tell one check's traffic apart from another's.
FIRST_FRAME = b'{"jsonrpc":"2.0","method":"first"}'
SECOND_FRAME = b'{"jsonrpc":"2.0","method":"second"}'

#: Seconds a blocked task may take to wake once its end is closed, or a frame to arrive.
WAKE_TIMEOUT = 10

Check = Callable[[Transport, Transport], Awaitable[None]]


async def check_transport(
    make_pair: PairFactory,
    *,
    clogged: PairFactory | None = None,
    large: bool = True,
) -> None:
    """Check the transport contract against fresh pairs; raise AssertionError on failure.

    Each check runs on a new pair ``(a, b)`` from *make_pair*, bounded by a
    30-second deadline; where the two ends differ (a client and a server), run
    it again with a factory that yields them the other way round. Every
    ``send``, ``receive`` and ``aclose`` that returns normally must be a
    checkpoint (``trio.testing.assert_checkpoints``). The checks: frames arrive
    whole and in order both ways; non-ASCII UTF-8 survives; a ~1 MiB frame
    survives (unless ``large=False``); a frame holding a newline is refused with
    ``ValueError`` before anything is written, or delivered unchanged; a blocked
    ``receive`` can be cancelled and the transport still works afterwards; a
    ``send`` in an already cancelled scope raises ``Cancelled`` and delivers
    nothing; closing one end gives the other ``EndOfChannel`` (or
    ``BrokenResourceError``) after what was already sent; ``aclose`` while
    another task is blocked in ``receive`` wakes that task with
    ``ClosedResourceError`` or ``EndOfChannel``; ``send`` and ``receive`` on a
    closed end raise ``ClosedResourceError``; ``aclose`` is idempotent and
    closes even when cancelled.

    The optional parts are checked where an end's class offers them (the
    protocols of :mod:`trio_mcp.lowlevel`): with
    :class:`~trio_mcp.lowlevel.NowaitSendTransport` and
    :class:`~trio_mcp.lowlevel.NowaitReceiveTransport`, ``send_nowait`` and
    ``receive_nowait`` never yield, move frames like ``send`` and ``receive``
    (or raise ``WouldBlock``) and raise ``ClosedResourceError`` on a closed
    end; with :class:`~trio_mcp.lowlevel.FlushingTransport`, nothing is
    pending on a fresh end and ``flush`` is then a checkpoint; with
    :class:`~trio_mcp.lowlevel.BoundedTransport`, ``max_message_size`` is
    positive, ``set_max_message_size`` changes it and refuses 0 with
    ``ValueError``; with :class:`~trio_mcp.lowlevel.NetworkTransport`,
    ``network`` is a :class:`~trio_mcp.lowlevel.Network` whose transport is
    ``pipe`` or ``tcp``.

    *clogged*, if given, makes pairs whose first end's ``send`` blocks until the
    second end receives. With it: a blocked ``send`` returns once the peer
    receives (back-pressure); ``aclose`` wakes a task blocked in ``send`` with
    ``ClosedResourceError``; a blocked ``send`` that is cancelled raises
    ``Cancelled``, after which ``aclose`` still works; and, where the end
    offers ``send_nowait``, it raises ``WouldBlock`` without yielding and
    delivers nothing, or (a :class:`~trio_mcp.lowlevel.FlushingTransport`)
    takes part of the frame and says so with ``flush_pending``; either way the
    frame arrives whole once the peer receives.

    Cancellation:
        Each check runs in its own ``trio.fail_after(30)``; cancelling the
        caller cancels the current check, and the factory's context manager
        cleans that pair up.
    """
    checks: list[Check] = [
        _order_both_ways,
        _utf8,
        _newline_frame,
        _cancel_blocked_receive,
        _cancelled_send_delivers_nothing,
        _eof_after_close,
        _close_wakes_blocked_receive,
        _closed_end_refuses,
        _cancelled_aclose_still_closes,
        _nowait_fast_path,
        _flushing_starts_empty,
        _bound_is_settable,
        _network_is_described,
    ]
    if large:
        checks.append(_large_frame)
    for check in checks:
        async with make_pair() as (a, b), _first_failure():
            with trio.fail_after(30):
                await check(a, b)
    if clogged is not None:
        for clogged_check in (
            _clogged_send_waits_for_receive,
            _close_wakes_blocked_send,
            _cancelled_blocked_send,
            _clogged_send_nowait_would_block,
        ):
            async with clogged() as (a, b), _first_failure():
                with trio.fail_after(30):
                    await clogged_check(a, b)


# ------------------------------------------------------------ checked operations


async def _send(end: Transport, frame: bytes) -> None:
    with assert_checkpoints():
        result = await end.send(frame)  # type: ignore[func-returns-value]
    assert result is None, f"send returned {result!r}, not None"


async def _receive(end: Transport) -> bytes:
    with assert_checkpoints():
        frame = await end.receive()
    assert isinstance(frame, (bytes, bytearray)), f"receive returned {type(frame).__name__}"
    return bytes(frame)


async def _aclose(end: Transport) -> None:
    with assert_checkpoints():
        await end.aclose()


@asynccontextmanager
async def _first_failure() -> AsyncIterator[None]:
    """Re-raise the first broken rule of a check out of the groups its nurseries make."""
    try:
        yield
    except BaseExceptionGroup as group:
        failures, _ = group.split(AssertionError)
        if failures is None:
            reraise_unwrapped(group)
        first: BaseException = failures
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        raise first from None


@contextmanager
def _raises(*expected: type[BaseException], doing: str) -> Iterator[None]:
    """Like ``pytest.raises``, without the pytest dependency."""
    names = " or ".join(e.__name__ for e in expected)
    try:
        yield
    except expected:
        return
    except Exception as exc:
        raise AssertionError(f"{doing} raised {exc!r}, not {names}") from exc
    raise AssertionError(f"{doing} did not raise {names}")


async def _cancelled_once_blocked(blocked: Callable[[], Awaitable[object]]) -> bool:
    """Run *blocked*, cancel it once every task is blocked: whether it raised Cancelled
    (False if it returned, even after the cancel)."""
    returned = False
    with trio.CancelScope() as scope:

        async def cancel_when_blocked() -> None:
            await wait_all_tasks_blocked()
            scope.cancel()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(cancel_when_blocked)
            await blocked()
            returned = True
            nursery.cancel_scope.cancel()
    return scope.cancelled_caught and not returned


async def _close_wakes(
    end: Transport,
    blocked: Callable[[], Awaitable[object]],
    wakes_with: tuple[type[BaseException], ...],
    what: str,
) -> None:
    """Close *end* while a task is blocked in *blocked*: that task must wake with *wakes_with*."""
    woken = trio.Event()

    async def block_until_woken() -> None:
        try:
            await blocked()
        except wakes_with:
            woken.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(block_until_woken)
        await wait_all_tasks_blocked()
        await _aclose(end)
        with trio.move_on_after(WAKE_TIMEOUT):
            await woken.wait()
        nursery.cancel_scope.cancel()
    assert woken.is_set(), f"aclose did not wake the task blocked in {what}"


# -------------------------------------------------------------------- the checks


async def _order_both_ways(a: Transport, b: Transport) -> None:
    frames = [f'{{"jsonrpc":"2.0","method":"n","params":{{"i":{i}}}}}'.encode() for i in range(50)]

    async def send_all(end: Transport) -> None:
        for frame in frames:
            await _send(end, frame)

    async def receive_all(end: Transport) -> list[bytes]:
        return [await _receive(end) for _ in frames]

    async with trio.open_nursery() as nursery:
        nursery.start_soon(send_all, a)
        nursery.start_soon(send_all, b)
        got_b = await receive_all(b)
        got_a = await receive_all(a)
    assert got_b == frames, "frames from one end arrived changed or out of order"
    assert got_a == frames, "frames from the other end arrived changed or out of order"


async def _utf8(a: Transport, b: Transport) -> None:
    await _send(a, UTF8_FRAME)
    assert await _receive(b) == UTF8_FRAME, "non-ASCII UTF-8 frame changed in transit"


async def _large_frame(a: Transport, b: Transport) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_send, a, LARGE_FRAME)
        got = await _receive(b)
    assert got == LARGE_FRAME, f"large frame changed in transit ({len(got)} bytes arrived)"


async def _newline_frame(a: Transport, b: Transport) -> None:
    try:
        await _send(a, NEWLINE_FRAME)
    except ValueError:
        # Refused: nothing of it may have been written.
        await _send(a, FIRST_FRAME)
        got = await _receive(b)
        assert got == FIRST_FRAME, f"a refused frame left {got!r} on the wire"
        return
    got = await _receive(b)
    assert got == NEWLINE_FRAME, f"a frame holding a newline arrived as {got!r}"


async def _cancel_blocked_receive(a: Transport, b: Transport) -> None:
    assert await _cancelled_once_blocked(b.receive), "receive returned with nothing sent"
    await _send(a, UTF8_FRAME)
    assert await _receive(b) == UTF8_FRAME, "transport broken after a cancelled receive"


async def _cancelled_send_delivers_nothing(a: Transport, b: Transport) -> None:
    with trio.CancelScope() as scope:
        scope.cancel()
        await a.send(FIRST_FRAME)
    assert scope.cancelled_caught, "send in a cancelled scope did not raise Cancelled"
    await _send(a, SECOND_FRAME)
    got = await _receive(b)
    assert got == SECOND_FRAME, f"a send cancelled before it began delivered {got!r}"


async def _eof_after_close(a: Transport, b: Transport) -> None:
    await _send(a, UTF8_FRAME)
    await _aclose(a)
    await _aclose(a)  # idempotent
    assert await _receive(b) == UTF8_FRAME, "a frame sent before close was lost"
    with _raises(
        trio.EndOfChannel, trio.BrokenResourceError, doing="receive after the peer closed"
    ):
        await b.receive()


async def _close_wakes_blocked_receive(a: Transport, b: Transport) -> None:
    await _close_wakes(b, b.receive, (trio.ClosedResourceError, trio.EndOfChannel), "receive")


async def _closed_end_refuses(a: Transport, b: Transport) -> None:
    await _aclose(a)
    with _raises(trio.ClosedResourceError, doing="send on a closed end"):
        await _send(a, UTF8_FRAME)
    with _raises(trio.ClosedResourceError, doing="receive on a closed end"):
        await _receive(a)
    await _aclose(a)


async def _cancelled_aclose_still_closes(a: Transport, b: Transport) -> None:
    with trio.CancelScope() as scope:
        scope.cancel()
        await a.aclose()
    with _raises(trio.ClosedResourceError, doing="send after a cancelled aclose"):
        await _send(a, UTF8_FRAME)


async def _nowait_fast_path(a: Transport, b: Transport) -> None:
    send_nowait = a.send_nowait if isinstance(a, NowaitSendTransport) else None
    receive_nowait = b.receive_nowait if isinstance(b, NowaitReceiveTransport) else None
    for frame in (FIRST_FRAME, SECOND_FRAME):
        sent = False
        if send_nowait is not None:
            with assert_no_checkpoints():
                try:
                    send_nowait(frame)
                    sent = True
                except trio.WouldBlock:
                    pass
        if not sent:
            await _send(a, frame)
    first = None
    with trio.move_on_after(WAKE_TIMEOUT):
        first = await _receive(b)
    assert first == FIRST_FRAME, f"the first frame (sent by send_nowait) arrived as {first!r}"
    got: bytes | None = None
    if receive_nowait is not None:
        with assert_no_checkpoints(), suppress(trio.WouldBlock):
            got = bytes(receive_nowait())
    if got is None:
        got = await _receive(b)
    assert got == SECOND_FRAME, f"the second frame arrived as {got!r}"
    await _aclose(a)
    await _aclose(b)
    if send_nowait is not None:
        with _raises(trio.ClosedResourceError, doing="send_nowait on a closed end"):
            send_nowait(FIRST_FRAME)
    if receive_nowait is not None:
        with _raises(trio.ClosedResourceError, doing="receive_nowait on a closed end"):
            receive_nowait()


async def _flushing_starts_empty(a: Transport, b: Transport) -> None:
    if not isinstance(a, FlushingTransport):
        return
    assert not a.flush_pending(), "flush_pending() is True on an end that sent nothing"
    with assert_checkpoints():
        await a.flush()
    await _send(a, FIRST_FRAME)
    assert await _receive(b) == FIRST_FRAME, "a frame sent after an empty flush changed"


async def _bound_is_settable(a: Transport, b: Transport) -> None:
    for end in (a, b):
        if not isinstance(end, BoundedTransport):
            continue
        bound = end.max_message_size
        assert isinstance(bound, int), f"max_message_size is {bound!r}, not an int"
        assert bound > 0, f"max_message_size is {bound!r}"
        end.set_max_message_size(bound + 1)
        assert end.max_message_size == bound + 1, "set_max_message_size did not change the bound"
        with _raises(ValueError, doing="set_max_message_size(0)"):
            end.set_max_message_size(0)
        end.set_max_message_size(bound)


async def _network_is_described(a: Transport, b: Transport) -> None:
    for end in (a, b):
        if not isinstance(end, NetworkTransport):
            continue
        network = end.network
        assert isinstance(network, Network), f"network is {network!r}, not a Network"
        assert network.transport in ("pipe", "tcp"), f"network.transport is {network.transport!r}"
    await trio.lowlevel.checkpoint()


async def _clogged_send_waits_for_receive(a: Transport, b: Transport) -> None:
    sent = trio.Event()

    async def send_then_note() -> None:
        await _send(a, FIRST_FRAME)
        sent.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(send_then_note)
        await wait_all_tasks_blocked()
        assert not sent.is_set(), "send on a clogged pair returned before the peer received"
        assert await _receive(b) == FIRST_FRAME, "the frame of a blocked send changed"
    assert sent.is_set(), "send on a clogged pair did not return once the peer received"


async def _close_wakes_blocked_send(a: Transport, b: Transport) -> None:
    await _close_wakes(a, partial(a.send, FIRST_FRAME), (trio.ClosedResourceError,), "send")


async def _cancelled_blocked_send(a: Transport, b: Transport) -> None:
    cancelled = await _cancelled_once_blocked(partial(a.send, FIRST_FRAME))
    assert cancelled, "a send on a clogged pair returned with nobody receiving"
    # The contract allows the transport to be broken now, but aclose must work.
    await _aclose(a)


async def _clogged_send_nowait_would_block(a: Transport, b: Transport) -> None:
    # Each read apart: a type checker cannot intersect the channel with both.
    flushing = a if isinstance(a, FlushingTransport) else None
    nowait = a if isinstance(a, NowaitSendTransport) else None
    if nowait is None:
        return
    taken = False
    with assert_no_checkpoints():
        try:
            nowait.send_nowait(FIRST_FRAME)
            taken = True
        except trio.WouldBlock:
            pass
    if taken and not (flushing is not None and flushing.flush_pending()):
        # Sent whole, which a clogged pair cannot do unless the peer receives.
        got = None
        with trio.move_on_after(WAKE_TIMEOUT):
            got = await _receive(b)
        assert got == FIRST_FRAME, (
            f"send_nowait on a clogged pair returned, and {got!r} arrived, not its frame"
        )
        return

    async def deliver_the_rest() -> None:
        if taken:
            assert flushing is not None  # it said part was pending
            await flushing.flush()
        else:
            await _send(a, FIRST_FRAME)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(deliver_the_rest)
        got = await _receive(b)
    what = "the rest of a frame send_nowait took in part" if taken else "a frame after WouldBlock"
    assert got == FIRST_FRAME, f"{what} arrived as {got!r}"


@asynccontextmanager
async def memory_pair() -> AsyncIterator[tuple[Transport, Transport]]:
    """A :data:`PairFactory` for the in-memory transport.

    Cancellation:
        Entering never waits; leaving, also by cancellation, closes both ends.
    """
    from ._memory import memory_transport_pair

    a, b = memory_transport_pair()
    try:
        yield a, b
    finally:
        await a.aclose()
        await b.aclose()
