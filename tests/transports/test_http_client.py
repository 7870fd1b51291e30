"""open_http_client against our server: calls, close semantics, faults, legacy fallback."""

from __future__ import annotations

import pytest
import trio
from http_helpers import make_server, running

from trio_mcp import RPCError
from trio_mcp.transports._event_store import MemoryEventStore
from trio_mcp.transports._http_client import open_http_client
from trio_mcp.transports._http_server import StreamableHTTPApp


@pytest.mark.spec("HT-06")
@pytest.mark.spec("HT-30")
@pytest.mark.spec("HT-35")
@pytest.mark.parametrize("json_response", [False, True])
async def test_calls_and_delete_on_close(json_response: bool) -> None:
    async with running(make_server(), json_response=json_response) as (url, app):
        async with open_http_client(url + "/mcp") as client:
            assert client.protocol_version == "2025-11-25"
            results = []

            async def call(i: int) -> None:
                result = await client.call_tool("add", {"a": i, "b": 1})
                results.append(result.structured_content)

            async with trio.open_nursery() as nursery:
                for i in range(32):
                    nursery.start_soon(call, i)
            assert sorted(r["result"] for r in results) == list(range(1, 33))
            assert app.session_count == 1
        assert app.session_count == 0  # DELETE arrived


@pytest.mark.spec("HT-34")
async def test_outer_cancel_still_sends_cancel_and_delete() -> None:
    server = make_server()
    started = trio.Event()
    cancelled = trio.Event()

    @server.tool()
    async def block() -> str:
        started.set()
        try:
            await trio.sleep_forever()
        finally:
            cancelled.set()

    async with running(server) as (url, app):
        with trio.CancelScope() as outer:
            async with open_http_client(url + "/mcp") as client, trio.open_nursery() as nursery:
                nursery.start_soon(client.call_tool, "block", {})
                await started.wait()
                outer.cancel()
        assert outer.cancelled_caught
        with trio.fail_after(5):
            await cancelled.wait()  # the handler was cancelled on the server
        assert app.session_count == 0  # and the session was deleted


async def test_non_2xx_fails_the_call_with_a_clear_error() -> None:
    async with (
        running(make_server(), max_body_size=2000) as (url, _),
        open_http_client(url + "/mcp") as client,
    ):
        with pytest.raises(RPCError, match="HTTP 413"):
            await client.call_tool("echo", {"text": "x" * 5000})
        assert (await client.call_tool("add", {"a": 1, "b": 1})).structured_content == {"result": 2}


@pytest.mark.spec("HT-33")
async def test_session_deleted_by_server_surfaces_as_expired() -> None:
    async with (
        running(make_server()) as (url, app),
        open_http_client(url + "/mcp", reconnect_delay=0.01) as client,
    ):
        (transport,) = app.sessions().values()
        transport.peer_closed()
        await transport.wait_closed()
        with pytest.raises(Exception, match=r"(?i)expired|closed"):
            await client.call_tool("add", {"a": 1, "b": 1})


@pytest.mark.spec("SS-08")
@pytest.mark.spec("SS-03")
async def test_falls_back_to_legacy_sse() -> None:
    app = StreamableHTTPApp(make_server(), path="/other")
    async with running(app) as (url, _), open_http_client(url + "/sse") as client:
        assert client.session.transport.legacy_endpoint is not None
        result = await client.call_tool("add", {"a": 2, "b": 2})
        assert result.structured_content == {"result": 4}
        assert app.session_count == 1


async def test_resumable_server_with_client() -> None:
    store = MemoryEventStore()
    async with (
        running(make_server(), event_store=store, retry_interval=10) as (url, _),
        open_http_client(url + "/mcp") as client,
    ):
        for i in range(5):
            result = await client.call_tool("add", {"a": i, "b": 0})
            assert result.structured_content == {"result": i}
    assert len(store) == 0  # the ended session's events were dropped
