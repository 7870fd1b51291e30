"""How :func:`open_session` is left: the body's own exception comes out as
itself (the same object, its traceback kept), an enclosing cancel is caught
by its scope, an error of one of the session's tasks comes out unwrapped, and
in every case the session is shut down and its transport closed first.

open_session is a class-based context manager (issue #16: a generator was
~0.6 KiB of every idle session); these pin the behaviour the generator had.
"""

from __future__ import annotations

import traceback

import orjson
import pytest
import trio
import trio.testing
from helpers import FnDispatcher, blocking_handler, server_connection

from trio_mcp.lowlevel import CancelOrigin, Session, open_session
from trio_mcp.protocol import ConnectionFactory
from trio_mcp.testing import memory_transport_pair


def server_protocol() -> ConnectionFactory:
    return server_connection(stateless="2026-07-28", capabilities={"tools": {}})


class Boom(Exception):
    pass


def raise_boom() -> None:
    raise Boom("from the body")


async def test_leaving_normally_shuts_the_session_down_and_closes_the_transport() -> None:
    ours, peer = memory_transport_pair()
    async with peer:
        async with open_session(ours, server_protocol(), FnDispatcher()) as session:
            open_inside = not session.closed
        assert open_inside
        assert session.closed
        assert session.close_origin is CancelOrigin.SHUTDOWN
        assert session.close_reason == "session closed by its owner"
        with pytest.raises(trio.EndOfChannel):
            await peer.receive()  # our side was closed


async def test_the_bodys_exception_comes_out_as_itself_with_its_traceback() -> None:
    ours, peer = memory_transport_pair()
    seen: list[Session] = []

    async def body() -> None:
        async with open_session(ours, server_protocol(), FnDispatcher()) as session:
            seen.append(session)
            raise_boom()

    async with peer:
        with pytest.raises(Boom) as raised:
            await body()
    assert not isinstance(raised.value, BaseExceptionGroup)
    frames = [frame.name for frame in traceback.extract_tb(raised.value.__traceback__)]
    assert "raise_boom" in frames
    assert seen[0].closed
    assert seen[0].close_origin is CancelOrigin.SHUTDOWN


async def test_an_enclosing_cancel_is_caught_by_its_scope_and_the_session_still_ends() -> None:
    ours, peer = memory_transport_pair()
    seen: list[Session] = []
    async with peer:
        with trio.CancelScope() as outer:
            async with open_session(ours, server_protocol(), FnDispatcher()) as session:
                seen.append(session)
                outer.cancel()
                await trio.sleep_forever()
    assert outer.cancelled_caught
    assert seen[0].closed


async def test_an_error_in_a_sessions_task_comes_out_unwrapped() -> None:
    ours, peer = memory_transport_pair()

    async def failing() -> None:
        raise Boom("from a task of the session")

    seen: list[Session] = []

    async def body() -> None:
        async with open_session(ours, server_protocol(), FnDispatcher()) as session:
            seen.append(session)
            session.start_soon(failing)
            await trio.sleep_forever()

    async with peer:
        with pytest.raises(Boom, match="from a task of the session"):
            await body()
    assert seen[0].closed


async def test_an_error_closing_the_transport_comes_out_of_the_exit() -> None:
    ours, peer = memory_transport_pair()

    class FailingClose(trio.abc.Channel[bytes]):
        send_nowait = ours.send_nowait

        async def send(self, value: bytes) -> None:
            await ours.send(value)

        async def receive(self) -> bytes:
            return await ours.receive()

        async def aclose(self) -> None:
            await ours.aclose()
            raise OSError("the pipe would not close")

    async with peer:
        with pytest.raises(OSError, match="would not close"):
            async with open_session(FailingClose(), server_protocol(), FnDispatcher()):
                pass


async def test_a_request_running_at_the_exit_is_cancelled_with_origin_shutdown(
    autojump_clock: trio.testing.MockClock,
) -> None:
    started, forever = blocking_handler()
    ours, peer = memory_transport_pair()
    request = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {
            "name": "forever",
            "arguments": {},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    async with peer:
        async with open_session(
            ours, server_protocol(), FnDispatcher(forever=forever), shutdown_grace=1.0
        ) as session:
            await peer.send(orjson.dumps(request))
            await started.wait()
        (record,) = [r for r in session.requests() if r.id == 7]
        assert record.cancel_origin is CancelOrigin.SHUTDOWN
        # The grace was waited for, then the shutdown reply went out.
        reply = orjson.loads(await peer.receive())
        assert reply["id"] == 7


async def test_open_session_is_entered_once() -> None:
    ours, peer = memory_transport_pair()
    manager = open_session(ours, server_protocol(), FnDispatcher())
    async with peer, manager:
        with pytest.raises(RuntimeError, match="entered only once"):
            await manager.__aenter__()


def test_bad_options_are_refused_when_it_is_called() -> None:
    ours, _peer = memory_transport_pair()
    with pytest.raises(ValueError, match="progress_interval"):
        open_session(ours, server_protocol(), FnDispatcher(), progress_interval=-1)
    with pytest.raises(ValueError, match="max_queued"):
        open_session(ours, server_protocol(), FnDispatcher(), max_queued=-1)
