"""Streamable HTTP limits: idle-session expiry, slow readers, undeliverable server requests,
and the ``--http`` option of the example servers (a real subprocess on a loopback port)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
import trio
from helpers import first_text
from http_helpers import make_server

from trio_mcp import http_app, open_http_client, parse_http_option
from trio_mcp.lowlevel import Caller
from trio_mcp.transports._http._common import id_key
from trio_mcp.transports._http.server._transport import UNDELIVERABLE, HttpServerTransport

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.spec("HT-32")
async def test_idle_sessions_are_reaped(autojump_clock: trio.testing.MockClock) -> None:
    app = http_app(make_server(), session_idle_timeout=60.0)
    async with app.run():
        idle = app.new_session(Caller())
        busy = app.new_session(Caller())
        assert idle is not None
        assert busy is not None
        assert busy.session_id is not None
        stream = busy.open_stream([1], {}, json=False)
        busy.attach(stream)  # an open connection: not idle, never reaped
        await trio.sleep(59.0)
        assert app.session_count == 2
        await trio.sleep(30.0)
        assert app.session_count == 1
        assert app.lookup(busy.session_id, {"headers": []}) is busy
        await idle.wait_closed()  # its session ended (the transport closed)


@pytest.mark.spec("HT-23")
async def test_a_reader_that_does_not_read_loses_only_its_connection() -> None:
    transport = HttpServerTransport("sid", connection_buffer=4)
    slow = transport.open_stream([1], {id_key("t"): "t"}, json=False)
    fast = transport.open_stream([2], {}, json=False)
    slow_conn = transport.attach(slow)
    fast_conn = transport.attach(fast)
    note = {"jsonrpc": "2.0", "method": "notifications/progress"}
    for i in range(5):  # one more than the buffer: the writer never blocks on it
        params = {"progressToken": "t", "progress": i}
        await transport.send(orjson.dumps({**note, "params": params}))
    assert slow_conn.broken
    assert slow.conn is None
    await transport.send(orjson.dumps({"jsonrpc": "2.0", "id": 2, "result": {}}))
    _, frame = fast_conn.take_nowait()
    assert orjson.loads(frame)["id"] == 2  # the other stream was not held up
    assert fast.done


@pytest.mark.parametrize("stateless", [False, True])
async def test_server_request_without_a_stream_fails_at_once(stateless: bool) -> None:
    transport = HttpServerTransport(None if stateless else "sid")
    transport.open_stream([1], {}, json=True)  # JSON-response mode, no GET stream
    with trio.fail_after(1):
        await transport.send(orjson.dumps({"jsonrpc": "2.0", "id": 9, "method": "roots/list"}))
        reply = orjson.loads(await transport.receive())
    assert reply["id"] == 9
    assert reply["error"]["code"] == UNDELIVERABLE


def test_parse_http_option() -> None:
    assert parse_http_option(["a", "--http", "127.0.0.1:0", "b"]) == (["a", "b"], ("127.0.0.1", 0))
    assert parse_http_option(["--http=[::1]:8080"]) == ([], ("::1", 8080))
    assert parse_http_option(["x"]) == (["x"], None)
    for bad in (["--http"], ["--http", "nohost"], ["--http", "h:99999"]):
        with pytest.raises(SystemExit):
            parse_http_option(bad)


@pytest.mark.spec("HT-01")
async def test_example_server_over_http() -> None:
    # Popen returns at once; the blocking read of its stderr runs in a thread.
    proc = subprocess.Popen(  # noqa: ASYNC220
        [sys.executable, str(ROOT / "examples" / "paper_trail.py"), "--http", "127.0.0.1:0"],
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stderr is not None
        with trio.fail_after(20):
            line = await trio.to_thread.run_sync(proc.stderr.readline)
            assert line.startswith("MCP over Streamable HTTP at http://127.0.0.1:"), line
            url = line.split(" at ", 1)[1].strip()
            assert url.endswith("/mcp")
            assert not url.endswith(":0/mcp")
            async with open_http_client(url) as client:
                result = await client.call_tool("order_status", {"order_id": "PT-1042"})
                assert "shipped" in first_text(result)
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()
