"""The server in the 2026-07-28 era, over a raw peer: era detection, per-request
``_meta``, ``server/discover``, input-required rounds, ``subscriptions/listen``.

Every test runs on the autojump clock (pytest-trio's ``autojump_clock``) and
orders events by what the peer receives, never by sleeping.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from helpers import RawPeer
from server_helpers import error_code, open_raw

from trio_mcp import Context, RequestStateSealer, Server
from trio_mcp.protocol import Direction, RequestState, SessionState

MODERN = "2026-07-28"
V = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
INFO = "io.modelcontextprotocol/clientInfo"
LEVEL = "io.modelcontextprotocol/logLevel"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
SUB_ID = "io.modelcontextprotocol/subscriptionId"
FORM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def meta(capabilities: dict[str, Any] | None = None, *, level: str | None = None) -> dict[str, Any]:
    frame: dict[str, Any] = {
        V: MODERN,
        CAPS: {} if capabilities is None else capabilities,
        INFO: {"name": "raw", "version": "1"},
    }
    if level is not None:
        frame[LEVEL] = level
    return frame


ELICIT: dict[str, Any] = {"elicitation": {"form": {}}}


class Clock:
    """A wall clock for the sealer that the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def build(**options: Any) -> tuple[Server, dict[str, Any]]:
    seen: dict[str, Any] = {"runs": 0, "orders": 0, "slow": None}
    server = Server("modern", version="2.0", logging=True, **options)

    @server.tool()
    async def add(a: int, b: int) -> int:
        return a + b

    @server.tool()
    async def order(item: str, ctx: Context) -> str:
        """Asks two questions in two rounds; places the order once."""
        seen["runs"] += 1
        if "order" not in ctx.saved:
            seen["orders"] += 1
            ctx.saved["order"] = f"o-{seen['orders']}"
        first = await ctx.elicit(
            {"mode": "form", "message": f"Buy {item}?", "requestedSchema": FORM}
        )
        second = await ctx.elicit({"mode": "form", "message": "Sure?", "requestedSchema": FORM})
        ok = first.content == {"ok": True} and second.content == {"ok": True}
        return f"{ctx.saved['order']} {'confirmed' if ok else 'declined'} (round {ctx.round})"

    @server.tool()
    async def both(ctx: Context) -> str:
        """Asks for two inputs in one round."""
        answers = await ctx.request_inputs(
            {
                "name": (
                    "elicitation/create",
                    {"mode": "form", "message": "Name?", "requestedSchema": FORM},
                ),
                "roots": ("roots/list", None),
            }
        )
        return f"{answers['name'].action} {len(answers['roots'].roots)}"

    @server.tool()
    async def slow(ctx: Context) -> None:
        try:
            await ctx.info("slow started")
            await trio.sleep_forever()
        finally:
            seen["slow"] = "stopped"

    @server.tool()
    async def grow() -> str:
        server.add_tool(lambda: "new", name="grown")
        return "grown"

    @server.resource("file:///a.txt")
    async def a_txt() -> str:
        return "A"

    return server, seen


async def call(
    peer: RawPeer, name: str, arguments: dict[str, Any] | None = None, **params: Any
) -> Any:
    body = {"name": name, "arguments": arguments or {}, "_meta": meta(ELICIT), **params}
    return await peer.send_request("tools/call", body)


# --- era detection ---------------------------------------------------------


@pytest.mark.spec("VR-09", "DS-01", "DS-02", "DS-03", "CA-01", "ME-11")
async def test_discover_then_a_modern_call_on_the_first_message(autojump_clock: Any) -> None:
    server, _ = build(cache_hints={"server/discover": (60_000, "public")}, instructions="hi")
    async with open_raw(server, version=None) as (peer, session):
        rid = await peer.send_request("server/discover", {"_meta": meta()})
        result = (await peer.wait_response(rid))["result"]
        assert result["supportedVersions"][0] == MODERN
        assert "2025-11-25" in result["supportedVersions"]
        assert "tools" in result["capabilities"]
        assert result["instructions"] == "hi"
        assert result["resultType"] == "complete"
        assert (result["ttlMs"], result["cacheScope"]) == (60_000, "public")
        assert result["_meta"][SERVER_INFO] == {"name": "modern", "version": "2.0"}
        # A probe does not decide the era.
        assert session.state.value == "new"
        rid = await call(peer, "add", {"a": 2, "b": 3})
        result = (await peer.wait_response(rid))["result"]
        assert result["content"] == [{"type": "text", "text": "5"}]
        assert result["resultType"] == "complete"
        assert SERVER_INFO in result["_meta"]
        assert session.state.value == "modern"


