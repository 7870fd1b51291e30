"""Closing a server while a ``subscriptions/listen`` handler is in flight.

Elsewhere the close waits for in-flight requests while the listen waits for
the close, and both hang. Here every close path ends the open listen streams
with their final ``complete`` result (SB-09), written before the session
closes, and returns: end of stdin, the owner's cancel (in memory, over stdio
and of ``serve_http``), SIGTERM (stdio and HTTP), and the session's own close.
Listen is 2026-07-28 only. The handshake era's resource subscriptions have no
final result: the owner's cancel ends the session at once and writes nothing
more. Its nearest thing to an open listen, a session's GET stream beside a
call in flight, is ended by a DELETE, which returns at once.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from typing import Any

import httpx
import orjson
import pytest
import trio
from helpers import RawPeer
from http_helpers import init_body, post_headers, raw_client, running, sse_messages
from lifecycle_helpers import (
    ACK,
    MODERN,
    SUB_ID,
    listen_frame,
    modern_frame,
    open_post,
    receive_json,
    send_json,
    stdio_pipes,
)

from trio_mcp import Context, Server, http_app, serve_session
from trio_mcp.protocol import SUPPORTED_VERSIONS
from trio_mcp.testing import memory_transport_pair

#: Bound on anything here (real pipes, sockets and processes).
NOT_HUNG = 20
URL_LINE = b"MCP over Streamable HTTP at "


def listening_server() -> Server:
    server = Server("listening", version="1", protocol_versions=(MODERN, *SUPPORTED_VERSIONS))

    @server.tool()
    async def wait(ctx: Context) -> None:
        """Never answers by itself."""
        await trio.sleep_forever()

    @server.resource("note://a")
    async def note() -> str:
        return "a"

    @server.tool()
    async def big() -> str:
        """More than a pipe holds: the session's writer task takes over."""
        return "x" * (1 << 20)

    return server


def is_final(message: dict[str, Any], request_id: object) -> bool:
    result = message.get("result")
    return (
        message.get("id") == request_id
        and isinstance(result, dict)
        and result.get("resultType") == "complete"
        and result["_meta"][SUB_ID] == request_id
    )


async def read_lines(channel: Any) -> list[dict[str, Any]]:
    """Every message until the server's output ends."""
    seen = []
    while True:
        try:
            seen.append(await receive_json(channel))
        except (trio.EndOfChannel, trio.ClosedResourceError):
            return seen


# --- in memory --------------------------------------------------------------------


@pytest.mark.spec("SB-09", "SB-10")
async def test_close_while_listening_ends_the_listen_on_the_owners_cancel_in_memory(
    autojump_clock: Any,
) -> None:
    peer_end, server_end = memory_transport_pair()
    peer = RawPeer(peer_end)
    returned = False
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.collect)
        with trio.CancelScope() as owner:
            nursery.start_soon(_cancel_once_acknowledged, peer, owner)
            await serve_session(listening_server(), server_end)
        returned = True
        await peer.wait_eof()
    after_ack = peer.frames[[f.get("method") for f in peer.frames].index(ACK) + 1 :]
    assert returned
    assert [is_final(m, "l-1") for m in after_ack] == [True], after_ack
    # Answered at once (the wait for it is bounded by cancel_notify_grace).
    assert trio.current_time() == 0


async def _cancel_once_acknowledged(peer: RawPeer, owner: trio.CancelScope) -> None:
    await peer.send(listen_frame("l-1", toolsListChanged=True))
    await peer.wait_method(ACK)
    owner.cancel()


@pytest.mark.spec("RS-06", "SB-10")
async def test_close_while_listening_handshake_era_subscription_ends_without_a_result_in_memory(
    autojump_clock: Any,
) -> None:
    # The handshake era's resource subscription is a request answered at
    # once, not an open stream: there is no final result to send. The owner's
    # cancel ends the session at once and writes nothing more.
    peer_end, server_end = memory_transport_pair()
    peer = RawPeer(peer_end)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.collect)
        with trio.CancelScope() as owner:

            async def subscribe_then_cancel() -> None:
                await peer.handshake_as_client("2025-11-25")
                assert "result" in await peer.request("resources/subscribe", {"uri": "note://a"})
                owner.cancel()

            nursery.start_soon(subscribe_then_cancel)
            await serve_session(listening_server(), server_end)
        seen = len(peer.frames)
        await peer.wait_eof()
    assert len(peer.frames) == seen
    assert trio.current_time() == 0


