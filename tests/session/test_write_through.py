"""Write-through (docs/explanation/architecture.md, "One writer, with write-through").

While the session's writer is parked on an empty queue, a sender writes its
frame itself with the transport's ``send_nowait``. These tests run a real server
session over real pipes (``LineChannel`` on ``FdStream``, a 4 KiB pipe) whose
peer stops reading, so that the pipe fills:

* write-through falls back to the writer once the pipe is full: a line the pipe
  took in part is finished by the writer, later frames queue behind it, and the
  wire carries every frame whole in the order the frames were committed
  (observed), across the switch and back;
* a sender cancelled after its frame went out in part, or while it waits for
  room in the queue, never leaves a partial frame: the first frame arrives
  whole, the second never.

Plus the in-memory case: a sequential call is written through on both sides,
and nothing is written through while the writer has work queued.
"""

from __future__ import annotations

import array
import fcntl
import os
import termios
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest
import trio
import trio.testing
from helpers import FnDispatcher, Recorder, initialize_frame, server_connection, task_names

from trio_mcp.lowlevel import RequestContext, Session, open_session
from trio_mcp.protocol import FrameDirection
from trio_mcp.transports import LineChannel

#: The session's output pipe is shrunk to four pages, so a few frames fill it.
PIPE_SIZE = 16384
#: Text of each reply. A reply is longer than PIPE_BUF (4 KiB), so a write
#: that does not fit is taken in part rather than refused whole (a write of at
#: most PIPE_BUF bytes is atomic): the pipe holds two replies and part of a third.
TEXT = "y" * 5000
#: The message of each progress notification in the cancellation test.
MESSAGE = "p" * 6000


def _pipe(size: int | None = None) -> tuple[int, int]:
    r, w = os.pipe()
    if size is not None:
        fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, size)
    return r, w