@pytest.mark.spec("VR-09", "VR-10")
async def test_a_handshake_on_one_connection_and_modern_on_another(autojump_clock: Any) -> None:
    server, _ = build()
    async with (
        open_raw(server) as (legacy, legacy_session),
        open_raw(server, version=None) as (modern, modern_session),
    ):
        rid = await call(modern, "add", {"a": 1, "b": 1})
        assert (await modern.wait_response(rid))["result"]["resultType"] == "complete"
        rid = await legacy.call_tool("add", {"a": 1, "b": 2})
        result = (await legacy.wait_response(rid))["result"]
        assert result["content"] == [{"type": "text", "text": "3"}]
        assert "resultType" not in result
        assert "_meta" not in result
        assert legacy_session.state is SessionState.OPERATING
        assert modern_session.state is SessionState.MODERN


@pytest.mark.spec("VR-09")
async def test_initialize_after_a_modern_request_is_refused(autojump_clock: Any) -> None:
    server, _ = build()
    async with open_raw(server, version=None) as (peer, _):
        await peer.wait_response(await call(peer, "add", {"a": 1, "b": 1}))
        rid = await peer.send_request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "x", "version": "0"},
            },
        )
        assert error_code(await peer.wait_response(rid)) == -32600
        # The connection goes on.
        assert "result" in await peer.wait_response(await call(peer, "add", {"a": 1, "b": 2}))


@pytest.mark.spec("VR-13")
async def test_a_modern_only_server_refuses_initialize_naming_its_versions(
    autojump_clock: Any,
) -> None:
    server, _ = build(protocol_versions=(MODERN,))
    async with open_raw(server, version=None) as (peer, _):
        rid = await peer.send_request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "x", "version": "0"},
            },
        )
        error = (await peer.wait_response(rid))["error"]
        assert error["code"] == -32022
        assert error["data"] == {"supported": [MODERN], "requested": "2025-11-25"}


async def test_a_handshake_only_server_answers_the_probe_with_method_not_found(
    autojump_clock: Any,
) -> None:
    server, _ = build(protocol_versions=("2025-11-25", "2025-06-18"))
    async with open_raw(server, version=None) as (peer, _):
        rid = await peer.send_request("server/discover", {"_meta": meta()})
        assert error_code(await peer.wait_response(rid)) == -32601


# --- per-request _meta ------------------------------------------------------


@pytest.mark.spec("ME-07")
@pytest.mark.parametrize(
    "bad_meta",
    [
        None,
        {V: MODERN},
        {CAPS: {}},
        {V: 20260728, CAPS: {}},
        {V: MODERN, CAPS: []},
    ],
    ids=["no-meta", "no-capabilities", "no-version", "version-not-string", "caps-not-object"],
)
async def test_missing_meta_fields_are_invalid_params(
    autojump_clock: Any, bad_meta: dict[str, Any] | None
) -> None:
    server, _ = build()
    async with open_raw(server, version=None) as (peer, _):
        # A first modern request puts the connection in the modern era.
        await peer.wait_response(await call(peer, "add", {"a": 1, "b": 1}))
        params: dict[str, Any] = {"name": "add", "arguments": {"a": 1, "b": 2}}
        if bad_meta is not None:
            params["_meta"] = bad_meta
        rid = await peer.send_request("tools/call", params)
        response = await peer.wait_response(rid)
        assert response["id"] == rid
        assert error_code(response) == -32602
        assert "missing" in response["error"]["data"]
        # The connection goes on.
        assert "result" in await peer.wait_response(await call(peer, "add", {"a": 1, "b": 2}))


@pytest.mark.spec("ME-07")
async def test_a_discover_without_meta_is_invalid_params(autojump_clock: Any) -> None:
    server, _ = build()
    async with open_raw(server, version=None) as (peer, _):
        rid = await peer.send_request("server/discover")
        assert error_code(await peer.wait_response(rid)) == -32602


@pytest.mark.spec("VR-02")
async def test_an_unsupported_version_is_32022_with_supported_and_requested(
    autojump_clock: Any,
) -> None:
    server, _ = build()
    async with open_raw(server, version=None) as (peer, session):
        rid = await peer.send_request(
            "tools/call", {"name": "add", "arguments": {}, "_meta": {V: "2099-01-01", CAPS: {}}}
        )
        error = (await peer.wait_response(rid))["error"]
        assert error["code"] == -32022
        assert error["data"]["requested"] == "2099-01-01"
        assert error["data"]["supported"][0] == MODERN
        # Refused before it could decide the era.
        assert session.state is SessionState.NEW


