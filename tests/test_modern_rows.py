"""Rows of the 2026-07-28 checklist that the era's own test files left unproved.

Each test is tied to its rows with ``@pytest.mark.spec`` (spec_notes/ names it
back): per-request ``_meta`` (ME), statelessness (ST), multi round-trip requests
(PT), subscriptions (SB), caching (CA), and the 2026-07-28 rows of stdio (SI),
cancellation (CN), progress (PG) and logging (LG).

Against real servers and clients in memory, or raw peers speaking frames; every
async test runs on the autojump clock and orders events by what a peer has
seen, never by sleeping.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import trio
import trio.testing
from helpers import RawPeer, Recorder, open_pair, open_raw_client_transport, open_raw_server, settle

from trio_mcp import Context, FormElicitation, InvalidPeerResult, RPCError, Server, open_client
from trio_mcp import types as t
from trio_mcp.lowlevel import RequestContext, Session
from trio_mcp.protocol import (
    SUPPORTED_VERSIONS,
    CancelOrigin,
    Connection,
    Direction,
    ErrorReceived,
    FrameDirection,
    Ignored,
    IgnoredReason,
    Notification,
    RequestReceived,
    RequestState,
    Role,
)

MODERN = "2026-07-28"
V = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
INFO = "io.modelcontextprotocol/clientInfo"
LEVEL = "io.modelcontextprotocol/logLevel"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
SUB_ID = "io.modelcontextprotocol/subscriptionId"
FORM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
ELICIT: dict[str, Any] = {"elicitation": {"form": {}}}
ACCEPT = {"action": "accept", "content": {"ok": True}}


def meta(
    capabilities: dict[str, Any] | None = None,
    *,
    level: str | None = None,
    info: Any = None,
    **extra: Any,
) -> dict[str, Any]:
    """The ``_meta`` of a valid 2026-07-28 request."""
    frame: dict[str, Any] = {V: MODERN, CAPS: {} if capabilities is None else capabilities}
    if info is not None:
        frame[INFO] = info
    if level is not None:
        frame[LEVEL] = level
    frame.update(extra)
    return frame


def build(**options: Any) -> tuple[Server, dict[str, Any]]:
    """A server with one of everything, and what its handlers saw."""
    seen: dict[str, Any] = {"orders": 0, "runs": 0, "reads": 0, "contexts": []}
    server = Server("rows", version="1", logging=True, **options)

    @server.tool()
    async def add(a: int, b: int) -> int:
        return a + b

    @server.tool()
    async def order(item: str, ctx: Context) -> str:
        """Asks once; what it did before the question is kept in ``ctx.saved``."""
        seen["runs"] += 1
        if "order" not in ctx.saved:
            seen["orders"] += 1
            ctx.saved["order"] = f"{item}-{seen['orders']}"
        answer = await ctx.elicit(
            {"mode": "form", "message": f"Buy {item}?", "requestedSchema": FORM}
        )
        return f"{ctx.saved['order']} {answer.action}"

    @server.tool()
    async def ask_model(ctx: Context) -> str:
        result = await ctx.create_message(
            {
                "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                "maxTokens": 5,
            }
        )
        assert isinstance(result.content, t.TextContent)
        return result.content.text

    @server.tool()
    async def both(ctx: Context) -> str:
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
    async def chatty(ctx: Context) -> str:
        """Reports progress and logs; keeps its context for after the response."""
        seen["contexts"].append(ctx)
        await ctx.report_progress(1, 2)
        await ctx.info("working")
        await ctx.report_progress(2, 2)
        return "done"

    @server.resource("file:///a.txt")
    async def a_txt() -> str:
        seen["reads"] += 1
        return "A"

    @server.resource("file:///secret.txt")
    async def secret(ctx: Context) -> str:
        answer = await ctx.elicit(
            {"mode": "form", "message": "Show the secret?", "requestedSchema": FORM}
        )
        return "S" if answer.action == "accept" else "-"

    @server.resource_template("file:///logs/{day}")
    async def log_of(day: str) -> str:
        return day

    @server.completion(prompt="greet", argument="name")
    def names(value: str) -> list[str]:
        return [n for n in ("Ada", "Alan") if n.startswith(value)]

    @server.prompt()
    async def greet(name: str, ctx: Context) -> str:
        answer = await ctx.elicit(
            {"mode": "form", "message": f"Greet {name}?", "requestedSchema": FORM}
        )
        return f"Hello {name} ({answer.action})"

    return server, seen


async def call(
    peer: RawPeer,
    name: str,
    arguments: dict[str, Any] | None = None,
    capabilities: dict[str, Any] | None = None,
    **params: Any,
) -> Any:
    """Send a 2026-07-28 ``tools/call``; its id."""
    body = {
        "name": name,
        "arguments": arguments or {},
        "_meta": meta(ELICIT if capabilities is None else capabilities),
        **params,
    }
    return await peer.send_request("tools/call", body)


async def result_of(peer: RawPeer, request_id: Any) -> dict[str, Any]:
    response = await peer.wait_response(request_id)
    assert "result" in response, response
    result: dict[str, Any] = response["result"]
    return result


def error_code(frame: dict[str, Any]) -> int:
    assert "error" in frame, frame
    code: int = frame["error"]["code"]
    return code


# --- the server: caching hints (CA) --------------------------------------------------


@pytest.mark.spec("CA-01", "DS-02")
async def test_the_six_cacheable_results_carry_hints_and_nothing_else_does(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build(cache_hints={"tools/list": (1000, "public")})
    cacheable: list[tuple[str, dict[str, Any]]] = [
        ("server/discover", {}),
        ("tools/list", {}),
        ("prompts/list", {}),
        ("resources/list", {}),
        ("resources/templates/list", {}),
        ("resources/read", {"uri": "file:///a.txt"}),
    ]
    others: list[tuple[str, dict[str, Any]]] = [
        ("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}),
        ("resources/read", {"uri": "file:///secret.txt"}),  # input required
        ("prompts/get", {"name": "greet", "arguments": {"name": "x"}}),  # input required
        (
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "greet"},
                "argument": {"name": "name", "value": "A"},
            },
        ),
    ]
    async with open_raw_server(server, version=None) as (peer, _):
        hints = []
        for method, params in cacheable:
            result = await result_of(
                peer, await peer.send_request(method, {**params, "_meta": meta(ELICIT)})
            )
            assert result["resultType"] == "complete", (method, result)
            assert isinstance(result["ttlMs"], int)
            assert result["ttlMs"] >= 0
            hints.append((method, result["ttlMs"], result["cacheScope"]))
        # Declared for tools/list; every other one gets the safe default.
        assert hints == [
            ("server/discover", 0, "private"),
            ("tools/list", 1000, "public"),
            ("prompts/list", 0, "private"),
            ("resources/list", 0, "private"),
            ("resources/templates/list", 0, "private"),
            ("resources/read", 0, "private"),
        ]
        for method, params in others:
            result = await result_of(
                peer, await peer.send_request(method, {**params, "_meta": meta(ELICIT)})
            )
            assert "ttlMs" not in result, (method, result)
            assert "cacheScope" not in result, (method, result)


@pytest.mark.spec("SB-01", "SB-05")
async def test_each_change_notice_rides_the_stream_that_asked_for_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    async with open_raw_server(server, version=None) as (peer, _):
        lists = await peer.send_request(
            "subscriptions/listen",
            {
                "notifications": {
                    "toolsListChanged": True,
                    "promptsListChanged": True,
                    "resourcesListChanged": True,
                },
                "_meta": meta(),
            },
        )
        ack = await peer.wait_method("notifications/subscriptions/acknowledged")
        assert ack["params"]["notifications"] == {
            "toolsListChanged": True,
            "promptsListChanged": True,
            "resourcesListChanged": True,
        }
        updates = await peer.send_request(
            "subscriptions/listen",
            {"notifications": {"resourceSubscriptions": ["file:///logs/"]}, "_meta": meta()},
        )
        await peer.wait_for(
            lambda f: (
                f.get("method") == "notifications/subscriptions/acknowledged"
                and f["params"]["_meta"][SUB_ID] == updates
            )
        )
        server.add_tool(lambda: "t", name="new_tool")
        await peer.wait_method("notifications/tools/list_changed")
        server.add_prompt(lambda: "p", name="new_prompt")
        await peer.wait_method("notifications/prompts/list_changed")
        server.add_resource("file:///b.txt", lambda: "B")
        await peer.wait_method("notifications/resources/list_changed")
        server.resource_updated("file:///logs/monday")  # under the subscribed parent
        server.resource_updated("file:///a.txt")  # subscribed by nobody
        await peer.wait_method("notifications/resources/updated")
        await result_of(peer, await call(peer, "add", {"a": 1, "b": 1}))
        notices = [
            (f["method"], f["params"]["_meta"][SUB_ID], f["params"].get("uri"))
            for f in peer.frames
            if f.get("method", "").startswith("notifications/")
            and f["method"] != "notifications/subscriptions/acknowledged"
        ]
        assert notices == [
            ("notifications/tools/list_changed", lists, None),
            ("notifications/prompts/list_changed", lists, None),
            ("notifications/resources/list_changed", lists, None),
            ("notifications/resources/updated", updates, "file:///logs/monday"),
        ]


@pytest.mark.spec("CA-07")
async def test_every_page_of_a_list_has_the_same_cache_scope(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build(page_size=2, cache_hints={"tools/list": (5000, "public")})
    async with open_raw_server(server, version=None) as (peer, _):
        pages: list[dict[str, Any]] = []
        cursor = None
        while True:
            params: dict[str, Any] = {"_meta": meta()}
            if cursor is not None:
                params["cursor"] = cursor
            page = await result_of(peer, await peer.send_request("tools/list", params))
            pages.append(page)
            cursor = page.get("nextCursor")
            if cursor is None:
                break
        assert len(pages) == 3  # five tools, two a page
        assert {(p["ttlMs"], p["cacheScope"]) for p in pages} == {(5000, "public")}


# --- the server: per-request _meta (ME) -------------------------------------------------


@pytest.mark.spec("ME-11")
async def test_server_info_in_results_can_be_turned_off(
    autojump_clock: trio.testing.MockClock,
) -> None:
    for setting in (True, False):
        server, _ = build(server_info_in_results=setting)
        async with open_raw_server(server, version=None) as (peer, _):
            result = await result_of(peer, await call(peer, "add", {"a": 1, "b": 1}))
            assert result["resultType"] == "complete"
            if setting:
                assert result["_meta"][SERVER_INFO] == {"name": "rows", "version": "1"}
            else:
                assert SERVER_INFO not in result.get("_meta", {})


@pytest.mark.spec("ME-12")
async def test_client_info_changes_no_answer(autojump_clock: trio.testing.MockClock) -> None:
    server, _ = build()
    async with open_raw_server(server, version=None) as (peer, _):
        answers = []
        for info in (None, {"name": "raw", "version": "1"}, {"name": "admin", "version": "99"}):
            listed = await result_of(
                peer, await peer.send_request("tools/list", {"_meta": meta(info=info)})
            )
            called = await result_of(
                peer,
                await peer.send_request(
                    "tools/call",
                    {"name": "add", "arguments": {"a": 2, "b": 2}, "_meta": meta(info=info)},
                ),
            )
            answers.append((listed, called))
        # Self-reported and unverified: the same answers whoever it claims to be.
        assert answers[0] == answers[1] == answers[2]


# --- the server: request-scoped notifications (PT-02, PG, LG) -----------------------------


@pytest.mark.spec("PT-02", "PG-03", "PG-10", "LG-06", "LG-07")
async def test_request_scoped_notifications_only_while_the_request_runs(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, seen = build()
    async with open_raw_server(server, version=None) as (peer, session):
        rid = await peer.send_request(
            "tools/call",
            {"name": "chatty", "_meta": meta(level="info", progressToken="tok")},
        )
        await result_of(peer, rid)
        kinds = [
            f.get("method", "response")
            for f in peer.frames
            if f.get("id") == rid
            or f.get("method") in ("notifications/progress", "notifications/message")
        ]
        # Server to client, before the response (PT-02, PG-03).
        assert kinds == [
            "notifications/progress",
            "notifications/message",
            "notifications/progress",
            "response",
        ]
        progress = [f["params"] for f in peer.frames if f.get("method") == "notifications/progress"]
        assert [(p["progressToken"], p["progress"]) for p in progress] == [("tok", 1), ("tok", 2)]
        # After the response the request's context sends nothing more (PG-10, LG-07).
        (ctx,) = seen["contexts"]
        before = len(peer.frames)
        await ctx.report_progress(3, 3)
        await ctx.info("too late")
        # Nor is there any log message about no request at all (LG-06).
        await server.send_log(session, "emergency", "outside any request")
        await result_of(peer, await call(peer, "add", {"a": 1, "b": 1}))
        assert len(peer.frames) == before + 1


@pytest.mark.spec("CN-16", "SI-09")
async def test_after_the_clients_cancel_not_even_a_log_message_is_sent(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    cleaned_up = trio.Event()

    @server.tool()
    async def stubborn(ctx: Context) -> str:
        await ctx.info("started")
        try:
            await trio.sleep_forever()
        finally:
            # Cleanup that outlives the cancel, and reports as it goes.
            with trio.CancelScope(shield=True):
                await ctx.info("cleaning up")
                await ctx.report_progress(5)
                cleaned_up.set()
        raise AssertionError("unreachable")  # pragma: no cover

    async with open_raw_server(server, version=None) as (peer, session):
        rid = await peer.send_request(
            "tools/call", {"name": "stubborn", "_meta": meta(level="info", progressToken="p")}
        )
        await peer.wait_method("notifications/message")
        await peer.cancel(rid)
        await session.wait_inbound_settled()
        assert cleaned_up.is_set()
        await result_of(peer, await call(peer, "add", {"a": 1, "b": 1}))
        logged = [
            f["params"]["data"] for f in peer.frames if f.get("method") == "notifications/message"
        ]
        assert logged == ["started"]
        assert not [f for f in peer.frames if f.get("method") == "notifications/progress"]
        assert peer.responses(rid) == []


@pytest.mark.spec("CN-16")
async def test_no_log_after_the_clients_cancel_even_when_shutdown_asked_first(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The record keeps the first asker (shutdown here), but the peer's cancel
    still means nothing more is sent for the request."""
    server, _ = build()
    cleaned_up = trio.Event()

    @server.tool()
    async def stubborn(ctx: Context) -> str:
        await ctx.info("started")
        try:
            await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True):
                await ctx.info("cleaning up")
                cleaned_up.set()
        raise AssertionError("unreachable")  # pragma: no cover

    async with open_raw_server(server, version=None) as (peer, session):
        rid = await peer.send_request(
            "tools/call", {"name": "stubborn", "_meta": meta(level="info")}
        )
        await peer.wait_method("notifications/message")
        # Shutdown notes its wish first (without cancelling yet), then the peer cancels.
        assert session.protocol.request_cancel(
            Direction.INBOUND, rid, CancelOrigin.SHUTDOWN, "going down"
        )
        await peer.cancel(rid)
        await session.wait_inbound_settled()
        assert cleaned_up.is_set()
        await result_of(peer, await call(peer, "add", {"a": 1, "b": 1}))
        logged = [
            f["params"]["data"] for f in peer.frames if f.get("method") == "notifications/message"
        ]
        assert logged == ["started"]
        assert peer.responses(rid) == []
        (record,) = [r for r in session.requests() if r.id == rid]
        assert record.cancel_origin is CancelOrigin.SHUTDOWN


