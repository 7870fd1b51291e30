"""Resumability: a cut connection loses nothing and duplicates nothing."""

from __future__ import annotations

import orjson
import pytest
import trio
from http_helpers import LATEST, make_server, open_raw_session, post_headers, raw_client, running

from trio_mcp import Context, Server
from trio_mcp.transports._http._sse import SSEEvent, SSEParser
from trio_mcp.transports._http.server._event_store import MemoryEventStore

STEPS = 6


def streaming_server() -> tuple[Server, list[trio.Event]]:
    server = make_server()
    gates = [trio.Event() for _ in range(STEPS + 1)]

    @server.tool()
    async def count(ctx: Context) -> str:
        for i in range(STEPS):
            await gates[i].wait()
            await ctx.report_progress(i + 1, STEPS)
        await gates[STEPS].wait()
        return "finished"

    return server, gates


BODY = orjson.dumps(
    {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/call",
        "params": {"name": "count", "arguments": {}, "_meta": {"progressToken": "tok"}},
    }
)


@pytest.mark.spec("HT-10")
@pytest.mark.spec("HT-17")
@pytest.mark.spec("HT-25")
@pytest.mark.spec("HT-26")
@pytest.mark.parametrize("cut_after", [0, 1, 3, STEPS])
async def test_cut_stream_resumes_exactly_once(cut_after: int) -> None:
    server, gates = streaming_server()
    store = MemoryEventStore()
    async with (
        running(server, event_store=store, retry_interval=50) as (url, _),
        raw_client(url) as http,
    ):
        sid = await open_raw_session(http)
        headers = post_headers(sid, **{"mcp-protocol-version": LATEST})
        seen: list[dict[str, object]] = []
        parser = SSEParser()
        # A raw HTTP/1.0 socket, so the cut is a real TCP close mid-stream.
        host, port = url.removeprefix("http://").rsplit(":", 1)
        sock = await trio.open_tcp_stream(host, int(port))
        head = f"POST /mcp HTTP/1.0\r\nhost: {host}:{port}\r\ncontent-length: {len(BODY)}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        await sock.send_all(head.encode() + BODY)
        buffer = b""
        while b"\r\n\r\n" not in buffer:
            buffer += await sock.receive_some()
        status_line, _, rest = buffer.partition(b"\r\n\r\n")
        assert status_line.startswith(b"HTTP/1.0 200") or status_line.startswith(b"HTTP/1.1 200")
        events = parser.feed(rest)
        while not events:  # the priming event: an id and empty data, with retry
            events = parser.feed(await sock.receive_some())
        assert (events[0].data, events[0].retry) == ("", 50)
        assert events[0].id is not None
        for i in range(cut_after):
            gates[i].set()
            got: list[SSEEvent] = []
            while not got:
                got = [e for e in parser.feed(await sock.receive_some()) if e.data]
            seen.extend(orjson.loads(e.data) for e in got)
        await sock.aclose()
        # Disconnected: the tool runs on (a disconnect is not a cancellation).
        for gate in gates[cut_after:]:
            gate.set()
        await trio.testing.wait_all_tasks_blocked()
        resume = {"accept": "text/event-stream", "mcp-session-id": sid}
        resume["last-event-id"] = parser.last_event_id or ""
        response = await http.get("/mcp", headers=resume)
        assert response.status_code == 200
        seen.extend(orjson.loads(e.data) for e in SSEParser().feed(response.content) if e.data)
        progress = [m["params"]["progress"] for m in seen if m.get("method")]  # type: ignore[index]
        assert progress == list(range(1, STEPS + 1))
        results = [m for m in seen if "result" in m]
        assert [r["id"] for r in results] == [5]


async def test_last_event_id_of_another_session_is_refused() -> None:
    server, gates = streaming_server()
    store = MemoryEventStore()
    async with running(server, event_store=store) as (url, _), raw_client(url) as http:
        victim = await open_raw_session(http)
        attacker = await open_raw_session(http)
        for gate in gates:
            gate.set()
        response = await http.post("/mcp", content=BODY, headers=post_headers(victim))
        last = SSEParser().feed(response.content)[-1].id
        assert last is not None
        headers = {"accept": "text/event-stream", "mcp-session-id": attacker, "last-event-id": last}
        stolen = await http.get("/mcp", headers=headers)
        assert stolen.status_code == 400
        assert b"finished" not in stolen.content
        headers["last-event-id"] = "\x01bad"
        assert (await http.get("/mcp", headers=headers)).status_code == 400


def test_memory_store_bounds_and_forgets() -> None:
    store = MemoryEventStore(max_events_per_stream=3)
    ids = [store.store_event_nowait("s", "1", b"%d" % i) for i in range(5)]
    assert store.events_after_nowait("s", ids[0]) is None  # evicted: refuse, never shorten
    assert store.events_after_nowait("s", ids[2]) == ("1", [(ids[3], b"3"), (ids[4], b"4")])
    assert store.events_after_nowait("other", ids[2]) is None
    trio.run(store.forget_session, "s")
    assert len(store) == 0
