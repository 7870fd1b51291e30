"""The optional keepalive: ``open_session(keepalive_interval=, keepalive_timeout=)``.

A real server session pings a raw fake client, which answers each ping after a
given delay, or never. Everything runs on the autojump clock, so the ping times
are exact: the first ping goes out ``interval`` seconds after the session
opened, each next one ``interval`` seconds after the previous answer.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
import trio
import trio.testing
from helpers import FnDispatcher, RawPeer, open_raw_server

from trio_mcp import SessionClosed
from trio_mcp.lowlevel import CancelOrigin


async def answer_pings(peer: RawPeer, delay: float | None, seen: list[float]) -> None:
    """Note the time of each ping from the session; answer it after *delay*
    seconds (None: never)."""
    handled: set[Any] = set()
    while True:
        try:
            frame = await peer.wait_for(
                lambda f: f.get("method") == "ping" and f["id"] not in handled
            )
        except trio.EndOfChannel:
            return  # the session closed the connection
        handled.add(frame["id"])
        seen.append(trio.current_time())
        if delay is not None:
            await trio.sleep(delay)
            await peer.send({"jsonrpc": "2.0", "id": frame["id"], "result": {}})


@pytest.mark.spec("PI-04")
@pytest.mark.spec("PI-01")
async def test_pings_are_sent_at_the_interval(autojump_clock: trio.testing.MockClock) -> None:
    seen: list[float] = []
    async with open_raw_server(FnDispatcher(), keepalive_interval=10, keepalive_timeout=5) as (
        peer,
        session,
    ):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(answer_pings, peer, 0, seen)
            await trio.sleep(35)
            nursery.cancel_scope.cancel()
        assert seen == [10, 20, 30]
        assert not session.closed
        pings = [
            r for r in session.requests() if r.method == "ping" and r.direction.value == "outbound"
        ]
        assert [r.state.value for r in pings] == ["completed"] * 3


@pytest.mark.spec("PI-03")
@pytest.mark.spec("PI-05")
@pytest.mark.spec("TO-07")
async def test_a_peer_that_never_answers_pings_gets_the_session_closed(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[float] = []
    caplog.set_level(logging.WARNING, logger="trio_mcp.session")
    async with open_raw_server(FnDispatcher(), keepalive_interval=10, keepalive_timeout=5) as (
        peer,
        session,
    ):
        failure: list[BaseException] = []

        async def pending_call() -> None:
            # A call of ours the peer never answers either: it fails with the
            # connection failure, not with a timeout of its own.
            try:
                await session.request("ping", progress_idle_timeout=None, max_duration=None)
            except SessionClosed as exc:
                failure.append(exc)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(answer_pings, peer, None, seen)
            nursery.start_soon(pending_call)
            await session.wait_closed()
            closed_at = trio.current_time()
            nursery.cancel_scope.cancel()
        # The ping sent at t=10 was unanswered for 5 s.
        assert closed_at == 15
        assert (session.close_origin, session.close_reason) == (
            CancelOrigin.TRANSPORT,
            "ping timeout after 5s",
        )
        assert len(failure) == 1
        assert isinstance(failure[0], SessionClosed)
        assert (failure[0].origin, failure[0].reason) == (
            CancelOrigin.TRANSPORT,
            "ping timeout after 5s",
        )
        # The connection was closed: the peer sees the end of it.
        await peer.wait_eof()
        assert peer.eof_at == 15
    assert seen == [0, 10]  # our own pending ping, then the keepalive's
    assert any("ping timeout after 5s" in r.getMessage() for r in caplog.records)


@pytest.mark.spec("PI-04")
@pytest.mark.spec("TO-07")
async def test_a_slow_but_answering_peer_keeps_the_session(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[float] = []
    async with open_raw_server(FnDispatcher(), keepalive_interval=10, keepalive_timeout=5) as (
        peer,
        session,
    ):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(answer_pings, peer, 4, seen)
            await trio.sleep(100)
            nursery.cancel_scope.cancel()
        assert not session.closed
        # Each answer takes 4 s; the next ping goes 10 s after it.
        assert seen == [10, 24, 38, 52, 66, 80, 94]
        await peer.ping()


async def test_without_keepalive_nothing_is_pinged(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_raw_server(FnDispatcher()) as (peer, session):
        await trio.sleep(1000)
        assert [f for f in peer.frames if f.get("method") == "ping"] == []
        assert not session.closed
