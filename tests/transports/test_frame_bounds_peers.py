"""Frame bounds fail fast with real peers, both directions and both eras (issue 17 §1).

Over stdio the peer is a real subprocess (a trio_mcp server, or a raw script
that sends what a trio_mcp server never would); over HTTP it is a real server on
loopback (hypercorn), in both response modes. In every case the refused frame's
id is read from its head or tail, the caller fails at once with a clear error
(-32600 naming the limit for a request; :class:`~trio_mcp.ResponseTooLarge` for
a response) and the session goes on: the next call is answered.
"""

from __future__ import annotations

import textwrap
import tracemalloc
from pathlib import Path

import orjson
import pytest
import trio
import trio.testing
from http_helpers import post_headers, raw_client, running
from stdio_helpers import CHILD_ENV, PYTHON

import trio_mcp
from trio_mcp import ResponseTooLarge, RPCError, open_http_client, open_stdio_client
from trio_mcp.protocol._head import OversizeFrame
from trio_mcp.transports import LineChannel, open_stdio_process

BOUND = 20_000
ERAS = ["legacy", "modern"]
MODERN = "2026-07-28"

SERVER_SCRIPT = """\
import sys
import trio
import trio_mcp

server = trio_mcp.Server("bounded")

@server.tool()
async def echo(text: str) -> str:
    \"\"\"Echo.\"\"\"
    return text

@server.tool()
async def big(n: int) -> str:
    \"\"\"A result of n bytes.\"\"\"
    return "x" * n

trio.run(lambda: trio_mcp.serve_stdio(server, max_message_size=int(sys.argv[1])))
"""


def _script(tmp_path: Path, text: str, name: str = "server.py") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def _big_server() -> trio_mcp.Server:
    server = trio_mcp.Server("bounded")

    @server.tool()
    async def echo(text: str) -> str:
        """Echo."""
        return text

    @server.tool()
    async def big(n: int) -> str:
        """A result of n bytes."""
        return "x" * n

    return server


def _text(result: trio_mcp.types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, trio_mcp.types.TextContent)
    return block.text


# ------------------------------------------------------------------ stdio


@pytest.mark.spec("BP-28", "SI-02")
@pytest.mark.parametrize("era", ERAS)
async def test_a_stdio_server_process_answers_an_oversize_request_with_its_id(
    tmp_path: Path, era: str
) -> None:
    script = _script(tmp_path, SERVER_SCRIPT)
    with trio.fail_after(30):
        async with open_stdio_client(PYTHON, [script, str(BOUND)], env=CHILD_ENV, era=era) as c:
            assert c.era == era
            start = trio.current_time()
            with pytest.raises(RPCError) as refused:
                await c.call_tool("echo", {"text": "x" * (3 * BOUND)})
            assert refused.value.code == -32600
            assert f"exceeds the limit of {BOUND} bytes" in refused.value.message
            assert trio.current_time() - start < 10  # answered, not timed out
            assert _text(await c.call_tool("echo", {"text": "after"})) == "after"
            await c.ping()


@pytest.mark.spec("BP-28", "SI-02")
async def test_a_stdio_server_process_reads_an_id_written_after_the_params(
    tmp_path: Path,
) -> None:
    script = _script(tmp_path, SERVER_SCRIPT)
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
    with trio.fail_after(30):
        async with open_stdio_process(PYTHON, [script, str(BOUND)], env=CHILD_ENV) as process:
            await process.send(orjson.dumps(init))
            assert orjson.loads(await process.receive())["id"] == 1
            await process.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
            pad = "x" * (5 * BOUND)
            args = {"name": "echo", "arguments": {"text": pad}}
            for request_id, extra in (("last", ""), ("middle", ',"z":"' + "y" * 5000 + '"')):
                frame = (
                    '{"jsonrpc":"2.0","method":"tools/call","params":'
                    + orjson.dumps(args).decode()
                    + f',"id":"{request_id}"{extra}}}'
                )
                await process.send(frame.encode())
                answer = orjson.loads(await process.receive())
                assert answer["error"]["code"] == -32600
                # Written last, the id is read from the line's tail; between two
                # large members it cannot be read (documented in _head.scan_frame).
                assert answer["id"] == ("last" if request_id == "last" else None)
            await process.send(b'{"jsonrpc":"2.0","id":2,"method":"ping"}')
            assert orjson.loads(await process.receive()) == {
                "jsonrpc": "2.0",
                "id": 2,
                "result": {},
            }


