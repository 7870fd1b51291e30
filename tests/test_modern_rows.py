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

import pytest
import trio
import trio.testing
from helpers import RawPeer, open_raw_client_transport, open_raw_server, settle

from trio_mcp import Context, Server, open_client
from trio_mcp import types as t

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
