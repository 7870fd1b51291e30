"""Streamable HTTP cases of the robustness catalogue (reliability §3.2, §3.8,
§3.9) not covered elsewhere: raw HTTP against a real server on loopback."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio
import trio.testing
from http_helpers import (
    make_server,
    open_raw_session,
    post_headers,
    raw_client,
    running,
    sse_messages,
)

from trio_mcp import Context, Server
from trio_mcp.transports import MemoryEventStore
from trio_mcp.transports._http._common import is_visible_ascii, new_session_id
from trio_mcp.transports._http._sse import SSEParser

CALL = orjson.dumps(
    {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 1, "b": 2}},
    }
)
PING = orjson.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"})


def _answers(response: Any) -> list[dict[str, Any]]:
    if response.headers["content-type"].startswith("text/event-stream"):
        return sse_messages(response.text)
    body = response.json()
    return body if isinstance(body, list) else [body]


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
async def test_an_array_is_400_where_batches_are_not_part_of_the_revision(version: str) -> None:
    """J-19: any array body at 2025-06-18 and later is HTTP 400 with -32600,
    and the session goes on."""
    async with running(make_server()) as (url, app), raw_client(url) as http:
        sid = await open_raw_session(http, version)
        headers = post_headers(sid, **{"mcp-protocol-version": version})
        for body in (b"[%s]" % PING, b"[]", b"[%s,%s]" % (PING, CALL)):
            response = await http.post("/mcp", content=body, headers=headers)
            assert response.status_code == 400, body
            assert response.json()["error"]["code"] == -32600
        served = await http.post("/mcp", content=CALL, headers=headers)
        assert served.status_code == 200
        assert _answers(served)[0]["result"]["structuredContent"] == {"result": 3}
        assert app.session_count == 1


async def test_invalid_utf8_in_a_body_is_400_parse_error_and_the_session_goes_on() -> None:
    """J-21: raw bytes that are not UTF-8 are a parse error (HTTP 400, -32700
    with a null id), never a crash; the session is still served."""
    async with running(make_server()) as (url, app), raw_client(url) as http:
        sid = await open_raw_session(http)
        headers = post_headers(sid)
        for body in (b"\xff\xfe{}", b'{"jsonrpc":"2.0","id":1,"method":"\xc3("}', b"\xed\xa0\x80"):
            response = await http.post("/mcp", content=body, headers=headers)
            assert response.status_code == 400, body
            error = response.json()
            assert (error["id"], error["error"]["code"]) == (None, -32700)
        served = await http.post("/mcp", content=PING, headers=headers)
        assert _answers(served) == [{"jsonrpc": "2.0", "id": 3, "result": {}}]
        assert app.session_count == 1


async def test_clients_that_vanish_after_initialize_do_not_stop_a_healthy_one() -> None:
    """S-13: three clients open sessions and vanish (connection dropped, no
    DELETE); a fourth is then served in full."""
    async with running(make_server()) as (url, app):
        for _ in range(3):
            async with raw_client(url) as gone:
                await open_raw_session(gone)
            # leaving the block drops the connection without a DELETE
        async with raw_client(url) as http:
            sid = await open_raw_session(http)
            served = await http.post("/mcp", content=CALL, headers=post_headers(sid))
            assert served.status_code == 200
            assert _answers(served)[0]["result"]["structuredContent"] == {"result": 3}
            assert (await http.delete("/mcp", headers=post_headers(sid))).status_code == 200
        assert app.session_count == 3  # the vanished ones wait for the idle reaper


@pytest.mark.parametrize(
    "last_event_id",
    ["x" * 10_000, "\x01bad", "caf\u00e9", "a\tb", "a b", "\u2028", "no-separator"],
)
async def test_a_malformed_last_event_id_is_400_and_the_session_goes_on(last_event_id: str) -> None:
    """E-10: a huge Last-Event-ID, or one with control or non-ASCII characters,
    is refused with 400; nothing crashes and the session is still served."""
    store = MemoryEventStore()
    async with running(make_server(), event_store=store) as (url, app), raw_client(url) as http:
        sid = await open_raw_session(http)
        headers = {
            "accept": "text/event-stream",
            "mcp-session-id": sid,
            "last-event-id": last_event_id,
        }
        response = await http.get(
            "/mcp", headers={k.encode(): v.encode("utf-8") for k, v in headers.items()}
        )
        assert response.status_code == 400, response.status_code
        served = await http.post("/mcp", content=PING, headers=post_headers(sid))
        assert _answers(served) == [{"jsonrpc": "2.0", "id": 3, "result": {}}]
        assert app.session_count == 1


async def test_batches_over_http_at_2025_03_26() -> None:
    """J-18 over HTTP, in the one revision with batches: the answers of a batch's
    requests come on its response; a batch of notifications alone is 202 with
    no body; a batch holding something that is not a message is 400."""
    note = b'{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}'
    async with running(make_server()) as (url, app), raw_client(url) as http:
        sid = await open_raw_session(http, "2025-03-26")
        headers = post_headers(sid, **{"mcp-protocol-version": "2025-03-26"})
        mixed = await http.post("/mcp", content=b"[%s,%s,%s]" % (PING, note, CALL), headers=headers)
        assert mixed.status_code == 200
        answers = {a["id"]: a for a in _answers(mixed)}
        assert answers[3] == {"jsonrpc": "2.0", "id": 3, "result": {}}
        assert answers[2]["result"]["content"][0]["text"] == "3"
        quiet = await http.post("/mcp", content=b"[%s,%s]" % (note, note), headers=headers)
        assert (quiet.status_code, quiet.content) == (202, b"")
        for body in (b"[%s,5]" % PING, b"[[%s]]" % PING, b"[]"):
            refused = await http.post("/mcp", content=body, headers=headers)
            assert refused.status_code == 400, body
            assert refused.json()["error"]["code"] == -32600
        assert app.session_count == 1


def test_a_million_session_ids_are_unique_visible_and_evenly_spread() -> None:
    """K-01, K-02: 10^6 ids from the OS CSPRNG: no collision, at least 128 bits
    each (32 characters of URL-safe base64 hold 192), only 0x21-0x7E, and the
    characters evenly spread over the 64 of the alphabet. The chi-square bound
    (63 degrees of freedom) is the p = 1e-9 quantile, so a correct generator
    fails it about once in a billion runs; a biased one (a character never
    drawn, one drawn twice as often) fails it every time."""
    count = 1_000_000
    ids = [new_session_id() for _ in range(count)]
    assert len(set(ids)) == count
    assert all(len(i) == 32 and is_visible_ascii(i) for i in ids[:1000])
    chars = Counter("".join(ids))
    assert len(chars) == 64
    assert all(0x21 <= ord(c) <= 0x7E for c in chars)
    expected = count * 32 / 64
    chi_square = sum((seen - expected) ** 2 / expected for seen in chars.values())
    assert chi_square < 156.0


async def test_with_two_streams_open_each_message_goes_on_exactly_one() -> None:
    """E-12 (and S-07's "the first stream keeps receiving"): a standalone GET
    stream is open while a call streams its answer. The call's progress and
    response go on its POST stream only; the session's list_changed notices
    (a tool added at each step, a burst possibly coalesced) on the GET stream
    only; nothing on both."""
    steps = 5
    server = make_server()

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Adds a tool per step, reporting progress after each."""
        for i in range(steps):

            async def extra() -> str:
                return "x"

            server.tool(name=f"extra{i}")(extra)
            await ctx.report_progress(i + 1, steps)
        return "grown"

    body = orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "tools/call",
            "params": {"name": "grow", "arguments": {}, "_meta": {"progressToken": "tok"}},
        }
    )
    on_get: list[dict[str, Any]] = []
    enough = trio.Event()
    with trio.fail_after(30):
        async with running(server) as (url, _), raw_client(url) as http:
            sid = await open_raw_session(http)
            headers = {"accept": "text/event-stream", "mcp-session-id": sid}
            async with http.stream("GET", "/mcp", headers=headers) as get_stream:
                assert get_stream.status_code == 200

                async def read_get() -> None:
                    parser = SSEParser()
                    async for chunk in get_stream.aiter_bytes():
                        on_get.extend(orjson.loads(e.data) for e in parser.feed(chunk) if e.data)
                        if on_get:
                            enough.set()

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(read_get)
                    posted = await http.post("/mcp", content=body, headers=post_headers(sid))
                    await enough.wait()
                    nursery.cancel_scope.cancel()
    on_post = sse_messages(posted.text)
    assert [m.get("method") for m in on_post] == ["notifications/progress"] * steps + [None]
    assert [m["params"]["progress"] for m in on_post[:-1]] == list(range(1, steps + 1))
    assert on_post[-1]["id"] == 9
    # Notices of one kind may be coalesced (one per burst), never moved.
    assert on_get
    notice = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    assert all(m == notice for m in on_get)


