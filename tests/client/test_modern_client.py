"""The client in the 2026-07-28 era: era negotiation (the probe and its
fallbacks), the input-required loop, listen streams, per-request logging.

In memory against real servers and raw peers, on the autojump clock; ordered
by what the peers see, never by sleeping.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from helpers import RawPeer, open_pair, open_raw_client_transport

from trio_mcp import (
    Context,
    FormElicitation,
    HandshakeRefused,
    InvalidPeerResult,
    RPCError,
    Server,
    open_client,
    serve_session,
)
from trio_mcp import types as t
from trio_mcp._client._era import ProbeClosedConnection
from trio_mcp._util import unwrapping
from trio_mcp.protocol import SUPPORTED_VERSIONS, Direction, RequestState
from trio_mcp.testing import memory_transport_pair

MODERN = "2026-07-28"
FORM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def build() -> tuple[Server, dict[str, Any]]:
    seen: dict[str, Any] = {"runs": 0, "stopped": False}
    server = Server("s", version="1", protocol_versions=(MODERN, *SUPPORTED_VERSIONS))

    @server.tool()
    async def echo(text: str) -> str:
        return text

    @server.tool()
    async def order(item: str, ctx: Context) -> str:
        seen["runs"] += 1
        first = await ctx.elicit(
            {"mode": "form", "message": f"Buy {item}?", "requestedSchema": FORM}
        )
        second = await ctx.elicit({"mode": "form", "message": "Sure?", "requestedSchema": FORM})
        return f"{first.action}/{second.action} round {ctx.round}"

    @server.tool()
    async def greedy(ctx: Context) -> str:
        # Asks for a new input in every round, for ever.
        for _ in range(ctx.round):
            await ctx.elicit({"mode": "form", "message": "more?", "requestedSchema": FORM})
        return "never"  # pragma: no cover

    @server.tool()
    async def chatty(ctx: Context) -> str:
        await ctx.debug("a debug line")
        await ctx.info("an info line")
        return "done"

    @server.tool()
    async def slow() -> None:
        try:
            await trio.sleep_forever()
        finally:
            seen["stopped"] = True

    @server.resource("file:///watched.txt")
    async def watched() -> str:
        return "v1"

    return server, seen


async def accept(request: FormElicitation) -> t.ElicitResult:
    return t.ElicitResult(action="accept", content={"ok": True})


# --- era negotiation ----------------------------------------------------------


@pytest.mark.spec("VR-11", "SI-14", "DS-04", "ME-06", "ME-08")
@pytest.mark.parametrize(
    ("versions", "era", "version"),
    [
        ((MODERN, *SUPPORTED_VERSIONS), "modern", MODERN),
        ((MODERN,), "modern", MODERN),
        (SUPPORTED_VERSIONS, "legacy", "2025-11-25"),
    ],
    ids=["dual-era", "modern-only", "handshake-only"],
)
async def test_auto_finds_the_era_of_the_server(
    autojump_clock: trio.testing.MockClock, versions: tuple[str, ...], era: str, version: str
) -> None:
    server, _ = build()
    server.protocol_versions = versions
    async with open_pair(server) as (client, server_session):
        assert (client.era, client.protocol_version) == (era, version)
        assert client.server_info.name == "s"
        assert "echo" in client.tools
        assert (await client.call_tool("echo", {"text": "hi"})).content == [
            t.TextContent(text="hi")
        ]
        # No time was spent waiting on the probe.
        assert trio.current_time() == 0
        if era == "modern":
            calls = [r for r in server_session.requests() if r.method == "tools/call"]
            meta = server_session.protocol.request_meta  # ended: only the record is left
            assert calls
            assert meta(calls[0].id) is None


async def test_modern_requests_carry_version_capabilities_and_client_info(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    seen: list[Any] = []

    @server.tool()
    async def who(ctx: Context) -> str:
        assert ctx.request.request_meta is not None
        seen.append(ctx.request.request_meta)
        return "ok"

    async with open_pair(server, name="host", version="9", elicitation=accept) as (client, _):
        await client.call_tool("who")
    (meta,) = seen
    assert meta.protocol_version == MODERN
    assert meta.client_capabilities == {"elicitation": {"form": {}}}
    assert meta.client_info == {"name": "host", "version": "9"}


async def test_era_modern_against_a_handshake_server_fails_and_legacy_against_modern_only(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    server.protocol_versions = SUPPORTED_VERSIONS
    with pytest.raises(RPCError) as info:
        async with unwrapping(), open_pair(server, era="modern"):
            pytest.fail("connected")  # pragma: no cover
    assert info.value.code == -32601
    server.protocol_versions = (MODERN,)
    with pytest.raises(HandshakeRefused, match="this server speaks only 2026-07-28"):
        async with unwrapping(), open_pair(server, era="legacy"):
            pytest.fail("connected")  # pragma: no cover


async def _probe(peer: RawPeer, answer: dict[str, Any] | None) -> dict[str, Any]:
    """Play a handshake-era server: answer the probe with *answer* (an error
    object; None: not at all), then the handshake. Returns the probe frame."""
    probe = await peer.receive()
    assert probe["method"] == "server/discover"
    assert probe["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == MODERN
    if answer is not None:
        await peer.send({"jsonrpc": "2.0", "id": probe["id"], "error": answer})
    await peer.handshake_as_server("2025-11-25")
    return probe


@pytest.mark.spec("SI-14", "SI-15")
@pytest.mark.parametrize(
    "answer",
    [
        {"code": -32601, "message": "Method not found"},
        {"code": -32600, "message": "Not initialized"},
        {"code": -32603, "message": "Something unrelated"},
        {"code": -32022, "message": "Unsupported", "data": {"supported": ["2025-11-25"]}},
    ],
    ids=["method-not-found", "not-initialized", "unrelated", "32022-handshake-only"],
)
async def test_a_probe_refused_by_a_handshake_server_falls_back_at_once(
    autojump_clock: trio.testing.MockClock, answer: dict[str, Any]
) -> None:
    async with open_raw_client_transport() as (peer, transport), trio.open_nursery() as nursery:
        nursery.start_soon(_probe, peer, answer)
        async with open_client(transport, discover=False) as client:
            assert (client.era, client.protocol_version) == ("legacy", "2025-11-25")
            assert trio.current_time() == 0
        methods = [f.get("method") for f in peer.frames]
        assert methods[:3] == ["server/discover", "initialize", "notifications/initialized"]


@pytest.mark.spec("SI-14")
async def test_an_unanswered_probe_costs_only_the_probe_timeout_and_a_late_answer_is_ignored(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_raw_client_transport() as (peer, transport), trio.open_nursery() as nursery:

        async def late_server() -> None:
            probe = await peer.wait_method("server/discover")
            init = await peer.wait_method("initialize")
            # The probe's answer arrives after the fallback began.
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "id": probe["id"],
                    "result": {
                        "supportedVersions": [MODERN],
                        "capabilities": {},
                        "ttlMs": 0,
                        "cacheScope": "private",
                    },
                }
            )
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "id": init["id"],
                    "result": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "serverInfo": {"name": "late", "version": "0"},
                    },
                }
            )

        nursery.start_soon(late_server)
        async with open_client(transport, discover=False, probe_timeout=0.5) as client:
            assert client.era == "legacy"
            assert trio.current_time() == pytest.approx(0.5)
            probe = next(r for r in client.session.requests() if r.method == "server/discover")
            assert probe.state is RequestState.CANCELLED
            assert probe.cancel_origin is not None
            assert probe.cancel_origin.value == "deadline"
            # The discover result came after the fallback began (before the
            # initialize result): ignored, counted (CN-07), and it changed nothing.
            assert probe.late_events == ("late response",)
            assert client.session.statistics().ignored_events == 1
        # The probe was cancelled by message (CN-14: it was in flight).
        cancels = [f for f in peer.frames if f.get("method") == "notifications/cancelled"]
        assert [c["params"]["requestId"] for c in cancels][:1] == [1]


async def test_a_server_that_closes_on_the_probe_is_reported(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_raw_client_transport() as (peer, transport):

        async def exits() -> None:
            await peer.wait_method("server/discover")
            await peer.transport.aclose()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(exits)
            with pytest.raises(ProbeClosedConnection, match="era probe"):
                async with open_client(transport, discover=False):
                    pytest.fail("connected")  # pragma: no cover


@pytest.mark.spec("VR-03")
async def test_32022_naming_no_common_version_is_a_refusal(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_raw_client_transport() as (peer, transport):

        async def refuse() -> None:
            probe = await peer.wait_method("server/discover")
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "id": probe["id"],
                    "error": {
                        "code": -32022,
                        "message": "Unsupported",
                        "data": {"supported": ["2099-01-01"], "requested": MODERN},
                    },
                }
            )

        async with trio.open_nursery() as nursery:
            nursery.start_soon(refuse)
            with pytest.raises(HandshakeRefused, match="no version in common") as info:
                async with open_client(transport, discover=False):
                    pytest.fail("connected")  # pragma: no cover
            assert info.value.supported == ("2099-01-01",)


# --- the input-required loop --------------------------------------------------------


@pytest.mark.spec("PT-12", "PT-13", "PT-14", "PT-15")
async def test_call_tool_runs_the_rounds_and_links_them(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, seen = build()
    async with open_pair(server, elicitation=accept) as (client, server_session):
        result = await client.call_tool("order", {"item": "tea"})
        assert result.content == [t.TextContent(text="accept/accept round 3")]
        assert seen["runs"] == 3
        ours = [r for r in client.session.requests() if r.method == "tools/call"]
        assert [r.input_required for r in ours] == [True, True, False]
        assert [r.follows for r in ours] == [None, ours[0].id, ours[1].id]
        # A new id every round (PT-14).
        assert len({r.id for r in ours}) == 3
        theirs = [
            r
            for r in server_session.requests()
            if r.method == "tools/call" and r.direction is Direction.INBOUND
        ]
        assert [r.follows for r in theirs] == [None, theirs[0].id, theirs[1].id]
        assert all(r.state is RequestState.COMPLETED for r in theirs)


async def test_a_declined_input_is_an_answer_too(autojump_clock: trio.testing.MockClock) -> None:
    async def decline(request: FormElicitation) -> t.ElicitResult:
        return t.ElicitResult(action="decline")

    server, _ = build()
    async with open_pair(server, elicitation=decline) as (client, _):
        result = await client.call_tool("order", {"item": "tea"})
        assert result.content == [t.TextContent(text="decline/decline round 3")]


async def test_rounds_are_bounded(autojump_clock: trio.testing.MockClock) -> None:
    server, _ = build()
    async with open_pair(server, elicitation=accept, max_input_rounds=3) as (client, _):
        with pytest.raises(InvalidPeerResult, match="after 3 rounds"):
            await client.call_tool("greedy")
        # The session goes on.
        assert (await client.call_tool("echo", {"text": "x"})).content == [t.TextContent(text="x")]


@pytest.mark.spec("PT-07", "ME-10")
async def test_without_an_elicitation_handler_the_server_says_which_capability_is_missing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, seen = build()
    async with open_pair(server) as (client, _):
        with pytest.raises(RPCError) as info:
            await client.call_tool("order", {"item": "tea"})
        assert info.value.code == -32021
        assert info.value.data == {"requiredCapabilities": {"elicitation": {"form": {}}}}
        assert seen["runs"] == 1


async def test_a_cancel_while_answering_an_input_sends_no_retry(
    autojump_clock: trio.testing.MockClock,
) -> None:
    asked = trio.Event()

    async def hesitate(request: FormElicitation) -> t.ElicitResult:
        asked.set()
        await trio.sleep_forever()
        raise AssertionError("unreachable")  # pragma: no cover

    server, seen = build()
    async with open_pair(server, elicitation=hesitate) as (client, server_session):
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(client.call_tool, "order", {"item": "tea"})
                await asked.wait()
                scope.cancel()
        await server_session.wait_inbound_settled()
        # One round ran and ended; nothing is pending on the server (PT-17).
        calls = [r for r in server_session.requests() if r.method == "tools/call"]
        assert len(calls) == 1
        assert calls[0].state is RequestState.COMPLETED
        assert calls[0].input_required
        assert seen["runs"] == 1
        assert (await client.call_tool("echo", {"text": "x"})).content == [t.TextContent(text="x")]


@pytest.mark.spec("CN-12", "SI-08", "SI-09")
async def test_a_cancelled_modern_call_stops_the_handler(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, seen = build()
    async with open_pair(server) as (client, server_session):
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(client.call_tool, "slow")
                await trio.testing.wait_all_tasks_blocked()
                scope.cancel()
        await server_session.wait_inbound_settled()
        assert seen["stopped"]
        (record,) = [r for r in server_session.requests() if r.method == "tools/call"]
        assert record.state is RequestState.CANCELLED
        assert record.cancel_origin is not None
        assert record.cancel_origin.value == "peer"
        (ours,) = [r for r in client.session.requests() if r.method == "tools/call"]
        assert ours.cancel_origin is not None
        assert ours.cancel_origin.value == "caller"


# --- listen streams and logging ------------------------------------------------------


@pytest.mark.spec("SB-06", "SB-07", "SB-08", "CA-06")
async def test_list_changes_and_resource_updates_ride_listen_streams(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    async with open_pair(server) as (client, server_session):
        await trio.testing.wait_all_tasks_blocked()
        assert len(server._listeners) == 1  # the list cache's stream
        async with client.resource_updates("file:///watched.txt") as updates:
            assert len(server._listeners) == 2
            server.resource_updated("file:///watched.txt")
            assert await updates.receive() == "file:///watched.txt"
            server.add_tool(lambda: "new", name="fresh")
            await client.wait_list_changed("tools")
            assert "fresh" in client.tools
        await trio.testing.wait_all_tasks_blocked()
        assert len(server._listeners) == 1  # leaving the block cancelled its stream
        listens = [r for r in server_session.requests() if r.method == "subscriptions/listen"]
        ended = [r for r in listens if r.state.is_terminal]
        assert len(ended) == 1
        assert ended[0].state is RequestState.CANCELLED


@pytest.mark.spec("SB-09")
async def test_the_server_ending_the_streams_at_shutdown(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    async with open_pair(server) as (client, server_session):
        await trio.testing.wait_all_tasks_blocked()
        await server_session.aclose()
        await client.session.wait_closed()
        (listen,) = [r for r in client.session.requests() if r.method == "subscriptions/listen"]
        assert listen.state is RequestState.COMPLETED


@pytest.mark.spec("ME-15", "LG-06", "LG-07")
async def test_set_logging_level_asks_per_request_in_the_modern_era(
    autojump_clock: trio.testing.MockClock,
) -> None:
    logs: list[Any] = []
    server, _ = build()
    async with open_pair(server, log_handler=lambda p: logs.append(p.data)) as (client, _):
        await client.call_tool("chatty")
        await trio.testing.wait_all_tasks_blocked()
        assert logs == []
        await client.set_logging_level("info")
        await client.call_tool("chatty")
        await trio.testing.wait_all_tasks_blocked()
        assert logs == ["an info line"]


# --- cache hints ---------------------------------------------------------------------


@pytest.mark.spec("CA-01", "CA-03", "CA-04", "CA-06", "CA-07")
async def test_the_cached_lists_follow_the_cache_hints(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    server.cache_hints = {"tools/list": (60_000, "public")}
    async with open_pair(server) as (client, _):
        assert client.is_fresh("tools")
        assert client._parts.cache.scope["tools"] == "public"
        # resources/list got the default (0, "private"): stale at once.
        assert not client.is_fresh("resources")
        before = client.generation("tools")
        await client.ensure_fresh("tools")
        assert client.generation("tools") == before  # fresh: not refetched
        await trio.sleep(61)
        assert not client.is_fresh("tools")  # expired, and nothing polled (CA-04)
        assert client.generation("tools") == before
        await client.ensure_fresh("tools")
        assert client.generation("tools") == before + 1
        assert client.is_fresh("tools")
        # A list_changed makes a fresh list stale (CA-06), and it is refetched.
        server.add_tool(lambda: "x", name="another")
        await client.wait_list_changed("tools")
        assert "another" in client.tools


async def test_without_hints_a_handshake_era_list_is_fresh_until_it_changes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    async with open_pair(server, era="legacy") as (client, _):
        await trio.sleep(3600)
        assert client.is_fresh("tools")


class _HandshakeOnlyTransport(trio.abc.Channel[bytes]):
    """A custom transport that says it carries only the handshake era (see
    ``trio_mcp._transport``), over another transport."""

    handshake_only = True
    answers_every_request = False

    def __init__(self, inner: trio.abc.Channel[bytes]) -> None:
        self._inner = inner

    async def send(self, value: bytes) -> None:
        await self._inner.send(value)

    async def receive(self) -> bytes:
        return await self._inner.receive()

    async def aclose(self) -> None:
        await self._inner.aclose()


@pytest.mark.spec("VR-11")
async def test_auto_on_a_handshake_only_transport_goes_straight_to_initialize(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    client_end, server_end = memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(
            lambda task_status: serve_session(server, server_end, task_status=task_status)
        )
        async with open_client(_HandshakeOnlyTransport(client_end)) as client:
            assert client.era == "legacy"
            methods = [r.method for r in client.session.requests()]
            assert "server/discover" not in methods
            assert methods[0] == "initialize"
