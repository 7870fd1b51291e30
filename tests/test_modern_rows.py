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
from helpers import RawPeer, open_raw_client_transport, settle

from trio_mcp import open_client

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
