"""-32042 URLElicitationRequiredError (EL-10): raised by a handler, typed at the caller.

The server side sends -32042 only where it means something (2025-11-25, a
client that declared ``elicitation.url``) and -32603 saying why elsewhere; the
client side turns a well-formed -32042 into :class:`URLElicitationRequired`
with typed elicitations, keeps a malformed one as a plain :class:`RPCError`,
and the session goes on in every case.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing
from helpers import open_client_with_raw_server, open_pair

from trio_mcp import RPCError, Server, URLElicitation, URLElicitationRequired, url_elicitation
from trio_mcp import types as t
from trio_mcp.lowlevel import RequestState
from trio_mcp.protocol import Direction, ErrorCode, ErrorObject

CONNECT = t.ElicitRequestURLParams(
    message="Connect your calendar",
    elicitation_id="el-1",
    url="https://mcp.example.com/connect?elicitationId=el-1",
)


def _calendar_server() -> Server:
    server = Server("calendar")

    @server.tool()
    async def agenda() -> str:
        raise URLElicitationRequired([CONNECT], "Calendar access is needed first")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    return server


async def _consent(request: URLElicitation) -> t.ElicitResult:
    return t.ElicitResult(action="accept")


@pytest.mark.spec("EL-10")
async def test_a_tool_raising_it_reaches_a_url_capable_client_typed() -> None:
    async with open_pair(_calendar_server(), url_elicitation=_consent, era="legacy") as (
        client,
        session,
    ):
        with pytest.raises(URLElicitationRequired) as caught:
            await client.call_tool("agenda")
        error = caught.value
        assert error.code == -32042
        assert error.message == "Calendar access is needed first"
        assert error.elicitations == [CONNECT]
        assert error.data == {
            "elicitations": [
                {
                    "mode": "url",
                    "message": "Connect your calendar",
                    "elicitationId": "el-1",
                    "url": "https://mcp.example.com/connect?elicitationId=el-1",
                }
            ]
        }
        # The checked, displayable form the host shows before asking consent.
        shown = url_elicitation(error.elicitations[0], "calendar")
        assert isinstance(shown, URLElicitation)
        assert shown.origin == "https://mcp.example.com"
        # The server recorded what it sent; the session goes on.
        [record] = [
            r for r in session.requests() if r.method == "tools/call" and r.error is not None
        ]
        assert record.direction is Direction.INBOUND
        assert record.state is RequestState.FAILED
        assert record.error is not None
        assert record.error.code == -32042
        assert (await client.call_tool("echo", {"text": "still here"})).content == [
            t.TextContent(text="still here")
        ]


@pytest.mark.spec("EL-10")
@pytest.mark.parametrize("protocol_version", ["2025-11-25", "2025-06-18", "2024-11-05"])
async def test_clients_that_cannot_act_on_it_get_internal_error_saying_why(
    protocol_version: str,
) -> None:
    # None of these clients declared elicitation.url (no url_elicitation handler).
    async with open_pair(_calendar_server(), protocol_version=protocol_version) as (client, _):
        assert client.protocol_version == protocol_version
        with pytest.raises(RPCError) as caught:
            await client.call_tool("agenda")
        assert not isinstance(caught.value, URLElicitationRequired)
        assert caught.value.code == ErrorCode.INTERNAL_ERROR
        assert "elicitation.url" in caught.value.message
        assert (await client.call_tool("echo", {"text": "ok"})).content == [
            t.TextContent(text="ok")
        ]


@pytest.mark.spec("EL-10")
@pytest.mark.parametrize(
    "data",
    [
        None,
        {},
        {"elicitations": "not a list"},
        {"elicitations": [{"mode": "url", "message": "m", "url": "https://x.example"}]},
        {"elicitations": [{"mode": "form", "message": "m", "requestedSchema": {}}]},
    ],
)
async def test_a_malformed_32042_from_the_peer_stays_a_plain_rpc_error(
    data: object, autojump_clock: trio.testing.MockClock
) -> None:
    async with open_client_with_raw_server(url_elicitation=_consent) as (peer, client):
        async with trio.open_nursery() as nursery:
            outcome: list[BaseException] = []

            async def call() -> None:
                try:
                    await client.session.request("ping")
                except RPCError as exc:
                    outcome.append(exc)

            nursery.start_soon(call)
            request = await peer.wait_method("ping")
            error: dict[str, object] = {"code": -32042, "message": "needs a URL"}
            if data is not None:
                error["data"] = data
            await peer.send({"jsonrpc": "2.0", "id": request["id"], "error": error})
        [exc] = outcome
        assert type(exc) is RPCError
        assert (exc.code, exc.message, exc.data) == (-32042, "needs a URL", data)
        # The session goes on.
        first = request["id"]
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.session.request, "ping")
            again = await peer.wait_for(lambda f: f.get("method") == "ping" and f["id"] != first)
            await peer.send({"jsonrpc": "2.0", "id": again["id"], "result": {}})


def test_from_error_round_trips_the_typed_error() -> None:
    sent = URLElicitationRequired([CONNECT])
    received = RPCError.from_error(sent.to_error())
    assert isinstance(received, URLElicitationRequired)
    assert received.elicitations == [CONNECT]
    assert received.to_error() == sent.to_error()
    plain = RPCError.from_error(ErrorObject(-32602, "bad", {"x": 1}))
    assert type(plain) is RPCError
    assert plain.data == {"x": 1}
