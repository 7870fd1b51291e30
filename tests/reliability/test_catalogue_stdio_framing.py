"""stdio framing cases of the robustness catalogue (reliability §3.1): raw
bytes written to ``serve_stdio`` over real pipes, and a real client whose
server writes half a line and exits."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

import trio_mcp
from trio_mcp import SessionClosed, open_client, serve_stdio
from trio_mcp.transports import LineChannel

INIT = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
    b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
)


class RawStdioClient:
    """Writes raw bytes to a server's stdin; reads its stdout line by line."""

    def __init__(self, stdin: trio.lowlevel.FdStream, lines: LineChannel) -> None:
        self.stdin = stdin
        self.lines = lines

    async def write(self, data: bytes) -> None:
        await self.stdin.send_all(data)

    async def reply(self) -> Any:
        return json.loads(await self.lines.receive())

    async def ping_is_next(self, request_id: int) -> None:
        """The session is alive and wrote nothing since: the ping's answer is next."""
        await self.write(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % request_id)
        assert await self.reply() == {"jsonrpc": "2.0", "id": request_id, "result": {}}


@asynccontextmanager
async def served() -> AsyncIterator[RawStdioClient]:
    """``serve_stdio`` of a small server on pipes, handshake done."""
    to_server = os.pipe()
    from_server = os.pipe()
    stdin = trio.lowlevel.FdStream(to_server[1])
    lines = LineChannel(stdin, trio.lowlevel.FdStream(from_server[0]))
    server = trio_mcp.Server("framing")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(
            lambda: serve_stdio(
                server, stdin_fd=to_server[0], stdout_fd=from_server[1], handle_signals=False
            )
        )
        client = RawStdioClient(stdin, lines)
        try:
            await client.write(INIT)
            assert (await client.reply())["id"] == 1
            yield client
        finally:
            await lines.aclose()
    os.close(to_server[0])
    os.close(from_server[1])


@pytest.mark.parametrize("blank", [b"\n", b"\r\n", b"   \n", b"\t \t\n", b" \r\n"])
async def test_empty_and_whitespace_only_lines_are_ignored(blank: bytes) -> None:
    """F-04: no response to a line of nothing but whitespace."""
    with trio.fail_after(10):
        async with served() as client:
            await client.write(blank * 3)
            await client.ping_is_next(2)


async def test_a_raw_newline_inside_a_message_makes_two_malformed_lines() -> None:
    """F-05: the halves of a message cut by a raw newline are two lines, each a
    parse error with a null id; the stream goes on."""
    with trio.fail_after(10):
        async with served() as client:
            await client.write(b'{"jsonrpc":"2.0",\n"id":7,"method":"ping"}\n')
            first, second = await client.reply(), await client.reply()
            for reply in (first, second):
                assert (reply["id"], reply["error"]["code"]) == (None, -32700), reply
            await client.ping_is_next(3)


async def test_a_crlf_message_is_served() -> None:
    """F-03: a message ended by CRLF is served as if ended by LF."""
    with trio.fail_after(10):
        async with served() as client:
            await client.write(b'{"jsonrpc":"2.0","id":4,"method":"ping"}\r\n')
            assert await client.reply() == {"jsonrpc": "2.0", "id": 4, "result": {}}


async def test_a_utf8_bom_is_a_parse_error_and_the_stream_goes_on() -> None:
    """F-07: a byte order mark before the first frame (the handshake) is not
    JSON: -32700 with a null id, and the handshake sent again is served."""
    to_server = os.pipe()
    from_server = os.pipe()
    stdin = trio.lowlevel.FdStream(to_server[1])
    lines = LineChannel(stdin, trio.lowlevel.FdStream(from_server[0]))
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                lambda: serve_stdio(
                    trio_mcp.Server("bom"),
                    stdin_fd=to_server[0],
                    stdout_fd=from_server[1],
                    handle_signals=False,
                )
            )
            client = RawStdioClient(stdin, lines)
            try:
                await client.write(b"\xef\xbb\xbf" + INIT.split(b"\n")[0] + b"\n")
                refused = await client.reply()
                assert (refused["id"], refused["error"]["code"]) == (None, -32700), refused
                await client.write(INIT)
                assert (await client.reply())["result"]["serverInfo"]["name"] == "bom"
                await client.ping_is_next(2)
            finally:
                await lines.aclose()
    os.close(to_server[0])
    os.close(from_server[1])


async def test_eof_in_the_middle_of_a_line_fails_the_call_in_flight(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """F-09: the server writes half of its answer and exits. The partial line is
    dropped, never parsed, and the call in flight fails with SessionClosed at
    once, long before its own timeout."""
    to_client = os.pipe()
    to_server = os.pipe()
    client_end = LineChannel(
        trio.lowlevel.FdStream(to_server[1]), trio.lowlevel.FdStream(to_client[0])
    )
    server_out = trio.lowlevel.FdStream(to_client[1])
    server_in = LineChannel(
        trio.lowlevel.FdStream(os.dup(to_client[1])), trio.lowlevel.FdStream(to_server[0])
    )
    outcome: list[BaseException] = []

    async def half_a_server() -> None:
        init = json.loads(await server_in.receive())
        answer = {
            "jsonrpc": "2.0",
            "id": init["id"],
            "result": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "serverInfo": {"name": "half", "version": "0"},
            },
        }
        await server_out.send_all(json.dumps(answer).encode() + b"\n")
        assert json.loads(await server_in.receive())["method"] == "notifications/initialized"
        ping = json.loads(await server_in.receive())
        await server_out.send_all(b'{"jsonrpc":"2.0","id":%d,"res' % ping["id"])
        await server_out.aclose()  # EOF mid-line: the process is gone
        await server_in.aclose()

    with trio.fail_after(5):  # far below the 60 s request timeout
        async with trio.open_nursery() as nursery:
            nursery.start_soon(half_a_server)
            async with open_client(client_end, era="legacy", discover=False) as client:
                try:
                    await client.session.request("ping")
                except SessionClosed as exc:
                    outcome.append(exc)
    [closed] = outcome
    assert isinstance(closed, SessionClosed)
    stats = client_end.statistics()
    assert stats.discarded_tail > 0