def gated_server() -> tuple[Server, trio.Event, trio.Event, trio.Event]:
    """A server whose ``wait`` tool sets the first event, runs until the second
    is set, and sets the third as it returns."""
    server = make_server()
    started = trio.Event()
    gate = trio.Event()
    finished = trio.Event()

    @server.tool()
    async def wait() -> str:
        """Waits for the gate."""
        started.set()
        await gate.wait()
        finished.set()
        return "done"

    return server, started, gate, finished


WAIT = orjson.dumps(
    {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "wait", "arguments": {}}}
)


async def test_a_duplicate_id_in_json_response_mode_is_409_and_the_first_completes() -> None:
    """C-01 in JSON response mode: a second request with an id in flight is
    409; the first is answered normally."""
    server, started, gate, _ = gated_server()
    first: list[Any] = []
    async with running(server, json_response=True) as (url, _), raw_client(url) as http:
        sid = await open_raw_session(http)

        async def post_first() -> None:
            first.append(await http.post("/mcp", content=WAIT, headers=post_headers(sid)))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(post_first)
            await started.wait()
            second = await http.post("/mcp", content=WAIT, headers=post_headers(sid))
            assert second.status_code == 409
            assert second.json()["error"]["code"] == -32600
            gate.set()
    assert first[0].status_code == 200
    assert first[0].json()["result"]["content"][0]["text"] == "done"


