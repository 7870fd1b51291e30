"""A session whose owner feeds its frames (``open_session(reader=False)``).

The owner hands each inbound frame to :meth:`Session.feed` in its own task and
ends the peer's side with :meth:`Session.feed_eof`; no reader task runs and the
transport's ``receive`` is never called. Everything else is the session's usual
work: the observer sees every frame, bad input gets its error with the
caller's id and the session goes on, and the end of the peer's side cancels a
running request with origin ``transport`` (HM-13, CN-13), as a reader's
end-of-channel does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest
import trio
import trio.testing
from helpers import FnDispatcher, Recorder, blocking_handler, server_connection

from trio_mcp import SessionClosed
from trio_mcp.lowlevel import CancelOrigin, RequestContext, RequestState, Session, open_session
from trio_mcp.protocol import FrameDirection
from trio_mcp.testing import MemoryTransport, memory_transport_pair

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


class NoReceive(trio.abc.Channel[bytes]):
    """A transport that fails the test if anything reads it (it writes
    through, as the memory transport it wraps)."""

    def __init__(self, inner: MemoryTransport) -> None:
        self.inner = inner
        self.send_nowait = inner.send_nowait

    async def send(self, value: bytes) -> None:
        await self.inner.send(value)

    async def receive(self) -> bytes:
        raise AssertionError("a fed session must never read its transport")

    async def aclose(self) -> None:
        await self.inner.aclose()


def call(request_id: Any, tool: str, *, meta: dict[str, Any] | None = META) -> bytes:
    params: dict[str, Any] = {"name": tool, "arguments": {}}
    if meta is not None:
        params["_meta"] = meta
    return orjson.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    )


@asynccontextmanager
async def fed_session(
    dispatcher: FnDispatcher, recorder: Recorder
) -> AsyncIterator[tuple[Session, MemoryTransport]]:
    """A modern stateless server session with no reader, and the peer's end
    of its transport (to read what it writes)."""
    ours, peer = memory_transport_pair()
    protocol = server_connection(stateless=MODERN, capabilities={"tools": {}})
    async with (
        peer,
        open_session(
            NoReceive(ours), protocol, dispatcher, reader=False, observer=recorder
        ) as session,
    ):
        yield session, peer


async def test_a_fed_frame_is_served_with_no_reader_task() -> None:
    async def hello(ctx: RequestContext) -> Any:
        return {"content": [{"type": "text", "text": "hi"}]}

    spawned: list[str] = []

    class Spawns(trio.abc.Instrument):
        def task_spawned(self, task: trio.lowlevel.Task) -> None:
            spawned.append(task.name)

    recorder = Recorder()
    trio.lowlevel.add_instrument(Spawns())
    async with fed_session(FnDispatcher(hello=hello), recorder) as (session, peer):
        await session.feed(call(1, "hello"))
        reply = orjson.loads(await peer.receive())
        assert reply["id"] == 1
        assert reply["result"]["content"] == [{"type": "text", "text": "hi"}]
        session.feed_eof()
        assert session.closed
        assert session.close_origin is CancelOrigin.TRANSPORT
    # The request's own task only: no reader (and no writer: written through).
    assert spawned == ["trio_mcp inbound request"]
    assert [d for d, _, _ in recorder.frames] == [FrameDirection.IN, FrameDirection.OUT]
    assert session.statistics().frames_in == 1


async def test_bad_frames_fed_get_their_errors_with_the_callers_id_and_the_session_goes_on() -> (
    None
):
    async def hello(ctx: RequestContext) -> Any:
        return {"content": [{"type": "text", "text": "hi"}]}

    recorder = Recorder()
    async with fed_session(FnDispatcher(hello=hello), recorder) as (session, peer):
        # Not JSON at all: a parse error, id null (none can be read).
        await session.feed(b"{not json")
        parse_error = orjson.loads(await peer.receive())
        assert parse_error["id"] is None
        assert parse_error["error"]["code"] == -32700
        # A 2026-07-28 request without its _meta: refused with its own id
        # (ME-07), the observer saw the frame come in.
        await session.feed(call(8, "hello", meta=None))
        refusal = orjson.loads(await peer.receive())
        assert refusal["id"] == 8
        assert refusal["error"]["code"] == -32602
        # The session goes on: the next frame is served.
        await session.feed(call(9, "hello"))
        assert orjson.loads(await peer.receive())["id"] == 9
        session.feed_eof()
    assert [data for d, data, _ in recorder.frames if d is FrameDirection.IN] == [
        b"{not json",
        call(8, "hello", meta=None),
        call(9, "hello"),
    ]


@pytest.mark.spec("HM-13")
async def test_feed_eof_cancels_a_running_request_with_origin_transport(
    autojump_clock: trio.testing.MockClock,
) -> None:
    started, forever = blocking_handler()
    recorder = Recorder()
    async with fed_session(FnDispatcher(forever=forever), recorder) as (session, peer):
        await session.feed(call(3, "forever"))
        await started.wait()
        session.feed_eof()
        session.feed_eof()  # idempotent
        await session.wait_inbound_settled()
        with pytest.raises(trio.WouldBlock):
            peer.receive_nowait()  # nothing was written for it
    (record,) = [r for r in session.requests() if r.id == 3]
    assert record.state is RequestState.CANCELLED
    assert record.cancel_origin is CancelOrigin.TRANSPORT


async def test_feed_is_refused_on_a_closed_session_and_on_one_with_a_reader() -> None:
    recorder = Recorder()
    async with fed_session(FnDispatcher(), recorder) as (session, _peer):
        session.feed_eof()
        with pytest.raises(SessionClosed):
            await session.feed(call(1, "any"))

    ours, peer = memory_transport_pair()
    protocol = server_connection(capabilities={"tools": {}})
    async with peer, open_session(ours, protocol, FnDispatcher()) as session:
        with pytest.raises(RuntimeError, match="reader=False"):
            await session.feed(call(1, "any"))
        with pytest.raises(RuntimeError, match="reader=False"):
            session.feed_eof()


class HangingClose(NoReceive):
    """Its ``aclose`` never returns by itself."""

    def __init__(self, inner: MemoryTransport) -> None:
        super().__init__(inner)
        self.close_called_at: float | None = None

    async def aclose(self) -> None:
        self.close_called_at = trio.current_time()
        await trio.sleep_forever()


@pytest.mark.parametrize("owner_cancelled", [False, True])
async def test_after_feed_eof_closing_the_transport_is_shielded_and_bounded_by_the_grace(
    autojump_clock: trio.testing.MockClock, owner_cancelled: bool
) -> None:
    ours, peer = memory_transport_pair()
    transport = HangingClose(ours)
    protocol = server_connection(stateless=MODERN, capabilities={"tools": {}})
    start = trio.current_time()
    with trio.CancelScope() as owner:
        async with (
            peer,
            open_session(
                transport, protocol, FnDispatcher(), reader=False, cancel_notify_grace=0.5
            ) as session,
        ):
            session.feed_eof()
            if owner_cancelled:
                owner.cancel()
    # Closed by the peer's end, the transport was still closed, even under
    # the owner's cancel, and the hang cost the grace, no more.
    assert transport.close_called_at == start
    assert trio.current_time() - start == pytest.approx(0.5)
    assert owner.cancelled_caught is owner_cancelled


async def test_cancelling_the_owner_while_a_fed_request_runs_ends_it_once_and_writes_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    started, forever = blocking_handler()
    recorder = Recorder()
    with trio.CancelScope() as owner:
        async with fed_session(FnDispatcher(forever=forever), recorder) as (session, _peer):
            await session.feed(call(5, "forever"))
            await started.wait()
            owner.cancel()  # the server cancels the POST (its client went)
            await trio.sleep_forever()
    assert owner.cancelled_caught
    # One terminal state, reached once, and no response was written for it.
    terminal = [r for r, _ in recorder.transitions if r.id == 5 and r.state.is_terminal]
    assert [r.state for r in terminal] == [RequestState.CANCELLED]
    assert [d for d, _, _ in recorder.frames] == [FrameDirection.IN]
