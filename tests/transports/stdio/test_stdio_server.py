"""The server side of stdio: serve_stdio on pipes in-process, and over a real subprocess."""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio
from stdio_helpers import PYTHON, open_fds

import trio_mcp
from trio_mcp import serve_stdio
from trio_mcp._transport import Transport
from trio_mcp.testing import check_transport
from trio_mcp.transports import LineChannel, open_stdio_process


def _server() -> trio_mcp.Server:
    server = trio_mcp.Server("pipes")

    @server.tool()
    async def echo(text: str) -> str:
        """Echo."""
        return text

    return server


@asynccontextmanager
async def served_over_pipes(
    max_message_size: int = 4 << 20,
) -> AsyncIterator[tuple[LineChannel, trio.Nursery]]:
    """serve_stdio on pipe fds (as if they were fds 0 and 1); yield the client end."""
    to_server = os.pipe()
    from_server = os.pipe()
    client_end = LineChannel(
        trio.lowlevel.FdStream(to_server[1]), trio.lowlevel.FdStream(from_server[0])
    )
    async with trio.open_nursery() as nursery:
        nursery.start_soon(
            lambda: serve_stdio(
                _server(),
                stdin_fd=to_server[0],
                stdout_fd=from_server[1],
                handle_signals=False,
                max_message_size=max_message_size,
            )
        )
        try:
            yield client_end, nursery
        finally:
            await client_end.aclose()
    os.close(to_server[0])
    os.close(from_server[1])


INIT = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
)


@pytest.mark.spec("SI-11")
async def test_idle_server_under_a_deadline_returns_at_once() -> None:
    to_server = os.pipe()
    from_server = os.pipe()
    before = open_fds()
    started = time.perf_counter()
    with trio.move_on_after(0.05) as scope:
        await serve_stdio(
            _server(), stdin_fd=to_server[0], stdout_fd=from_server[1], handle_signals=False
        )
    elapsed = time.perf_counter() - started
    assert scope.cancelled_caught
    assert elapsed < 0.5  # no thread blocked on stdin to wait for
    assert open_fds() == before  # private duplicates closed, fds restored
    # The served fds point where they did before: still our pipes.
    os.write(from_server[1], b"x")
    assert os.read(from_server[0], 1) == b"x"
    for fd in (*to_server, *from_server):
        os.close(fd)


@pytest.mark.spec("SI-02")
async def test_oversize_and_garbage_lines_get_errors_and_the_session_goes_on() -> None:
    async with served_over_pipes(max_message_size=1000) as (client, _):
        await client.send(INIT)
        assert json.loads(await client.receive())["id"] == 1
        await client.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        await client.send(
            b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"' + b"a" * 5000 + b'"}}'
        )
        oversize = json.loads(await client.receive())
        await client.send(b"not json")
        garbage = json.loads(await client.receive())
        await client.send(b'{"jsonrpc":"2.0","id":3,"method":"ping"}')
        pong = json.loads(await client.receive())
    assert oversize["id"] == 2  # read from the line's head (issue 17 §1)
    assert oversize["error"]["code"] == -32600
    assert garbage["id"] is None
    assert garbage["error"]["code"] == -32700
    assert pong == {"jsonrpc": "2.0", "id": 3, "result": {}}


@pytest.mark.spec("SI-11")
async def test_serve_stdio_returns_on_eof() -> None:
    async with served_over_pipes() as (client, nursery):
        await client.send(INIT)
        assert json.loads(await client.receive())["result"]["serverInfo"]["name"] == "pipes"
        with trio.fail_after(5):
            await client.aclose()
            # serve_stdio returns by itself: the nursery has no other task.
    assert not nursery.child_tasks


RELAY = """
import os, selectors, socket, sys
sock = socket.socket(socket.AF_UNIX)
sock.connect(sys.argv[1])
sel = selectors.DefaultSelector()
sel.register(0, selectors.EVENT_READ, "stdin")
sel.register(sock, selectors.EVENT_READ, "sock")
while True:
    for key, _ in sel.select():
        if key.data == "stdin":
            data = os.read(0, 65536)
            if not data:
                sock.shutdown(socket.SHUT_WR); sel.unregister(0); continue
            sock.sendall(data)
        else:
            data = sock.recv(65536)
            if not data:
                sys.exit(0)
            os.write(1, data)
"""


@pytest.mark.spec("SI-01")
async def test_check_transport_over_a_real_subprocess(tmp_path: Path) -> None:
    """The client transport to a real child: the child relays its stdin/stdout to a
    Unix socket whose other end is the in-process peer."""
    counter = 0

    @asynccontextmanager
    async def subprocess_pair() -> AsyncIterator[tuple[Transport, Transport]]:
        nonlocal counter
        counter += 1
        path = str(tmp_path / f"relay{counter}.sock")
        listener = trio.socket.socket(trio.socket.AF_UNIX)
        await listener.bind(path)
        listener.listen(1)
        try:
            async with open_stdio_process(PYTHON, ["-c", RELAY, path], close_grace=5) as process:
                sock, _ = await listener.accept()
                stream = trio.SocketStream(sock)
                peer = LineChannel(stream, stream)
                try:
                    yield process, peer
                finally:
                    await peer.aclose()
        finally:
            listener.close()

    @asynccontextmanager
    async def peer_first() -> AsyncIterator[tuple[Transport, Transport]]:
        async with subprocess_pair() as (process, peer):
            yield peer, process

    before = open_fds()
    with trio.fail_after(120):
        await check_transport(subprocess_pair)
        # The rules that concern one end (aclose waking a blocked receive) run
        # on the first end of the pair: the process end in both roles.
        await check_transport(peer_first)
    assert open_fds() == before