@pytest.mark.spec("BP-28", "SI-02")
@pytest.mark.parametrize("era", ERAS)
async def test_an_oversize_result_from_a_stdio_server_process_fails_its_call(
    tmp_path: Path, era: str
) -> None:
    script = _script(tmp_path, SERVER_SCRIPT)
    with trio.fail_after(30):
        async with open_stdio_client(
            PYTHON,
            [script, str(10 * BOUND)],
            env=CHILD_ENV,
            era=era,
            max_message_size=BOUND,
        ) as client:
            assert client.session.protocol.max_message_size == BOUND
            with pytest.raises(ResponseTooLarge, match=f"limit of {BOUND} bytes"):
                await client.call_tool("big", {"n": 4 * BOUND})
            assert not client.session.closed
            assert _text(await client.call_tool("big", {"n": 10})) == "x" * 10
            await client.ping()


HOSTILE = """\
import json, os, sys

for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    if method == "initialize":
        result = {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {},
            "serverInfo": {"name": "hostile", "version": "1"},
        }
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        os.write(1, (json.dumps(reply) + "\\n").encode())
    if method == "ping":
        if not seen:
            seen.append(1)
            # The id after a result of 3 MB, written in pieces as a slow server would.
            os.write(1, b'{"jsonrpc":"2.0","result":{"t":"')
            for _ in range(30):
                os.write(1, b"x" * 100_000)
            os.write(1, b'"},"id":' + json.dumps(message["id"]).encode() + b"}\\n")
        else:
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": {}}
            os.write(1, (json.dumps(reply) + "\\n").encode())
"""


@pytest.mark.spec("BP-28", "SI-02")
async def test_an_oversize_response_with_its_id_last_from_a_process_fails_its_call(
    tmp_path: Path,
) -> None:
    script = _script(tmp_path, "seen = []\n" + HOSTILE, "hostile.py")
    with trio.fail_after(30):
        async with open_stdio_client(
            PYTHON, [script], env=CHILD_ENV, era="legacy", max_message_size=BOUND
        ) as client:
            with pytest.raises(
                ResponseTooLarge, match=r"Message of 30000\d\d bytes exceeds the limit of 20000"
            ):
                await client.ping()
            await client.ping()
            transport = client.session.transport
            assert isinstance(transport, LineChannel)
            assert transport.statistics().oversize_lines == 1


# ------------------------------------------------------------ the framing


def _reader(limit: int, *, lockstep: bool = False) -> tuple[LineChannel, trio.abc.SendStream]:
    # Lockstep: a write waits for the read, as over a pipe (nothing piles up).
    if lockstep:
        send, receive = trio.testing.lockstep_stream_pair()
        return LineChannel(None, receive, max_message_size=limit), send
    one_way, end = trio.testing.memory_stream_one_way_pair()
    return LineChannel(None, end, max_message_size=limit), one_way


@pytest.mark.spec("BP-28", "SI-02")
async def test_a_line_whose_head_names_its_id_is_refused_before_it_ends() -> None:
    # Fail fast: the marker goes on once the line is over the limit; the rest
    # of the line is skipped as it arrives.
    channel, send = _reader(1000)
    await send.send_all(b'{"jsonrpc":"2.0","id":4,"result":{"t":"' + b"x" * 5000)
    with trio.fail_after(1):
        marker = await channel.receive()
    assert type(marker) is OversizeFrame
    assert marker.startswith(b'{"jsonrpc":"2.0","id":4,')
    await send.send_all(b"x" * 5000 + b'"}}\n{"ok":1}\n')
    assert await channel.receive() == b'{"ok":1}'