@pytest.mark.spec("SB-13", "PG-12", "LG-07")
async def test_a_listen_stream_carries_no_request_scoped_notification(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    async with open_raw_server(server, version=None) as (peer, _):
        # The listen request itself asks for progress and log messages: a
        # stream has neither.
        sub = await peer.send_request(
            "subscriptions/listen",
            {
                "notifications": {"toolsListChanged": True},
                "_meta": meta(level="debug", progressToken="listen-token"),
            },
        )
        await peer.wait_method("notifications/subscriptions/acknowledged")
        rid = await peer.send_request(
            "tools/call",
            {"name": "chatty", "_meta": meta(level="debug", progressToken="call-token")},
        )
        await result_of(peer, rid)
        server.add_tool(lambda: "x", name="added")
        await peer.wait_method("notifications/tools/list_changed")
        scoped = [
            f["params"]
            for f in peer.frames
            if f.get("method") in ("notifications/progress", "notifications/message")
        ]
        assert len(scoped) == 3
        assert all(SUB_ID not in p.get("_meta", {}) for p in scoped)
        assert {p["progressToken"] for p in scoped if "progressToken" in p} == {"call-token"}
        tagged = [
            f["method"] for f in peer.frames if SUB_ID in f.get("params", {}).get("_meta", {})
        ]
        assert tagged == [
            "notifications/subscriptions/acknowledged",
            "notifications/tools/list_changed",
        ]
        assert peer.responses(sub) == []


# --- the server: input-required rounds (PT) ----------------------------------------------


@pytest.mark.spec("PT-03", "PT-05")
async def test_sampling_is_asked_for_by_an_input_required_round(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    caps: dict[str, Any] = {"sampling": {}}
    async with open_raw_server(server, version=None) as (peer, _):
        first = await result_of(peer, await call(peer, "ask_model", capabilities=caps))
        assert first["resultType"] == "input_required"
        (key,) = first["inputRequests"]
        request = first["inputRequests"][key]
        # A request object: a method and params, no JSON-RPC id (PT-05).
        assert set(request) == {"method", "params"}
        assert request["method"] == "sampling/createMessage"
        assert request["params"]["maxTokens"] == 5
        answer = {
            "role": "assistant",
            "content": {"type": "text", "text": "hello"},
            "model": "m",
        }
        final = await result_of(
            peer,
            await call(
                peer,
                "ask_model",
                capabilities=caps,
                inputResponses={key: answer},
                requestState=first["requestState"],
            ),
        )
        assert final["content"] == [{"type": "text", "text": "hello"}]
        # No JSON-RPC request ever went to the client (PT-03).
        assert all("method" not in f or "id" not in f for f in peer.frames)


@pytest.mark.spec("PT-04")
async def test_a_prompt_and_a_resource_may_ask_for_input(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    asks: list[tuple[str, dict[str, Any]]] = [
        ("prompts/get", {"name": "greet", "arguments": {"name": "Ada"}}),
        ("resources/read", {"uri": "file:///secret.txt"}),
    ]
    async with open_raw_server(server, version=None) as (peer, _):
        finals = []
        for method, params in asks:
            first = await result_of(
                peer, await peer.send_request(method, {**params, "_meta": meta(ELICIT)})
            )
            assert first["resultType"] == "input_required", first
            (key,) = first["inputRequests"]
            retry = {
                **params,
                "_meta": meta(ELICIT),
                "inputResponses": {key: ACCEPT},
                "requestState": first["requestState"],
            }
            finals.append(await result_of(peer, await peer.send_request(method, retry)))
        assert finals[0]["messages"][0]["content"]["text"] == "Hello Ada (accept)"
        assert finals[1]["contents"][0]["text"] == "S"
        assert all(f["resultType"] == "complete" for f in finals)


class _Lowlevel:
    """A dispatcher whose handlers return raw result objects by method."""

    def __init__(self, results: dict[str, Any]) -> None:
        self.results = results

    async def handle_request(self, ctx: RequestContext) -> Any:
        return self.results[ctx.method]

    async def handle_notification(self, session: Session, event: Any) -> None:
        pass


@pytest.mark.spec("PT-04", "PT-06")
async def test_an_input_required_result_where_none_may_be_is_an_internal_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    asks = {"inputRequests": {"k": {"method": "roots/list"}}, "requestState": "s"}
    dispatcher = _Lowlevel(
        {
            # tools/list may never answer so (PT-04)...
            "tools/list": {"resultType": "input_required", **asks},
            # ...and tools/call not without inputRequests or requestState (PT-06).
            "tools/call": {"resultType": "input_required"},
        }
    )
    async with open_raw_server(dispatcher, version=None) as (peer, session):
        listed = await peer.wait_response(await peer.send_request("tools/list", {"_meta": meta()}))
        called = await peer.wait_response(
            await peer.send_request("tools/call", {"name": "x", "_meta": meta()})
        )
        for response in (listed, called):
            assert error_code(response) == -32603, response
            assert "resultType" not in response["error"]
        assert not session.closed


@pytest.mark.spec("PT-16")
async def test_input_responses_are_checked_extras_ignored_and_missing_ones_asked_again(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, seen = build()
    async with open_raw_server(server, version=None) as (peer, _):
        first = await result_of(peer, await call(peer, "order", {"item": "tea"}))
        state = first["requestState"]
        # The needed answer is missing and an answer nobody asked for is
        # there: asked again, not refused.
        again = await result_of(
            peer,
            await call(
                peer,
                "order",
                {"item": "tea"},
                inputResponses={"unrelated": {"roots": []}},
                requestState=state,
            ),
        )
        assert again["resultType"] == "input_required"
        assert list(again["inputRequests"]) == ["elicitation-1"]
        # Protocol faults are JSON-RPC errors: an answer that is no
        # ElicitResult, and, under any key, a value that answers no input
        # type at all (the schema's map holds input results only).
        for responses in (
            {"elicitation-1": {"action": 5}},
            {"elicitation-1": ACCEPT, "unrelated": {"anything": 1}},
        ):
            bad = await peer.wait_response(
                await call(
                    peer,
                    "order",
                    {"item": "tea"},
                    inputResponses=responses,
                    requestState=again["requestState"],
                )
            )
            assert error_code(bad) == -32602, bad
        final = await result_of(
            peer,
            await call(
                peer,
                "order",
                {"item": "tea"},
                inputResponses={"elicitation-1": ACCEPT, "extra": {"action": "decline"}},
                requestState=again["requestState"],
            ),
        )
        assert final["content"][0]["text"] == "tea-1 accept"
        assert seen["orders"] == 1


# --- the server: statelessness (ST) -----------------------------------------------------


@pytest.mark.spec("ST-02", "ST-05")
async def test_two_conversations_interleave_their_rounds_on_one_connection(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    async with open_raw_server(server, version=None) as (peer, _):
        tea = await result_of(peer, await call(peer, "order", {"item": "tea"}))
        cake = await result_of(peer, await call(peer, "order", {"item": "cake"}))
        # Answered in the other order, each with its own state.
        cake_done = await result_of(
            peer,
            await call(
                peer,
                "order",
                {"item": "cake"},
                inputResponses={"elicitation-1": {"action": "decline"}},
                requestState=cake["requestState"],
            ),
        )
        tea_done = await result_of(
            peer,
            await call(
                peer,
                "order",
                {"item": "tea"},
                inputResponses={"elicitation-1": ACCEPT},
                requestState=tea["requestState"],
            ),
        )
        assert cake_done["content"][0]["text"] == "cake-2 decline"
        assert tea_done["content"][0]["text"] == "tea-1 accept"


@pytest.mark.spec("ST-03", "ST-05")
async def test_a_retry_may_come_on_another_connection(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, seen = build()
    async with open_raw_server(server, version=None) as (one, one_session):
        first = await result_of(one, await call(one, "order", {"item": "tea"}))
    assert one_session.closed
    async with open_raw_server(server, version=None) as (other, _):
        final = await result_of(
            other,
            await call(
                other,
                "order",
                {"item": "tea"},
                inputResponses={"elicitation-1": ACCEPT},
                requestState=first["requestState"],
            ),
        )
    # The state of the call travelled with the request, not the connection.
    assert final["content"][0]["text"] == "tea-1 accept"
    assert (seen["runs"], seen["orders"]) == (2, 1)


@pytest.mark.spec("ST-06")
async def test_lists_do_not_vary_per_connection_or_with_other_requests(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    async with (
        open_raw_server(server, version=None) as (one, _),
        open_raw_server(server, version=None) as (other, _),
    ):

        async def lists(peer: RawPeer) -> list[Any]:
            out = []
            for method in ("tools/list", "prompts/list", "resources/list"):
                result = await result_of(peer, await peer.send_request(method, {"_meta": meta()}))
                out.append({k: v for k, v in result.items() if k != "_meta"})
            return out

        before = await lists(other)
        # Requests on one connection (calls, rounds, a listen) change nothing
        # for either.
        await result_of(one, await call(one, "add", {"a": 1, "b": 1}))
        await result_of(one, await call(one, "order", {"item": "x"}))
        await one.send_request(
            "subscriptions/listen", {"notifications": {"toolsListChanged": True}, "_meta": meta()}
        )
        await one.wait_method("notifications/subscriptions/acknowledged")
        assert await lists(one) == await lists(other) == before


# --- the server and the client: who cancels what (SB-10, CN-15) ---------------------------


def _modern_request(request_id: Any, method: str, **params: Any) -> bytes:
    return orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": method,
            "params": {**params, "_meta": meta()},
        }
    )


@pytest.mark.spec("SB-10", "CN-15")
def test_the_server_cancels_only_an_abandoned_listen() -> None:
    server = Connection(Role.SERVER, capabilities={"tools": {"listChanged": True}})
    (listen,) = server.receive_data(
        _modern_request(1, "subscriptions/listen", notifications={"toolsListChanged": True})
    )
    (call_event,) = server.receive_data(_modern_request(2, "tools/call", name="x"))
    assert isinstance(listen, RequestReceived)
    assert isinstance(call_event, RequestReceived)
    assert server.start_inbound(1)
    assert server.start_inbound(2)
    ended = server.cancel_inbound(1, CancelOrigin.SHUTDOWN, "going away")
    assert isinstance(ended, Notification)
    assert ended.method == "notifications/cancelled"
    assert ended.params is not None
    assert ended.params["requestId"] == 1
    assert server.encode(ended) is not None
    # Any other request abandoned by the server gets an error response instead.
    other = server.cancel_inbound(2, CancelOrigin.SHUTDOWN, "going away")
    assert not isinstance(other, Notification)
    assert other is not None
    assert other.id == 2


@pytest.mark.spec("SB-10", "CN-15")
def test_a_server_cancel_ends_a_subscription_and_nothing_else() -> None:
    client = Connection(Role.CLIENT)
    discover = t.DiscoverResult(
        supported_versions=[MODERN],
        capabilities=t.ServerCapabilities(tools=t.ToolsCapability()),
        ttl_ms=0,
        cache_scope="private",
    )
    client.start_modern(MODERN, discover)
    listen = client.send_request(
        "subscriptions/listen", {"notifications": {"toolsListChanged": True}}
    )
    tool_call = client.send_request("tools/call", {"name": "x"})
    assert client.encode(listen) is not None
    assert client.encode(tool_call) is not None

    def cancel(request_id: Any) -> bytes:
        return orjson.dumps(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": request_id},
            }
        )

    (ignored,) = client.receive_data(cancel(tool_call.id))
    assert isinstance(ignored, Ignored)
    assert ignored.reason is IgnoredReason.UNEXPECTED
    record = client.record(Direction.OUTBOUND, tool_call.id)
    assert record is not None
    assert record.state is RequestState.RUNNING
    (ended,) = client.receive_data(cancel(listen.id))
    assert isinstance(ended, ErrorReceived)
    assert ended.request_id == listen.id
    record = client.record(Direction.OUTBOUND, listen.id)
    assert record is not None
    assert record.state is RequestState.FAILED


# --- the client ----------------------------------------------------------------------


def _discover_result(server_info: Any = None) -> dict[str, Any]:
    result: dict[str, Any] = {
        "supportedVersions": [MODERN],
        "capabilities": {"tools": {}},
        "resultType": "complete",
        "ttlMs": 0,
        "cacheScope": "private",
    }
    if server_info is not None:
        result["_meta"] = {SERVER_INFO: server_info}
    return result


async def _answer_discover(peer: RawPeer, server_info: Any = None) -> None:
    """Play a 2026-07-28 server's answer to the client's probe."""
    probe = await peer.receive()
    assert probe["method"] == "server/discover", probe
    await peer.send({"jsonrpc": "2.0", "id": probe["id"], "result": _discover_result(server_info)})


@pytest.mark.spec("SI-07", "PT-01")
async def test_a_modern_client_answers_no_request_from_the_server(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_raw_client_transport() as (peer, transport), trio.open_nursery() as nursery:
        nursery.start_soon(_answer_discover, peer)
        async with open_client(transport, discover=False, roots=[]) as client:
            assert client.era == "modern"
            before = client.session.statistics().invalid_messages
            # Requests the server may not send, some the client would answer in
            # the handshake era, and malformed frames: none is answered.
            for method in ("ping", "roots/list", "elicitation/create", "tools/list"):
                await peer.send_request(method, {})
            await peer.send_raw(b'{"jsonrpc":"1.0","id":7,"method":"ping"}')
            await peer.send_raw(b'[{"jsonrpc":"2.0","id":8,"method":"ping"}]')
            ping = trio.Event()

            async def answer_ping() -> None:
                probe = await peer.receive()
                assert probe["method"] == "server/discover", probe
                await peer.send({"jsonrpc": "2.0", "id": probe["id"], "result": _discover_result()})
                ping.set()

            nursery.start_soon(answer_ping)
            await client.ping()  # a server/discover in 2026-07-28
            await settle()
            assert ping.is_set()
            assert client.session.statistics().invalid_messages - before == 6
            assert not client.session.closed
        # Everything the client wrote was a request or a notification of its own.
        assert all("method" in frame for frame in peer.frames), peer.frames


@pytest.mark.spec("ME-06", "ME-08")
async def test_every_modern_request_carries_version_capabilities_and_client_info(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    recorder = Recorder()

    async def accept(request: FormElicitation) -> t.ElicitResult:
        return t.ElicitResult(action="accept", content={"ok": True})

    async with open_pair(
        server, name="host", version="3", elicitation=accept, observer=recorder
    ) as (client, _):
        await client.call_tool("order", {"item": "tea"})
        await client.read_resource("file:///a.txt")
        await client.ping()
        await settle()
    sent = [
        orjson.loads(data)
        for direction, data, _ in recorder.frames
        if direction is FrameDirection.OUT
    ]
    requests = [f for f in sent if "id" in f and "method" in f]
    methods = {f["method"] for f in requests}
    assert {"server/discover", "tools/list", "subscriptions/listen", "tools/call"} <= methods
    assert "resources/read" in methods
    for frame in requests:
        request_meta = frame["params"]["_meta"]
        assert request_meta[V] == MODERN, frame
        assert request_meta[CAPS] == {"elicitation": {"form": {}}}, frame
        assert request_meta[INFO] == {"name": "host", "version": "3"}, frame


@pytest.mark.spec("ME-01")
async def test_a_server_info_that_is_not_an_object_is_not_trusted(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_raw_client_transport() as (peer, transport), trio.open_nursery() as nursery:
        nursery.start_soon(_answer_discover, peer, ["not", "an", "object"])
        async with open_client(transport, discover=False) as client:
            assert client.era == "modern"
            assert client.server_info == t.Implementation(name="", version="")
            assert client.server_capabilities.tools is not None


async def _modern_server_answering(peer: RawPeer, answers: list[dict[str, Any]]) -> list[Any]:
    """Answer the probe, then each ``tools/call`` with the next of *answers*;
    return the call frames received."""
    await _answer_discover(peer)
    calls = []
    for answer in answers:
        frame = await peer.receive()
        assert frame["method"] == "tools/call", frame
        calls.append(frame)
        await peer.send({"jsonrpc": "2.0", "id": frame["id"], "result": answer})
    return calls


@pytest.mark.spec("PT-12", "PT-13", "PT-14")
async def test_the_client_echoes_the_state_exactly_and_sends_only_what_it_was_given(
    autojump_clock: trio.testing.MockClock,
) -> None:
    state = "opaque \u00ff state: not base64, not JSON {"
    done = {"resultType": "complete", "content": [{"type": "text", "text": "ok"}]}
    answers: list[dict[str, Any]] = [
        # requestState alone: the client may retry at once (PT-12).
        {"resultType": "input_required", "requestState": state},
        done,
        # inputRequests alone: the retry carries no requestState (PT-13).
        {
            "resultType": "input_required",
            "inputRequests": {
                "ask": {
                    "method": "elicitation/create",
                    "params": {"mode": "form", "message": "ok?", "requestedSchema": FORM},
                }
            },
        },
        done,
    ]

    async def accept(request: FormElicitation) -> t.ElicitResult:
        return t.ElicitResult(action="accept", content={"ok": True})

    calls: list[Any] = []
    async with open_raw_client_transport() as (peer, transport), trio.open_nursery() as nursery:

        async def serve() -> None:
            calls.extend(await _modern_server_answering(peer, answers))

        nursery.start_soon(serve)
        async with open_client(transport, discover=False, elicitation=accept) as client:
            first = await client.call_tool("echo", {"text": "a"})
            second = await client.call_tool("echo", {"text": "b"})
    assert first.content == second.content == [t.TextContent(text="ok")]
    params = [{k: v for k, v in c["params"].items() if k != "_meta"} for c in calls]
    assert params == [
        {"name": "echo", "arguments": {"text": "a"}},
        # The original params, the state byte for byte, nothing else (PT-13, PT-14).
        {"name": "echo", "arguments": {"text": "a"}, "requestState": state},
        {"name": "echo", "arguments": {"text": "b"}},
        {
            "name": "echo",
            "arguments": {"text": "b"},
            "inputResponses": {"ask": {"action": "accept", "content": {"ok": True}}},
        },
    ]
    # A new id every round (PT-14).
    assert len({c["id"] for c in calls}) == 4


@pytest.mark.spec("PT-12")
async def test_every_input_of_a_round_is_answered_before_the_one_retry(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()

    async def decline(request: FormElicitation) -> t.ElicitResult:
        return t.ElicitResult(action="decline")

    roots = [t.Root(uri="file:///r1"), t.Root(uri="file:///r2")]
    async with open_pair(server, elicitation=decline, roots=roots) as (client, server_session):
        result = await client.call_tool("both")
        assert result.content == [t.TextContent(text="decline 2")]
        calls = [
            r
            for r in server_session.requests()
            if r.method == "tools/call" and r.direction is Direction.INBOUND
        ]
        # One round asking for both, then one retry answering both.
        assert [r.input_required for r in calls] == [True, False]


@pytest.mark.spec("PT-18", "CA-02")
async def test_results_of_input_rounds_are_never_served_from_a_cache(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, seen = build()

    async def accept(request: FormElicitation) -> t.ElicitResult:
        return t.ElicitResult(action="accept", content={"ok": True})

    async with open_pair(server, elicitation=accept) as (client, _):
        first = await client.call_tool("order", {"item": "tea"})
        second = await client.call_tool("order", {"item": "tea"})
        await client.read_resource("file:///a.txt")
        await client.read_resource("file:///a.txt")
    # Each call ran its rounds on the server again; each read reached it.
    assert [first.content, second.content] == [
        [t.TextContent(text="tea-1 accept")],
        [t.TextContent(text="tea-2 accept")],
    ]
    assert seen["runs"] == 4
    assert seen["reads"] == 2


@pytest.mark.spec("CA-04")
async def test_the_client_does_not_poll_on_the_ttl(autojump_clock: trio.testing.MockClock) -> None:
    server, _ = build(cache_hints={"tools/list": (1000, "public")})
    async with open_pair(server) as (client, server_session):
        assert "add" in client.tools
        await trio.sleep(3600)  # an hour of 1 s TTLs, on the autojump clock
        lists = [r for r in server_session.requests() if r.method == "tools/list"]
        assert len(lists) == 1


@pytest.mark.spec("CN-14")
async def test_a_cancel_between_rounds_sends_no_cancel(
    autojump_clock: trio.testing.MockClock,
) -> None:
    asked = trio.Event()

    async def hesitate(request: FormElicitation) -> t.ElicitResult:
        asked.set()
        await trio.sleep_forever()
        raise AssertionError("unreachable")  # pragma: no cover

    server, _ = build()
    recorder = Recorder()
    async with open_pair(server, elicitation=hesitate, observer=recorder) as (
        client,
        server_session,
    ):
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(client.call_tool, "order", {"item": "tea"})
                await asked.wait()
                scope.cancel()
        await settle()
        sent = [
            orjson.loads(d)
            for direction, d, _ in recorder.frames
            if direction is FrameDirection.OUT
        ]
        # The round's request had been answered: nothing was in progress to cancel.
        assert not [f for f in sent if f.get("method") == "notifications/cancelled"]
        (record,) = [r for r in server_session.requests() if r.method == "tools/call"]
        assert record.state is RequestState.COMPLETED


@pytest.mark.spec("VR-12", "VR-13")
async def test_a_server_remembered_as_handshake_era_that_went_modern_is_followed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build(protocol_versions=(MODERN,))
    recorder = Recorder()
    # probe=False: what open_stdio_client passes for a command remembered as
    # handshake-era. The server refuses initialize naming 2026-07-28 (VR-13).
    async with open_pair(server, probe=False, observer=recorder) as (client, _):
        assert (client.era, client.protocol_version) == ("modern", MODERN)
        assert (await client.call_tool("add", {"a": 1, "b": 2})).content == [
            t.TextContent(text="3")
        ]
    sent = [
        orjson.loads(d) for direction, d, _ in recorder.frames if direction is FrameDirection.OUT
    ]
    assert [f.get("method") for f in sent[:2]] == ["initialize", "server/discover"]


@pytest.mark.spec("VR-14")
async def test_a_handshake_only_client_and_a_dual_era_server(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    async with open_pair(server, era="legacy") as (client, server_session):
        assert (client.era, client.protocol_version) == ("legacy", SUPPORTED_VERSIONS[0])
        assert (await client.call_tool("add", {"a": 2, "b": 3})).content == [
            t.TextContent(text="5")
        ]
        assert server_session.protocol.revision is not None
        assert server_session.protocol.revision.version == SUPPORTED_VERSIONS[0]


@pytest.mark.spec("VR-03")
async def test_an_rpc_error_of_a_modern_call_is_the_callers(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # A -32022 on an ordinary call (the server stopped speaking our version)
    # surfaces to the caller as an RPCError; the session goes on (VR-03).
    async with open_raw_client_transport() as (peer, transport), trio.open_nursery() as nursery:

        async def serve() -> None:
            await _answer_discover(peer)
            frame = await peer.receive()
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "id": frame["id"],
                    "error": {
                        "code": -32022,
                        "message": "Unsupported",
                        "data": {"supported": ["2099-01-01"], "requested": MODERN},
                    },
                }
            )

        nursery.start_soon(serve)
        async with open_client(transport, discover=False) as client:
            with pytest.raises(RPCError) as info:
                await client.call_tool("echo")
            assert info.value.code == -32022
            assert not client.session.closed


@pytest.mark.spec("A-21", "PT-04")
async def test_the_client_reads_result_type(autojump_clock: trio.testing.MockClock) -> None:
    content = [{"type": "text", "text": "ok"}]
    answers: list[dict[str, Any]] = [
        {"content": content},  # no resultType: complete (a handshake-era habit)
        {"resultType": "task", "content": content},  # not ours to guess
        {"resultType": "input_required", "requestState": "s"},  # tools/list may not
    ]
    async with open_raw_client_transport() as (peer, transport), trio.open_nursery() as nursery:

        async def serve() -> None:
            await _answer_discover(peer)
            for answer in answers:
                frame = await peer.receive()
                await peer.send({"jsonrpc": "2.0", "id": frame["id"], "result": answer})

        nursery.start_soon(serve)
        async with open_client(transport, discover=False) as client:
            assert (await client.call_tool("x")).content == [t.TextContent(text="ok")]
            with pytest.raises(InvalidPeerResult, match="resultType 'task' is not allowed"):
                await client.call_tool("x")
            with pytest.raises(InvalidPeerResult, match="resultType 'input_required'"):
                await client.list_tools()
            assert not client.session.closed