@pytest.mark.spec("ME-09", "ME-10", "PT-07")
async def test_an_undeclared_capability_is_32021(autojump_clock: Any) -> None:
    server, seen = build()
    async with open_raw(server, version=None) as (peer, _):
        # The same client declared elicitation on an earlier request: never inferred.
        await peer.wait_response(await call(peer, "add", {"a": 1, "b": 1}))
        rid = await peer.send_request(
            "tools/call", {"name": "order", "arguments": {"item": "x"}, "_meta": meta({})}
        )
        error = (await peer.wait_response(rid))["error"]
        assert error["code"] == -32021
        assert error["data"] == {"requiredCapabilities": {"elicitation": {"form": {}}}}
        assert seen["runs"] == 1


@pytest.mark.spec("LG-08")
async def test_an_unknown_log_level_is_invalid_params(autojump_clock: Any) -> None:
    server, _ = build()
    async with open_raw(server, version=None) as (peer, _):
        rid = await peer.send_request(
            "tools/call",
            {"name": "add", "arguments": {"a": 1, "b": 1}, "_meta": meta(level="loud")},
        )
        assert error_code(await peer.wait_response(rid)) == -32602


@pytest.mark.spec("LG-06", "LG-07", "ME-15")
async def test_log_messages_only_for_a_request_that_asked(autojump_clock: Any) -> None:
    server, _ = build()

    @server.tool()
    async def chatty(ctx: Context) -> str:
        await ctx.debug("debug line")
        await ctx.warning("warning line")
        return "done"

    async with open_raw(server, version=None) as (peer, _):
        quiet = await peer.send_request("tools/call", {"name": "chatty", "_meta": meta()})
        await peer.wait_response(quiet)
        loud = await peer.send_request(
            "tools/call", {"name": "chatty", "_meta": meta(level="info")}
        )
        await peer.wait_response(loud)
        logs = [
            f["params"]["data"] for f in peer.frames if f.get("method") == "notifications/message"
        ]
        assert logs == ["warning line"]


# --- input-required rounds -----------------------------------------------------


async def answer_round(
    peer: RawPeer, rid: Any, answers: dict[str, Any], name: str, arguments: dict[str, Any]
) -> tuple[Any, dict[str, Any]]:
    """Retry round *rid* with *answers*; return the new id and its result."""
    result = (await peer.wait_response(rid))["result"]
    assert result["resultType"] == "input_required"
    assert "ttlMs" not in result
    retry = await call(
        peer, name, arguments, inputResponses=answers, requestState=result["requestState"]
    )
    return retry, (await peer.wait_response(retry))


@pytest.mark.spec("PT-03", "PT-05", "PT-06", "PT-14", "PT-17")
async def test_a_call_with_two_inputs_over_three_rounds(autojump_clock: Any) -> None:
    server, seen = build()
    async with open_raw(server, version=None) as (peer, session):
        first = await call(peer, "order", {"item": "tea"})
        r1 = (await peer.wait_response(first))["result"]
        assert r1["resultType"] == "input_required"
        assert list(r1["inputRequests"]) == ["elicitation-1"]
        assert r1["inputRequests"]["elicitation-1"]["method"] == "elicitation/create"
        assert r1["inputRequests"]["elicitation-1"]["params"]["message"] == "Buy tea?"
        # Nothing is pending on the server between rounds (PT-17).
        await session.wait_inbound_settled()
        second, response = await answer_round(
            peer,
            first,
            {"elicitation-1": {"action": "accept", "content": {"ok": True}}},
            "order",
            {"item": "tea"},
        )
        r2 = response["result"]
        assert list(r2["inputRequests"]) == ["elicitation-2"]
        third = await call(
            peer,
            "order",
            {"item": "tea"},
            inputResponses={"elicitation-2": {"action": "accept", "content": {"ok": True}}},
            requestState=r2["requestState"],
        )
        final = (await peer.wait_response(third))["result"]
        assert final["resultType"] == "complete"
        assert final["content"][0]["text"] == "o-1 confirmed (round 3)"
        # The handler ran three times; the order was placed once (ctx.saved).
        assert (seen["runs"], seen["orders"]) == (3, 1)
        records = {r.id: r for r in session.requests() if r.direction is Direction.INBOUND}
        assert records[first].input_required
        assert records[first].state is RequestState.COMPLETED
        assert records[second].follows == first
        assert records[second].input_required
        assert records[third].follows == second
        assert not records[third].input_required


