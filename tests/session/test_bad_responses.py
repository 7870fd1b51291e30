"""Bad answers to our own requests fail the waiting call at once (reliability
J-07, J-08, R-03, X-08, F-06).

Before: a malformed response (both ``result`` and ``error``, an error without
an integer ``code``, a result that is not an object) was dropped, and its
caller waited for its own timeout (60 s by default); a client answered a
server's stray non-JSON line with a -32700 frame. Now the caller gets
:class:`InvalidPeerResult` at once and the session goes on; a frame over the
size bound whose id its head does not show (never parsed, so the call it
answered cannot be told) ends a client's session at once with the reason; noise
lines are counted, not answered.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from helpers import RawPeer, open_client_with_raw_server

from trio_mcp import Client, InvalidPeerResult, SessionClosed
from trio_mcp.lowlevel import RequestState
from trio_mcp.protocol import DEFAULT_MAX_MESSAGE_SIZE, Direction

MALFORMED: list[tuple[str, dict[str, Any]]] = [
    ("both", {"result": {}, "error": {"code": -1, "message": "no"}}),
    ("neither", {}),
    ("error-without-code", {"error": {"message": "no"}}),
    ("error-with-string-code", {"error": {"code": "-1", "message": "no"}}),
    ("error-with-number-message", {"error": {"code": -1, "message": 5}}),
    ("result-not-an-object", {"result": [1, 2]}),
    # Found by the client-side HTTP fuzzing: refused without failing the call,
    # which over HTTP (its response over) then waited for ever.
    ("jsonrpc-not-2.0", {"jsonrpc": "1.0", "result": {}}),
]


async def _call_and_answer(peer: RawPeer, client: Client, answer: dict[str, Any]) -> BaseException:
    """Ping from the client; the peer answers with *answer* (the id added)."""
    outcome: list[BaseException] = []

    async def ping() -> None:
        try:
            await client.session.request("ping")
        except Exception as exc:
            outcome.append(exc)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ping)
        request = await peer.wait_method("ping")
        await peer.send({"jsonrpc": "2.0", "id": request["id"], **answer})
    [exc] = outcome
    return exc


async def _ping_answered(peer: RawPeer, client: Client) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(client.session.request, "ping")
        seen = {f["id"] for f in peer.frames if f.get("method") == "ping"}
        fresh = await peer.wait_for(lambda f: f.get("method") == "ping" and f["id"] not in seen)
        await peer.send({"jsonrpc": "2.0", "id": fresh["id"], "result": {}})


@pytest.mark.parametrize("answer", [a for _, a in MALFORMED], ids=[n for n, _ in MALFORMED])
async def test_a_malformed_response_fails_its_caller_at_once(
    answer: dict[str, Any], autojump_clock: trio.testing.MockClock
) -> None:
    async with open_client_with_raw_server() as (peer, client):
        start = trio.current_time()
        exc = await _call_and_answer(peer, client, answer)
        assert isinstance(exc, InvalidPeerResult)
        assert "Malformed response for ping" in str(exc)
        assert trio.current_time() == start  # not at its timeout
        [record] = [
            r
            for r in client.session.requests()
            if r.method == "ping" and r.direction is Direction.OUTBOUND
        ]
        assert record.state is RequestState.FAILED
        assert record.error is not None
        assert client.session.statistics().invalid_messages == 1
        await _ping_answered(peer, client)


async def test_a_malformed_response_for_no_call_of_ours_is_ignored(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_client_with_raw_server() as (peer, client):
        await peer.send({"jsonrpc": "2.0", "id": 999, "result": {}, "error": {}})
        await trio.testing.wait_all_tasks_blocked()
        assert client.session.statistics().invalid_messages == 1
        await _ping_answered(peer, client)


async def test_a_frame_over_the_size_bound_ends_a_clients_session_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_client_with_raw_server() as (peer, client):
        start = trio.current_time()

        async def oversize_answer() -> None:
            request = await peer.wait_method("ping")
            text = "x" * DEFAULT_MAX_MESSAGE_SIZE
            # The id comes after the bulk and before a last member, beyond the head
            # and the tail a scan reads: the call it answers cannot be told (with
            # the id first or last, that call alone fails:
            # tests/transports/test_frame_bounds.py).
            await peer.send(
                {"jsonrpc": "2.0", "result": {"t": text}, "id": request["id"], "z": "y" * 5000}
            )

        async with trio.open_nursery() as nursery:
            nursery.start_soon(oversize_answer)
            with pytest.raises(SessionClosed, match="exceeds the limit"):
                await client.session.request("ping")
        assert trio.current_time() == start
        assert client.session.closed
        await peer.wait_eof()  # the transport was closed, so the server sees it


async def test_a_line_that_is_not_json_from_a_server_is_counted_not_answered(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_client_with_raw_server() as (peer, client):
        written_before = len(peer.frames)
        await peer.send_raw(b"hello from a stray print()")
        await trio.testing.wait_all_tasks_blocked()
        assert client.session.statistics().invalid_messages == 1
        assert len(peer.frames) == written_before  # no -32700 frame back
        await _ping_answered(peer, client)