@asynccontextmanager
async def open_piped_server(
    dispatcher: Any, *, outgoing_buffer: int = 2
) -> AsyncIterator[tuple[LineChannel, Session, Recorder]]:
    """A real server session over two pipes, and the peer's end of them
    (a LineChannel the test reads and writes raw frames with). Handshakes."""
    in_r, in_w = _pipe()
    out_r, out_w = _pipe(PIPE_SIZE)
    recorder = Recorder()
    protocol = server_connection(capabilities={"tools": {}})
    server_end = LineChannel(trio.lowlevel.FdStream(out_w), trio.lowlevel.FdStream(in_r))
    peer = LineChannel(trio.lowlevel.FdStream(in_w), trio.lowlevel.FdStream(out_r))
    async with (
        peer,
        open_session(
            server_end, protocol, dispatcher, outgoing_buffer=outgoing_buffer, observer=recorder
        ) as session,
    ):
        await _send(
            peer,
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "pipe-peer", "version": "0"},
                },
            },
        )
        reply = orjson.loads(await peer.receive())
        assert reply["id"] == 0, reply
        assert "result" in reply, reply
        await _send(peer, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield peer, session, recorder


async def _send(peer: LineChannel, frame: dict[str, Any]) -> None:
    await peer.send(orjson.dumps(frame))


def _call(request_id: int, tool: str, token: int | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": tool, "arguments": {}}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def _in_pipe(peer: LineChannel) -> int:
    """Bytes written to the peer's pipe and not yet read."""
    count = array.array("i", [0])
    fcntl.ioctl(peer.receive_stream.fileno(), termios.FIONREAD, count)  # type: ignore[attr-defined]
    return count[0]


def _wire_size(frames: list[bytes]) -> int:
    return sum(len(frame) + 1 for frame in frames)


def _out_frames(recorder: Recorder) -> list[bytes]:
    return [data for direction, data, _ in recorder.frames if direction is FrameDirection.OUT]


async def _read_lines(peer: LineChannel, count: int) -> list[bytes]:
    return [bytes(await peer.receive()) for _ in range(count)]


async def test_write_through_falls_back_to_the_writer_when_the_pipe_is_full() -> None:
    async def echo(ctx: RequestContext) -> Any:
        return {"content": [{"type": "text", "text": TEXT}]}

    calls = 12
    async with open_piped_server(FnDispatcher(echo=echo)) as (peer, session, recorder):
        before = session.statistics()
        # The peer sends every call and reads nothing: the replies fill the pipe.
        for request_id in range(1, calls + 1):
            await _send(peer, _call(request_id, "echo"))
        await trio.testing.wait_all_tasks_blocked()
        stats = session.statistics()
        through = stats.written_through - before.written_through
        # The first replies went out through their senders, until one did not
        # fit whole; its rest and what came after went to the writer, whose
        # queue is full now (the other request tasks wait for room).
        assert 1 <= through < calls, stats
        assert stats.outgoing_queue_used == 2, stats
        # Only what went out was committed (the writer encodes what it dequeues).
        assert stats.frames_out - before.frames_out == through
        assert through == 3  # two whole, one in part
        # The pipe is full and holds less than the three: one is there in part.
        committed_while_full = len(_out_frames(recorder))
        assert _in_pipe(peer) < _wire_size(_out_frames(recorder)[-3:])

        # The peer reads again: every reply arrives whole, in commit order.
        lines = await _read_lines(peer, calls)
        await trio.testing.wait_all_tasks_blocked()
        replies = [orjson.loads(line) for line in lines]
        assert sorted(reply["id"] for reply in replies) == list(range(1, calls + 1))
        assert all(reply["result"]["content"][0]["text"] == TEXT for reply in replies)
        out = _out_frames(recorder)
        assert lines == out[-calls:]
        assert len(out) > committed_while_full  # some were committed after the switch
        # Drained, the writer is idle again and senders write through again.
        after = session.statistics()
        await _send(peer, _call(calls + 1, "echo"))
        last = orjson.loads(await peer.receive())
        assert last["id"] == calls + 1
        assert session.statistics().written_through == after.written_through + 1
        transport = session.transport
        assert isinstance(transport, LineChannel)
        assert not transport.flush_pending()


async def test_a_cancelled_sender_never_leaves_a_partial_frame() -> None:
    started: list[int] = []
    gate = trio.Event()

    async def report(ctx: RequestContext) -> Any:
        # A progress notification longer than PIPE_BUF: the second one is
        # taken by the pipe only in part.
        started.append(ctx.request_id)  # type: ignore[arg-type]
        await ctx.report_progress(1, 2, message=MESSAGE)
        await gate.wait()  # until the peer cancels it
        return {"content": []}

    ids = (1, 2, 3, 4, 5)
    async with open_piped_server(FnDispatcher(report=report), outgoing_buffer=1) as (
        peer,
        session,
        recorder,
    ):
        for request_id in ids:
            await _send(peer, _call(request_id, "report", token=request_id))
        await trio.testing.wait_all_tasks_blocked()
        # Three progress notifications went out, two whole, one in part (its
        # rest waits for the writer, blocked on the full pipe); one waits in
        # the queue (not yet encoded); the last sender waits for room in it.
        assert session.statistics().outgoing_queue_used == 1
        committed = _out_frames(recorder)
        assert len(committed) == 1 + 3  # the handshake's reply, then the three
        assert _in_pipe(peer) < _wire_size(committed[1:])  # one is there in part
        # The peer cancels all five: every sender's scope is cancelled. The
        # frame in part is finished, the queued one is dropped by the writer
        # (the peer cancelled its request), the one waiting for room is never
        # queued, and nothing is torn.
        for request_id in ids:
            await _send(
                peer,
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": request_id},
                },
            )
        await trio.testing.wait_all_tasks_blocked()
        # The peer reads again; the session goes on: after the three
        # notifications, the next line on the wire is a whole reply to a ping.
        await _send(peer, {"jsonrpc": "2.0", "id": 9, "method": "ping"})
        lines = await _read_lines(peer, 4)
        assert lines[:3] == committed[1:]
        frames = [orjson.loads(line) for line in lines[:3]]
        assert all(frame["method"] == "notifications/progress" for frame in frames)
        assert all(frame["params"]["message"] == MESSAGE for frame in frames)
        assert orjson.loads(lines[3]) == {"jsonrpc": "2.0", "id": 9, "result": {}}
        assert _out_frames(recorder)[1:] == lines
        records = {r.id: r for r in session.requests()}
        assert all(records[i].state.is_terminal for i in ids)
        assert sorted(started) == list(ids)


async def test_an_in_memory_round_trip_is_written_through_on_both_sides() -> None:
    import trio_mcp
    from trio_mcp.testing import open_memory_client

    server = trio_mcp.Server("wt", version="1.0")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    async with open_memory_client(server, era="legacy") as client:
        session = client.session
        before = session.statistics()
        result = await client.call_tool("echo", {"text": "hi"})
        assert getattr(result.content[0], "text", None) == "hi"
        after = session.statistics()
        # The request went out through its caller, not the writer task.
        assert after.frames_out == before.frames_out + 1
        assert after.written_through == before.written_through + 1


async def test_the_http_server_transport_routes_a_frame_without_yielding() -> None:
    from trio_mcp.transports._http.server._event_store import MemoryEventStore
    from trio_mcp.transports._http.server._transport import HttpServerTransport

    reply = orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": {}})
    transport = HttpServerTransport("sid")
    stream = transport.open_stream([1], {}, json=True)
    transport.send_nowait(reply)
    # Routed at once: the POST's JSON answer is collected and its stream done.
    assert stream.collected == [reply]
    assert stream.done
    # An event store must keep the frame first, which awaits: not now.
    stored = HttpServerTransport("sid", event_store=MemoryEventStore())
    kept = stored.open_stream([1], {}, json=False)
    stored.attach(kept)
    with pytest.raises(trio.WouldBlock):
        stored.send_nowait(reply)
    routed_before = kept.done
    assert not routed_before
    await stored.send(reply)  # the writer's way: stored, then routed
    assert kept.done
    await transport.aclose()
    with pytest.raises(trio.ClosedResourceError):
        transport.send_nowait(reply)


async def test_the_writer_task_starts_only_when_a_frame_must_wait_for_it() -> None:
    async def echo(ctx: RequestContext) -> Any:
        return {"content": [{"type": "text", "text": TEXT}]}

    async with open_piped_server(FnDispatcher(echo=echo)) as (peer, _session, recorder):
        # The handshake's answers were written through: no writer yet.
        await trio.testing.wait_all_tasks_blocked()
        assert "trio_mcp writer" not in task_names()
        # The peer stops reading: a reply does not fit, and the writer takes its rest.
        for request_id in range(1, 7):
            await _send(peer, _call(request_id, "echo"))
        await trio.testing.wait_all_tasks_blocked()
        assert task_names().count("trio_mcp writer") == 1
        # Every reply arrives whole, the last one too: a line the writer's own
        # non-blocking write left in part is finished at once, not when (if
        # ever) another frame is written. Bounded, so that a lost rest fails.
        with trio.fail_after(5):
            lines = await _read_lines(peer, 6)
        assert sorted(orjson.loads(line)["id"] for line in lines) == list(range(1, 7))
        assert lines == _out_frames(recorder)[-6:]
        # Drained, it stays (parked) for the session's life: one writer, ever.
        await trio.testing.wait_all_tasks_blocked()
        assert task_names().count("trio_mcp writer") == 1


async def test_an_in_memory_session_never_spawns_its_writer() -> None:
    import trio_mcp
    from trio_mcp.testing import open_memory_client

    server = trio_mcp.Server("wt", version="1.0")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    async with open_memory_client(server, era="legacy") as client:
        for _ in range(3):
            result = await client.call_tool("echo", {"text": "hi"})
            assert getattr(result.content[0], "text", None) == "hi"
        await trio.testing.wait_all_tasks_blocked()
        assert "trio_mcp writer" not in task_names()
        stats = client.session.statistics()
        assert stats.written_through == stats.frames_out


class _NoWriteThrough(trio.abc.Channel[bytes]):
    """A memory channel pair's end without ``send_nowait``: no write-through."""

    def __init__(
        self, send: trio.MemorySendChannel[bytes], receive: trio.MemoryReceiveChannel[bytes]
    ) -> None:
        self._send = send
        self._receive = receive

    async def send(self, value: bytes) -> None:
        await self._send.send(value)

    async def receive(self) -> bytes:
        return await self._receive.receive()

    async def aclose(self) -> None:
        await self._send.aclose()
        await self._receive.aclose()


async def test_a_transport_without_send_nowait_has_its_writer_from_the_start() -> None:
    to_server, server_in = trio.open_memory_channel[bytes](8)
    server_out, from_server = trio.open_memory_channel[bytes](8)
    transport = _NoWriteThrough(server_out, server_in)
    protocol = server_connection(capabilities={"tools": {}})
    async with open_session(transport, protocol, FnDispatcher()) as session:
        await trio.testing.wait_all_tasks_blocked()
        assert task_names().count("trio_mcp writer") == 1
        await to_server.send(initialize_frame())
        answer = orjson.loads(await from_server.receive())
        assert answer["id"] == 1
        assert "result" in answer
        assert session.statistics().written_through == 0