@pytest.mark.spec("PT-05")
async def test_two_inputs_in_one_round(autojump_clock: Any) -> None:
    server, _ = build()
    async with open_raw(server, version=None) as (peer, _):
        caps: dict[str, Any] = {"elicitation": {}, "roots": {}}
        rid = await peer.send_request("tools/call", {"name": "both", "_meta": meta(caps)})
        result = (await peer.wait_response(rid))["result"]
        assert set(result["inputRequests"]) == {"name", "roots"}
        retry = await peer.send_request(
            "tools/call",
            {
                "name": "both",
                "_meta": meta(caps),
                "inputResponses": {
                    "name": {"action": "decline"},
                    "roots": {"roots": [{"uri": "file:///r"}]},
                },
                "requestState": result["requestState"],
            },
        )
        final = (await peer.wait_response(retry))["result"]
        assert final["content"][0]["text"] == "decline 1"


@pytest.mark.spec("PT-08", "PT-09", "PT-10")
@pytest.mark.parametrize(
    "attack", ["tampered", "expired", "replayed", "foreign-args", "foreign-tool"]
)
async def test_a_bad_request_state_is_refused(autojump_clock: Any, attack: str) -> None:
    clock = Clock()
    server, seen = build(
        request_state=RequestStateSealer(b"k" * 32, ttl=60, single_use=True, clock=clock)
    )
    async with open_raw(server, version=None) as (peer, _):
        first = await call(peer, "order", {"item": "tea"})
        state = (await peer.wait_response(first))["result"]["requestState"]
        answers = {"elicitation-1": {"action": "accept", "content": {"ok": True}}}
        arguments: dict[str, Any] = {"item": "tea"}
        name = "order"
        if attack == "tampered":
            state = state[:-2] + ("AA" if not state.endswith("AA") else "BB")
        elif attack == "expired":
            clock.now += 61
        elif attack == "replayed":
            ok = await call(peer, name, arguments, inputResponses=answers, requestState=state)
            assert "result" in await peer.wait_response(ok)
        elif attack == "foreign-args":
            arguments = {"item": "gold"}
        else:
            name = "both"
        rid = await call(peer, name, arguments, inputResponses=answers, requestState=state)
        response = await peer.wait_response(rid)
        assert error_code(response) == -32602, response
        assert response["error"]["data"] == {"reason": attack.split("-")[0]}
        runs = seen["runs"]
        # The session goes on.
        assert "result" in await peer.wait_response(await call(peer, "add", {"a": 1, "b": 1}))
        assert seen["runs"] == runs


@pytest.mark.spec("PT-11", "PT-17")
async def test_a_client_that_never_retries_leaves_nothing_behind(autojump_clock: Any) -> None:
    server, seen = build()
    async with open_raw(server, version=None) as (peer, session):
        rid = await call(peer, "order", {"item": "tea"})
        await peer.wait_response(rid)
        await session.wait_inbound_settled()
        assert session.protocol.in_flight(Direction.INBOUND) == []
        assert seen["runs"] == 1


@pytest.mark.spec("CN-05", "CN-16", "SI-09")
async def test_a_cancel_during_a_modern_call_stops_it_and_nothing_is_sent(
    autojump_clock: Any,
) -> None:
    server, seen = build()
    async with open_raw(server, version=None) as (peer, session):
        rid = await peer.send_request("tools/call", {"name": "slow", "_meta": meta(level="info")})
        await peer.wait_method("notifications/message")
        await peer.cancel(rid)
        await session.wait_inbound_settled()
        assert seen["slow"] == "stopped"
        record = next(r for r in session.requests() if r.id == rid)
        assert record.state is RequestState.CANCELLED
        assert record.cancel_origin is not None
        assert record.cancel_origin.value == "peer"
        await peer.wait_response(await call(peer, "add", {"a": 1, "b": 1}))
        assert peer.responses(rid) == []


@pytest.mark.spec("PT-11")
async def test_a_cancel_between_rounds_is_ignored(autojump_clock: Any) -> None:
    server, _ = build()
    async with open_raw(server, version=None) as (peer, _session):
        rid = await call(peer, "order", {"item": "tea"})
        state = (await peer.wait_response(rid))["result"]["requestState"]
        await peer.cancel(rid)  # the round is over: a late cancel (CN-06)
        retry = await call(
            peer,
            "order",
            {"item": "tea"},
            inputResponses={"elicitation-1": {"action": "decline"}},
            requestState=state,
        )
        assert "inputRequests" in (await peer.wait_response(retry))["result"]