# --- stdio ------------------------------------------------------------------------


@pytest.mark.spec("SB-09", "SI-11")
async def test_close_while_listening_ends_the_listen_on_stdio_eof() -> None:
    async with stdio_pipes(listening_server()) as (channel, served):
        with trio.fail_after(NOT_HUNG):
            await send_json(channel, listen_frame(3, toolsListChanged=True))
            assert (await receive_json(channel))["method"] == ACK
            await channel.send_stream.aclose()  # type: ignore[union-attr]  # end of stdin
            final = await receive_json(channel)
            await served.returned.wait()
    assert is_final(final, 3)


@pytest.mark.spec("SB-09", "SB-10")
async def test_close_while_listening_ends_the_listen_on_the_owners_cancel_over_stdio() -> None:
    # The listen's stream is shielded from the owner's cancel, so the
    # session's shutdown ends it with its final result before it returns.
    async with stdio_pipes(listening_server()) as (channel, served):
        with trio.fail_after(NOT_HUNG):
            await send_json(channel, listen_frame(4, toolsListChanged=True))
            assert (await receive_json(channel))["method"] == ACK
            served.scope.cancel()
            await served.returned.wait()
            final = await receive_json(channel)
    assert is_final(final, 4), final


@pytest.mark.spec("SB-09", "SB-10")
async def test_close_while_listening_ends_the_listen_on_the_owners_cancel_after_backpressure() -> (
    None
):
    # A frame the pipe could not take made the session start its writer task,
    # which the owner's cancel ends too: the final result still goes out,
    # written through as before the task was made.
    async with stdio_pipes(listening_server()) as (channel, served):
        with trio.fail_after(NOT_HUNG):
            await send_json(channel, modern_frame("tools/call", {"name": "big"}, 3))
            big = await receive_json(channel)
            assert big["id"] == 3
            await send_json(channel, listen_frame(4, toolsListChanged=True))
            assert (await receive_json(channel))["method"] == ACK
            served.scope.cancel()
            await served.returned.wait()
            final = await receive_json(channel)
    assert is_final(final, 4), final


