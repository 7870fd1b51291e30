"""Lifecycle and correlation cases of the robustness catalogue (reliability
§3.4, §3.5) not covered elsewhere: raw peers against a real server session
and a real client."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from helpers import RawPeer, open_client_with_raw_server, open_raw_server

from trio_mcp import Server
from trio_mcp.protocol import Direction, SessionState


def make_server() -> Server:
    server = Server("catalogue")

    @server.tool()
    async def echo(value: str) -> str:
        """Echo."""
        return value

    return server


INITIALIZE: dict[str, Any] = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "x", "version": "1"},
}


async def test_notifications_before_initialize_are_ignored(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """L-02: no reply to any notification before the handshake; the handshake
    then goes through as usual."""
    async with open_raw_server(make_server(), version=None) as (peer, session):
        await peer.notify("notifications/initialized")
        await peer.notify("notifications/roots/list_changed")
        await peer.notify("notifications/progress", {"progressToken": 1, "progress": 1})
        await peer.notify("notifications/cancelled", {"requestId": 1})
        await peer.notify("notifications/no-such")
        await peer.ping()
        assert len(peer.frames) == 1  # the ping's answer alone
        assert session.state is SessionState.NEW
        await peer.handshake_as_client()
        await peer.ping()
        assert session.statistics().state is SessionState.OPERATING


BAD_INITIALIZE = [
    ("no-client-info", {k: v for k, v in INITIALIZE.items() if k != "clientInfo"}),
    ("no-capabilities", {k: v for k, v in INITIALIZE.items() if k != "capabilities"}),
    ("no-version", {k: v for k, v in INITIALIZE.items() if k != "protocolVersion"}),
    ("client-info-not-object", {**INITIALIZE, "clientInfo": "x"}),
    ("client-info-without-name", {**INITIALIZE, "clientInfo": {"version": "1"}}),
    ("capabilities-not-object", {**INITIALIZE, "capabilities": []}),
    ("version-not-string", {**INITIALIZE, "protocolVersion": 20251125}),
]


@pytest.mark.parametrize(("name", "params"), BAD_INITIALIZE)
async def test_a_malformed_initialize_is_invalid_params_and_the_handshake_can_follow(
    name: str, params: dict[str, Any], autojump_clock: trio.testing.MockClock
) -> None:
    """L-05: -32602 with the caller's id; the session stays new, and a good
    initialize afterwards is served."""
    async with open_raw_server(make_server(), version=None) as (peer, session):
        reply = await peer.request("initialize", params)
        assert reply["error"]["code"] == -32602, reply
        assert session.state is SessionState.NEW
        await peer.handshake_as_client()
        await peer.ping()
        assert session.statistics().state is SessionState.OPERATING


async def _answer_tool_calls_in_reverse(peer: RawPeer, count: int) -> None:
    calls = [await peer.wait_for(_nth_call(n)) for n in range(count)]
    for call in reversed(calls):
        value = call["params"]["arguments"]["value"]
        result = {"content": [{"type": "text", "text": value}], "isError": False}
        await peer.send({"jsonrpc": "2.0", "id": call["id"], "result": result})


def _nth_call(n: int) -> Any:
    return lambda f: f.get("method") == "tools/call" and f["params"]["arguments"]["value"] == str(n)


async def test_concurrent_calls_answered_out_of_order_each_get_their_own(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """C-16: a hundred calls in flight, answered last first: every caller gets
    the result for its own request."""
    count = 100
    got: dict[int, str] = {}
    async with open_client_with_raw_server() as (peer, client):

        async def call(n: int) -> None:
            result = await client.call_tool("t", {"value": str(n)})
            got[n] = result.content[0].text  # type: ignore[union-attr]

        async with trio.open_nursery() as nursery:
            for n in range(count):
                nursery.start_soon(call, n)
            nursery.start_soon(_answer_tool_calls_in_reverse, peer, count)
    assert got == {n: str(n) for n in range(count)}


async def test_a_string_id_never_answers_an_integer_request(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """C-08 (our decision, exact match): a response naming ``"5"`` does not
    answer our request 5; it is ignored as a response to no request, and the
    real answer, when it comes, does."""
    async with open_client_with_raw_server() as (peer, client):
        results: list[Any] = []

        async def ping() -> None:
            results.append(await client.session.request("ping"))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ping)
            request = await peer.wait_method("ping")
            assert isinstance(request["id"], int)
            await peer.send({"jsonrpc": "2.0", "id": str(request["id"]), "result": {"x": 1}})
            await trio.testing.wait_all_tasks_blocked()
            assert results == []  # still waiting
            record = client.session.protocol.record(Direction.OUTBOUND, request["id"])
            assert record is not None
            assert not record.state.is_terminal
            await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {}})
        assert len(results) == 1
        assert client.session.protocol.statistics().ignored_events == 1