# --- subscriptions/listen --------------------------------------------------------


async def listen(peer: RawPeer, **notifications: Any) -> Any:
    return await peer.send_request(
        "subscriptions/listen", {"notifications": notifications, "_meta": meta()}
    )


@pytest.mark.spec("SB-01", "SB-02", "SB-03", "SB-05", "ME-13")
async def test_listen_acknowledges_then_delivers_only_what_was_asked(autojump_clock: Any) -> None:
    server, _ = build()
    async with open_raw(server, version=None) as (peer, _):
        sub = await listen(peer, toolsListChanged=True, promptsListChanged=True)
        ack = await peer.wait_method("notifications/subscriptions/acknowledged")
        # No prompts: not honoured (SB-03).
        assert ack["params"]["notifications"] == {"toolsListChanged": True}
        assert ack["params"]["_meta"][SUB_ID] == sub
        other = await listen(peer, resourceSubscriptions=["file:///a.txt"])
        await peer.wait_for(
            lambda f: (
                f.get("method") == "notifications/subscriptions/acknowledged"
                and f["params"]["_meta"][SUB_ID] == other
            )
        )
        await peer.wait_response(await call(peer, "grow"))
        changed = await peer.wait_method("notifications/tools/list_changed")
        assert changed["params"]["_meta"][SUB_ID] == sub
        server.resource_updated("file:///a.txt")
        updated = await peer.wait_method("notifications/resources/updated")
        assert updated["params"] == {"uri": "file:///a.txt", "_meta": {SUB_ID: other}}
        # Each stream saw only its own type (SB-01).
        tagged = [
            (f["method"], f["params"]["_meta"][SUB_ID])
            for f in peer.frames
            if f.get("method", "").startswith("notifications/")
            and SUB_ID in f.get("params", {}).get("_meta", {})
        ]
        assert tagged == [
            ("notifications/subscriptions/acknowledged", sub),
            ("notifications/subscriptions/acknowledged", other),
            ("notifications/tools/list_changed", sub),
            ("notifications/resources/updated", other),
        ]


@pytest.mark.spec("SB-08", "CN-16")
async def test_a_cancelled_listen_ends_and_gets_no_response(autojump_clock: Any) -> None:
    server, _ = build()
    async with open_raw(server, version=None) as (peer, session):
        sub = await listen(peer, toolsListChanged=True)
        await peer.wait_method("notifications/subscriptions/acknowledged")
        await peer.cancel(sub)
        await session.wait_inbound_settled()
        await peer.wait_response(await call(peer, "grow"))
        assert peer.responses(sub) == []
        assert not any(f.get("method") == "notifications/tools/list_changed" for f in peer.frames)
        assert len(server._listeners) == 0


@pytest.mark.spec("SB-09")
async def test_shutdown_ends_a_listen_with_a_complete_result(autojump_clock: Any) -> None:
    server, _ = build()
    async with open_raw(server, version=None) as (peer, session):
        sub = await listen(peer, toolsListChanged=True)
        await peer.wait_method("notifications/subscriptions/acknowledged")
        await session.aclose()
        (response,) = peer.responses(sub)
        assert response["result"]["resultType"] == "complete"
        assert response["result"]["_meta"][SUB_ID] == sub


@pytest.mark.spec("PT-01", "SI-07")
async def test_a_modern_server_never_sends_a_request(autojump_clock: Any) -> None:
    server, _ = build()
    async with open_raw(server, version=None) as (peer, _):
        for rid in [
            await call(peer, "order", {"item": "x"}),
            await call(peer, "add", {"a": 1, "b": 1}),
        ]:
            await peer.wait_response(rid)
        assert all("id" not in f or "method" not in f for f in peer.frames)


@pytest.mark.spec("A-22")
async def test_resource_not_found_is_32602_in_the_modern_era(autojump_clock: Any) -> None:
    server, _ = build()
    async with open_raw(server, version=None) as (peer, _):
        rid = await peer.send_request("resources/read", {"uri": "file:///nope", "_meta": meta()})
        assert error_code(await peer.wait_response(rid)) == -32602
        rid = await peer.send_request("resources/read", {"uri": "file:///a.txt", "_meta": meta()})
        result = (await peer.wait_response(rid))["result"]
        assert (result["ttlMs"], result["cacheScope"]) == (0, "private")