@pytest.mark.spec("BP-28", "SI-02")
async def test_a_line_whose_head_names_no_id_is_refused_at_its_end_with_its_tail() -> None:
    channel, send = _reader(1000)
    await send.send_all(b'{"jsonrpc":"2.0","result":{"t":"' + b"x" * 5000)
    await trio.testing.wait_all_tasks_blocked()
    with pytest.raises(trio.WouldBlock):
        channel.receive_nowait()  # held until the line ends: the id may come last
    await send.send_all(b"x" * 5000 + b'"},"id":"tail"}\r\n{"ok":1}\n')
    marker = await channel.receive()
    assert type(marker) is OversizeFrame
    assert marker.size == 10_000 + len(b'{"jsonrpc":"2.0","result":{"t":""},"id":"tail"}\r')
    assert marker.tail.endswith(b'"id":"tail"}\r')
    [error] = trio_mcp.protocol.decode(marker)
    assert isinstance(error, trio_mcp.protocol.FrameError)
    assert error.response_id == "tail"
    assert await channel.receive() == b'{"ok":1}'
    stats = channel.statistics()
    assert (stats.oversize_lines, stats.frames_in) == (1, 2)


@pytest.mark.spec("SI-02")
async def test_skipping_an_oversize_line_takes_bounded_memory() -> None:
    # 64 MiB in one line against a 1 MiB bound: what is kept is the bound (the
    # line up to it) plus the 4 KiB head and tail, never the line.
    channel, send = _reader(1 << 20, lockstep=True)
    chunk = b"y" * (1 << 16)
    tracemalloc.start()
    try:
        async with trio.open_nursery() as nursery:

            async def write() -> None:
                await send.send_all(b'{"method":"m","params":"')
                for _ in range(1024):
                    await send.send_all(chunk)
                await send.send_all(b'","id":1}\n')

            nursery.start_soon(write)
            marker = await channel.receive()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert type(marker) is OversizeFrame
    assert marker.size == 64 * (1 << 20) + len(b'{"method":"m","params":"","id":1}')
    assert peak < 4 * (1 << 20)


# ------------------------------------------------------------------- HTTP


@pytest.mark.spec("BP-28", "HT-08")
async def test_an_oversize_modern_post_gets_413_with_its_id() -> None:
    async with running(_big_server(), max_body_size=BOUND) as (url, _), raw_client(url) as http:
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        params = {"name": "echo", "arguments": {"text": "x" * (2 * BOUND)}, "_meta": meta}
        body = {"jsonrpc": "2.0", "id": "m-1", "method": "tools/call", "params": params}
        headers = post_headers(
            **{"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "echo"}
        )
        response = await http.post("/mcp", content=orjson.dumps(body), headers=headers)
        assert response.status_code == 413
        answer = response.json()
        assert (answer["id"], answer["error"]["code"]) == ("m-1", -32600)
        params["arguments"] = {"text": "fine"}
        response = await http.post("/mcp", content=orjson.dumps(body), headers=headers)
        assert response.status_code == 200


@pytest.mark.spec("BP-28", "HT-08")
@pytest.mark.parametrize("era", ERAS)
async def test_an_http_client_call_over_the_servers_bound_fails_at_once(era: str) -> None:
    async with running(_big_server(), max_body_size=BOUND) as (url, _):
        with trio.fail_after(30):
            async with open_http_client(f"{url}/mcp", era=era) as client:
                with pytest.raises(RPCError) as refused:
                    await client.call_tool("echo", {"text": "x" * (2 * BOUND)})
                assert refused.value.code == -32600
                assert f"larger than {BOUND} bytes" in refused.value.message
                assert _text(await client.call_tool("echo", {"text": "ok"})) == "ok"


@pytest.mark.spec("BP-28")
@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
@pytest.mark.parametrize("era", ERAS)
async def test_an_oversize_result_over_http_fails_its_call_and_the_client_goes_on(
    era: str, json_response: bool
) -> None:
    async with running(_big_server(), json_response=json_response) as (url, _):
        with trio.fail_after(30):
            async with open_http_client(f"{url}/mcp", era=era, max_message_size=BOUND) as client:
                assert client.era == era
                start = trio.current_time()
                with pytest.raises(ResponseTooLarge, match=f"limit of {BOUND} bytes"):
                    await client.call_tool("big", {"n": 50 * BOUND})
                assert trio.current_time() - start < 10
                assert not client.session.closed
                assert _text(await client.call_tool("big", {"n": 5})) == "xxxxx"
                await client.ping()
