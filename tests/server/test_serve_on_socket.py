"""``serve_http(sock=...)``: serving on a socket made elsewhere (a supervisor's,
inherited), which stays the caller's: open and listening after the server
ends, so a second server serves it again, answering what queued meanwhile."""

from __future__ import annotations

import socket

import pytest
import trio

from trio_mcp import Server, open_http_client, serve_http


def build() -> Server:
    server = Server("on-a-socket", version="1")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    return server


async def serve_once(
    sock: socket.socket, text: str, queued: trio.SocketStream | None = None
) -> None:
    async with trio.open_nursery() as nursery:
        url = await nursery.start(
            lambda task_status: serve_http(build(), sock=sock, task_status=task_status)
        )
        assert url == f"http://127.0.0.1:{sock.getsockname()[1]}"
        async with open_http_client(f"{url}/mcp", era="modern") as client:
            result = await client.call_tool("echo", {"text": text})
            assert result.content[0].text == text  # type: ignore[union-attr]
        if queued is not None:
            answer = b""
            while b"\r\n\r\n" not in answer:
                answer += await queued.receive_some(4096)
            assert answer.startswith(b"HTTP/1.1 200")
        nursery.cancel_scope.cancel()


async def test_a_socket_is_served_and_stays_the_callers() -> None:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        await serve_once(sock, "first")
        assert sock.fileno() != -1
        # Still listening between the two servers: a connection made now waits
        # in its queue, and the second server answers it.
        async with await trio.open_tcp_stream(*sock.getsockname()) as queued:
            await queued.send_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            await serve_once(sock, "second", queued)


async def test_a_socket_goes_with_neither_an_address_nor_workers() -> None:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        with pytest.raises(ValueError, match="either a socket or a host and port"):
            await serve_http(build(), "127.0.0.1", 8000, sock=sock)
        with pytest.raises(ValueError, match="leave out workers"):
            await serve_http("trio_mcp.examples.everything:build_server", sock=sock, workers=2)
