"""Empty and unsupported ``subscriptions/listen`` (2026-07-28 only: the
handshake era has no listen).

The other SDKs hold a listen that accepts nothing open until shutdown (on a
serverless host the whole invocation burns). trio_mcp follows the transports
working group's draft rule instead: a listen that accepts nothing is
acknowledged with ``notifications: {}`` and answered at once with the
``complete`` result; a server with nothing to listen to refuses it -32601
(HTTP 404) with no acknowledgement; and our client never sends a listen the
server's discovery gives it no reason to send. Each transport: in memory,
stdio pipes, Streamable HTTP.
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest
import trio
from helpers import open_pair, open_raw_server
from http_helpers import running, sse_messages
from lifecycle_helpers import (
    ACK,
    MODERN,
    SUB_ID,
    listen_frame,
    modern_headers,
    receive_json,
    send_json,
    stdio_pipes,
)

from trio_mcp import Server, http_app
from trio_mcp.protocol import SUPPORTED_VERSIONS
from trio_mcp.protocol._errors import LocalProtocolError

NOT_HUNG = 10


def tools_server() -> Server:
    """Declares ``tools.listChanged`` only: a listen for prompts accepts nothing."""
    server = Server("tools-only", version="1", protocol_versions=(MODERN, *SUPPORTED_VERSIONS))

    @server.tool()
    async def echo(text: str) -> str:
        """Echo."""
        return text

    return server


def quiet_server() -> Server:
    """Declares nothing a listen could select (no listChanged, no subscribe)."""
    server = Server(
        "quiet",
        version="1",
        list_changed=False,
        subscribe=False,
        protocol_versions=(MODERN, *SUPPORTED_VERSIONS),
    )

    @server.tool()
    async def echo(text: str) -> str:
        """Echo."""
        return text

    @server.resource("file:///a.txt")
    async def a_txt() -> str:
        return "A"

    return server


EMPTY_FILTERS = [
    pytest.param({"promptsListChanged": True}, id="unhonoured"),
    pytest.param({}, id="nothing-asked"),
]


# --- in memory ------------------------------------------------------------------


@pytest.mark.spec("SB-15")
@pytest.mark.parametrize("wanted", EMPTY_FILTERS)
async def test_empty_listen_answered_at_once_in_memory(
    autojump_clock: Any, wanted: dict[str, Any]
) -> None:
    server = tools_server()
    async with open_raw_server(server, version=None) as (peer, _):
        frame = listen_frame("l-1", **wanted)
        await peer.send(frame)
        response = await peer.wait_response("l-1")
        ack = next(f for f in peer.frames if f.get("method") == ACK)
        assert ack["params"] == {"notifications": {}, "_meta": {SUB_ID: "l-1"}}
        assert response["result"]["resultType"] == "complete"
        assert response["result"]["_meta"][SUB_ID] == "l-1"
        assert peer.frames.index(ack) < peer.frames.index(response)
        # No time passed: answered at once, not at some timeout.
        assert trio.current_time() == 0
        assert len(server._listeners) == 0


@pytest.mark.spec("SB-16")
async def test_unsupported_listen_refused_method_not_found_in_memory(autojump_clock: Any) -> None:
    async with open_raw_server(quiet_server(), version=None) as (peer, _):
        await peer.send(listen_frame("l-1", toolsListChanged=True))
        response = await peer.wait_response("l-1")
        assert response["error"]["code"] == -32601
        assert not any(f.get("method") == ACK for f in peer.frames)


# --- stdio ---------------------------------------------------------------------


@pytest.mark.spec("SB-15")
@pytest.mark.parametrize("wanted", EMPTY_FILTERS)
async def test_empty_listen_answered_at_once_over_stdio(wanted: dict[str, Any]) -> None:
    async with stdio_pipes(tools_server()) as (channel, _served):
        with trio.fail_after(NOT_HUNG):
            await send_json(channel, listen_frame(7, **wanted))
            ack = await receive_json(channel)
            response = await receive_json(channel)
    assert ack == {
        "jsonrpc": "2.0",
        "method": ACK,
        "params": {"notifications": {}, "_meta": {SUB_ID: 7}},
    }
    assert response["id"] == 7
    assert response["result"]["resultType"] == "complete"
    assert response["result"]["_meta"][SUB_ID] == 7


@pytest.mark.spec("SB-16")
async def test_unsupported_listen_refused_method_not_found_over_stdio() -> None:
    async with stdio_pipes(quiet_server()) as (channel, _served):
        with trio.fail_after(NOT_HUNG):
            await send_json(channel, listen_frame(7, resourcesListChanged=True))
            response = await receive_json(channel)
    assert response["id"] == 7
    assert response["error"]["code"] == -32601


# --- Streamable HTTP ----------------------------------------------------------


async def _post_listen(server: Server, body: dict[str, Any]) -> httpx.Response:
    async with running(http_app(server)) as (url, _), httpx.AsyncClient(base_url=url) as http:
        with trio.fail_after(NOT_HUNG):
            # Returns only once the body has ended.
            return await http.post("/mcp", content=orjson.dumps(body), headers=modern_headers(body))


@pytest.mark.spec("SB-15", "HM-08")
@pytest.mark.parametrize("wanted", EMPTY_FILTERS)
async def test_empty_listen_answered_at_once_over_http(wanted: dict[str, Any]) -> None:
    response = await _post_listen(tools_server(), listen_frame(9, **wanted))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    ack, result = sse_messages(response.text)
    assert ack["method"] == ACK
    assert ack["params"] == {"notifications": {}, "_meta": {SUB_ID: 9}}
    assert result["id"] == 9
    assert result["result"]["resultType"] == "complete"
    assert result["result"]["_meta"][SUB_ID] == 9


@pytest.mark.spec("SB-16", "HM-17")
async def test_unsupported_listen_refused_404_over_http() -> None:
    response = await _post_listen(quiet_server(), listen_frame(9, toolsListChanged=True))
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["error"]["code"] == -32601


# --- our client -------------------------------------------------------------------


@pytest.mark.spec("SB-17")
async def test_client_does_not_probe_listen_when_discovery_advertises_nothing(
    autojump_clock: Any,
) -> None:
    server = quiet_server()
    async with open_pair(server, era="modern") as (client, server_session):
        assert client.era == "modern"
        assert (await client.call_tool("echo", {"text": "hi"})).content
        with pytest.raises(LocalProtocolError, match=r"resources\.subscribe"):
            async with client.resource_updates("file:///a.txt"):
                pass  # pragma: no cover
        assert all(r.method != "subscriptions/listen" for r in server_session.requests())
