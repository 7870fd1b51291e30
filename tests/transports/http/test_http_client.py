"""open_http_client against our server: calls, close semantics, faults, legacy fallback."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest
import trio
from helpers import first_text
from http_helpers import LATEST, http_transport_of, make_server, raw_client, running

from trio_mcp import RPCError, SessionClosed, http_app, open_http_client
from trio_mcp.transports._http.server._event_store import MemoryEventStore


@pytest.mark.spec("HT-06")
@pytest.mark.spec("HT-30")
@pytest.mark.spec("HT-35")
@pytest.mark.parametrize("json_response", [False, True])
async def test_calls_and_delete_on_close(json_response: bool) -> None:
    async with running(make_server(), json_response=json_response) as (url, app):
        async with open_http_client(url + "/mcp", era="legacy") as client:
            assert client.protocol_version == "2025-11-25"
            results: list[Any] = []

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
            async with (
                open_http_client(url + "/mcp", era="legacy") as client,
                trio.open_nursery() as nursery,
            ):
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
        open_http_client(url + "/mcp", era="legacy") as client,
    ):
        with pytest.raises(RPCError, match="HTTP 413"):
            await client.call_tool("echo", {"text": "x" * 5000})
        assert (await client.call_tool("add", {"a": 1, "b": 1})).structured_content == {"result": 2}


@pytest.mark.spec("HT-33")
async def test_session_deleted_by_server_surfaces_as_expired() -> None:
    async with (
        running(make_server()) as (url, app),
        open_http_client(url + "/mcp", era="legacy", reconnect_delay=0.01) as client,
    ):
        (transport,) = app.sessions().values()
        transport.peer_closed()
        await transport.wait_closed()
        with pytest.raises(RPCError, match=r"(?i)expired|closed"):
            await client.call_tool("add", {"a": 1, "b": 1})


@pytest.mark.spec("SS-08")
@pytest.mark.spec("SS-03")
async def test_falls_back_to_legacy_sse() -> None:
    app = http_app(make_server(), path="/other")
    async with running(app) as (url, _), open_http_client(url + "/sse") as client:
        assert http_transport_of(client).legacy_endpoint is not None
        result = await client.call_tool("add", {"a": 2, "b": 2})
        assert result.structured_content == {"result": 4}
        assert app.session_count == 1


async def test_resumable_server_with_client() -> None:
    store = MemoryEventStore()
    async with (
        running(make_server(), event_store=store, retry_interval=10) as (url, _),
        open_http_client(url + "/mcp", era="legacy") as client,
    ):
        for i in range(5):
            result = await client.call_tool("add", {"a": i, "b": 0})
            assert result.structured_content == {"result": i}
    assert len(store) == 0  # the ended session's events were dropped


def _recording_client(seen: list[httpx.Request]) -> httpx.AsyncClient:
    async def record(request: httpx.Request) -> None:
        seen.append(request)

    return httpx.AsyncClient(
        timeout=httpx.Timeout(10.0, read=None), event_hooks={"request": [record]}
    )


def _initialize_posts(seen: list[httpx.Request]) -> list[httpx.Request]:
    return [
        r
        for r in seen
        if r.method == "POST" and orjson.loads(r.content).get("method") == "initialize"
    ]


@pytest.mark.spec("HT-33")
@pytest.mark.parametrize("json_response", [False, True])
async def test_reinitialize_after_a_delete_by_another_party(json_response: bool) -> None:
    server = make_server()
    started = trio.Event()

    @server.tool()
    async def block() -> str:
        started.set()
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    seen: list[httpx.Request] = []
    async with (
        running(server, json_response=json_response) as (url, app),
        _recording_client(seen) as http,
        open_http_client(
            url + "/mcp", http_client=http, era="legacy", reinitialize=True, reconnect_delay=0.01
        ) as client,
    ):
        transport = http_transport_of(client)
        old_id = transport.session_id
        assert old_id is not None
        failures: list[Exception] = []
        failed = trio.Event()

        async def blocked_call() -> None:
            try:
                await client.call_tool("block", {})
            except RPCError as exc:
                failures.append(exc)
                failed.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(blocked_call)
            await started.wait()
            # Another party ends the session (it knows the id) ...
            async with raw_client(url) as other:
                answer = await other.delete("/mcp", headers={"mcp-session-id": old_id})
                assert answer.status_code == 200
            # ... the client learns it (its streams end, then 404), and the call
            # in flight on that session fails with "session expired".
            with trio.fail_after(10):
                await failed.wait()
        result = await client.call_tool("add", {"a": 2, "b": 3})
        assert len(failures) == 1
        assert "Session expired (HTTP 404)" in str(failures[0])
        # The next call went to a new session, initialized afresh.
        assert result.structured_content == {"result": 5}
        assert transport.reinitializations == 1
        assert transport.session_id not in (None, old_id)
        assert list(app.sessions()) == [transport.session_id]
        first, again = _initialize_posts(seen)
        assert "mcp-session-id" not in again.headers
        assert "mcp-protocol-version" not in again.headers
        assert orjson.loads(again.content)["params"]["protocolVersion"] == LATEST
        assert (
            orjson.loads(again.content)["params"]["clientInfo"]
            == orjson.loads(first.content)["params"]["clientInfo"]
        )
        initialized = [
            r
            for r in seen
            if r.method == "POST"
            and orjson.loads(r.content).get("method") == "notifications/initialized"
        ]
        assert [r.headers.get("mcp-session-id") for r in initialized] == [
            old_id,
            transport.session_id,
        ]
        # Later requests carry the new id and the negotiated revision.
        assert first_text(await client.call_tool("echo", {"text": "hi"})) == "hi"
        last = seen[-1]
        assert last.headers["mcp-session-id"] == transport.session_id
        assert last.headers["mcp-protocol-version"] == LATEST
    assert app.session_count == 0  # the new session was deleted on close


@pytest.mark.spec("HT-33")
async def test_reinitialize_after_the_server_ends_the_session() -> None:
    # reconnect_delay: the GET stream, which the server ends with the session,
    # is not reopened during the test, so the call is what meets the 404.
    async with (
        running(make_server()) as (url, app),
        open_http_client(
            url + "/mcp", era="legacy", reinitialize=True, reconnect_delay=3600
        ) as client,
    ):
        transport = http_transport_of(client)
        ids = {transport.session_id}
        for round_ in range(1, 4):
            (server_end,) = app.sessions().values()
            server_end.peer_closed()
            await server_end.wait_closed()
            # The server may have run a request it answers with 404 (it does so
            # for one running when the session ends), so it is not sent again.
            with pytest.raises(RPCError, match=r"Session expired \(HTTP 404\)"):
                await client.call_tool("add", {"a": round_, "b": 1})
            result = await client.call_tool("add", {"a": round_, "b": 1})
            assert result.structured_content == {"result": round_ + 1}
            assert transport.reinitializations == round_
            assert app.session_count == 1
            ids.add(transport.session_id)
        assert len(ids) == 4  # a new id each time


@pytest.mark.spec("HT-33")
async def test_without_reinitialize_the_client_ends_with_session_expired() -> None:
    async with (
        running(make_server()) as (url, app),
        open_http_client(url + "/mcp", era="legacy", reinitialize=False) as client,
    ):
        (server_end,) = app.sessions().values()
        server_end.peer_closed()
        await server_end.wait_closed()
        with pytest.raises(RPCError, match=r"Session expired \(HTTP 404\)"):
            await client.call_tool("add", {"a": 1, "b": 1})
        assert http_transport_of(client).session_expired
        assert http_transport_of(client).reinitializations == 0
        with pytest.raises(SessionClosed, match=r"(?i)expired|closed"):
            await client.call_tool("add", {"a": 1, "b": 1})
        assert app.session_count == 0


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_many_long_calls_in_flight_do_not_starve_a_short_one(era: str) -> None:
    # Each call in flight holds a connection for as long as its answer takes
    # (HTTP/1.1: one response at a time on a connection). The client's pool
    # once held 16, so a 17th call, even a ping, waited for one of the long
    # calls to end (found by the kill-server soak, 32 calls in flight).
    server = make_server()
    in_flight = 40
    running_now = 0
    all_running = trio.Event()
    release = trio.Event()

    @server.tool()
    async def hold() -> str:
        nonlocal running_now
        running_now += 1
        if running_now == in_flight:
            all_running.set()
        await release.wait()
        return "held"

    async with running(server) as (base, _), open_http_client(base + "/mcp", era=era) as client:
        answers: list[str] = []

        async def long_call() -> None:
            answers.append(first_text(await client.call_tool("hold", {})))

        with trio.fail_after(20):
            async with trio.open_nursery() as nursery:
                for _ in range(in_flight):
                    nursery.start_soon(long_call)
                await all_running.wait()  # every one reached the server
                echoed = await client.call_tool("echo", {"text": "short"})
                assert first_text(echoed) == "short"
                release.set()
        assert answers == ["held"] * in_flight


async def test_opening_clients_loads_the_ca_bundle_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # httpx builds (and loads the CA bundle into) a TLS context per AsyncClient
    # unless it is given one: ~35 ms of blocking CPU each, two per session. The
    # context is built once per process and shared by every client's pools.
    import ssl

    from trio_mcp._tls import default_tls_context

    built: list[object] = []
    real = ssl.create_default_context

    def counting(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        built.append(args or kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(ssl, "create_default_context", counting)
    default_tls_context.cache_clear()
    try:
        async with running(make_server()) as (url, _):
            for era in ("legacy", "modern", "legacy"):
                async with open_http_client(url + "/mcp", era=era) as client:
                    await client.ping()
        assert len(built) == 1
        assert default_tls_context().verify_mode == ssl.CERT_REQUIRED
        assert default_tls_context().check_hostname
    finally:
        default_tls_context.cache_clear()


@pytest.mark.spec("HT-08")
async def test_a_refused_post_fails_with_the_servers_own_reason() -> None:
    # A 2025-11-25 server refuses a batch with 400 and a JSON-RPC error body:
    # the error the client raises quotes it, not only the status.
    batch = b'[{"jsonrpc": "2.0", "method": "notifications/progress"}]'
    async with (
        running(make_server()) as (url, _),
        open_http_client(url + "/mcp", era="legacy") as client,
    ):
        with pytest.raises(trio.BrokenResourceError) as refused:
            await http_transport_of(client).send(batch)
    message = str(refused.value)
    assert message.startswith("server refused a message: HTTP 400 with JSON-RPC error -32600: ")
    assert "no batches" in message