async def test_a_client_gone_mid_stream_leaves_the_handler_running_and_the_session_healthy() -> (
    None
):
    """S-11 without an event store: the client drops its SSE response while
    the call runs. The handler is not cancelled (a dropped connection is no
    cancel in the handshake era), its result is dropped, and the session
    serves the next request."""
    server, started, gate, finished = gated_server()
    async with running(server) as (url, app), raw_client(url) as http:
        sid = await open_raw_session(http)
        async with http.stream("POST", "/mcp", content=WAIT, headers=post_headers(sid)) as cut:
            assert cut.status_code == 200
            await started.wait()
        # The response is closed: the connection is gone.
        transport = app.sessions()[sid]
        assert transport.in_flight(7)  # still running
        gate.set()
        await finished.wait()  # it ran to its end, never cancelled
        served = await http.post("/mcp", content=PING, headers=post_headers(sid))
        assert _answers(served) == [{"jsonrpc": "2.0", "id": 3, "result": {}}]
        assert app.session_count == 1


def test_the_harness_dns_rebinding_scenario_is_expected_to_pass() -> None:
    """O-12: the conformance harness's ``dns-rebinding-protection`` scenario
    is on no expected-failure list (its two checks, an evil Host refused and
    the real localhost Host served, are rows of ``test_dns_rebinding_defence``)."""
    lists = sorted(
        (Path(__file__).resolve().parents[3] / "conformance").glob("expected-failures-*.yml")
    )
    assert lists  # the harness's lists are there to read
    for path in lists:
        assert "dns-rebinding" not in path.read_text(), path.name