async def _spawn(*args: str) -> trio.Process:
    return await trio.lowlevel.open_process(
        [sys.executable, "-m", "trio_mcp.examples.everything", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )


async def _lines(stream: trio.abc.ReceiveStream) -> list[dict[str, Any]]:
    data = b""
    while chunk := await stream.receive_some(1 << 16):
        data += chunk
    return [orjson.loads(line) for line in data.splitlines() if line.strip()]


@pytest.mark.spec("SB-09", "SI-10")
async def test_close_while_listening_ends_the_listen_on_sigterm_over_stdio() -> None:
    process = await _spawn()
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        with trio.fail_after(NOT_HUNG):
            await process.stdin.send_all(
                orjson.dumps(listen_frame(5, toolsListChanged=True)) + b"\n"
            )
            seen = b""
            while b"acknowledged" not in seen:
                seen += await process.stdout.receive_some(1 << 16)
            process.send_signal(signal.SIGTERM)
            rest = await _lines(process.stdout)
            status = await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        for pipe in (process.stdin, process.stdout):
            await pipe.aclose()
    # SIGTERM cancels the server as the owner's cancel does: the listen's final
    # result is written before the process exits, and nothing else.
    assert [is_final(m, 5) for m in rest] == [True], rest
    assert status in (0, -signal.SIGTERM, 128 + signal.SIGTERM)


# --- Streamable HTTP --------------------------------------------------------------


async def _read_to_end(stream: trio.SocketStream, seen: bytes) -> bytes:
    try:
        while chunk := await stream.receive_some(1 << 16):
            seen += chunk
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    return seen


def _after_ack(raw: bytes) -> list[dict[str, Any]]:
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    # Chunked transfer: the SSE parser skips the chunk-size lines it cannot parse.
    messages = sse_messages(body.decode(errors="replace"))
    assert messages[0]["method"] == ACK
    return messages[1:]


@pytest.mark.spec("SB-09", "HM-13")
async def test_close_while_listening_ends_the_listen_on_the_owners_cancel_over_http() -> None:
    with trio.fail_after(NOT_HUNG):
        async with running(http_app(listening_server())) as (url, _):
            stream = await open_post(url, listen_frame(6, toolsListChanged=True))
            seen = b""
            while b"acknowledged" not in seen:
                seen += await stream.receive_some(1 << 16)
        # running() cancelled serve_http as it left: it returned, with the
        # listen POST still open.
        seen = await _read_to_end(stream, seen)
        await stream.aclose()
    rest = _after_ack(seen)
    assert [is_final(m, 6) for m in rest] == [True], rest


@pytest.mark.spec("SB-09", "LC-16")
async def test_close_while_listening_ends_the_listen_on_sigterm_over_http() -> None:
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "trio_mcp.examples.everything", "--http", "127.0.0.1:0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    try:
        with trio.fail_after(NOT_HUNG):
            printed = b""
            while URL_LINE not in printed or not printed.split(URL_LINE, 1)[1].count(b"\n"):
                chunk = await process.stderr.receive_some(1 << 16)
                assert chunk, printed
                printed += chunk
            url = printed.split(URL_LINE, 1)[1].split()[0].decode().removesuffix("/mcp")
            stream = await open_post(url, listen_frame(7, toolsListChanged=True))
            seen = b""
            while b"acknowledged" not in seen:
                seen += await stream.receive_some(1 << 16)
            process.send_signal(signal.SIGTERM)
            seen = await _read_to_end(stream, seen)
            await stream.aclose()
            await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        await process.stderr.aclose()
    rest = _after_ack(seen)
    assert [is_final(m, 7) for m in rest] == [True], rest


@pytest.mark.spec("HT-01", "LC-16")
async def test_close_while_streaming_delete_returns_in_the_handshake_era_over_http() -> None:
    # The handshake era's nearest thing to an open listen: the session's GET
    # stream, with a call in flight; the DELETE ends both and returns at once.
    server = listening_server()
    started = trio.Event()

    @server.tool()
    async def hold() -> None:
        """Never answers by itself."""
        started.set()
        await trio.sleep_forever()

    async with running(http_app(server)) as (url, _), raw_client(url) as http:
        session = await _open_session(http)
        headers = post_headers(session, **{"mcp-protocol-version": "2025-11-25"})
        with trio.fail_after(NOT_HUNG):
            async with trio.open_nursery() as nursery:
                ended = trio.Event()
                opened = trio.Event()

                async def stream() -> None:
                    get_headers = {**headers, "accept": "text/event-stream"}
                    async with http.stream("GET", "/mcp", headers=get_headers) as response:
                        assert response.status_code == 200
                        opened.set()
                        async for _ in response.aiter_bytes():
                            pass
                    ended.set()

                async def call() -> None:
                    body = {
                        "jsonrpc": "2.0",
                        "id": 2,
                        "method": "tools/call",
                        "params": {"name": "hold", "arguments": {}},
                    }
                    await http.post("/mcp", content=orjson.dumps(body), headers=headers)

                nursery.start_soon(stream)
                nursery.start_soon(call)
                await opened.wait()
                await started.wait()
                deleted = await http.delete("/mcp", headers=headers)
                await ended.wait()
                nursery.cancel_scope.cancel()
    assert deleted.status_code in (200, 204)


async def _open_session(http: httpx.AsyncClient) -> str:
    response = await http.post("/mcp", content=init_body(), headers=post_headers())
    session: str = response.headers["mcp-session-id"]
    note = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
    await http.post(
        "/mcp",
        content=note,
        headers=post_headers(session, **{"mcp-protocol-version": "2025-11-25"}),
    )
    return session
