"""Frame bounds fail fast (docs/explanation/architecture.md, "Frame bounds fail fast").

A frame over the bound is never parsed; its id, read by a bounded scan of its
head, lets the caller fail at once instead of waiting for its timeout: a request
is answered -32600 with its id, a response fails the call it answers with
:class:`~trio_mcp.ResponseTooLarge`, and the session goes on, over the memory
transport, stdio (whose framing drops the rest of the line and resumes at the next
one) and HTTP (the 413 carries the JSON-RPC error with the id).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import orjson
import pytest
import trio
import trio.testing
from helpers import open_client_with_raw_server
from http_helpers import (
    init_body,
    legacy_sse_stream,
    make_server,
    open_raw_session,
    post_headers,
    raw_client,
    running,
)

import trio_mcp
from trio_mcp import ResponseTooLarge, RPCError, open_client, serve_stdio
from trio_mcp.lowlevel import open_session
from trio_mcp.protocol import DEFAULT_MAX_MESSAGE_SIZE
from trio_mcp.testing import memory_transport_pair
from trio_mcp.transports import LineChannel

BOUND = 2000


def _server() -> trio_mcp.Server:
    server = trio_mcp.Server("bounds")

    @server.tool()
    async def echo(text: str) -> str:
        """Echo."""
        return text

    return server


async def _oversize_call_then_a_normal_one(client: trio_mcp.Client) -> None:
    start = trio.current_time()
    with pytest.raises(RPCError) as refused:
        await client.call_tool("echo", {"text": "x" * (2 * BOUND)})
    assert refused.value.code == -32600
    assert "exceeds the limit" in refused.value.message
    assert trio.current_time() - start < 1  # answered, not timed out
    result = await client.call_tool("echo", {"text": "fine"})
    assert result.structured_content == {"result": "fine"} or "fine" in repr(result.content)


@pytest.mark.spec("BP-28")
async def test_an_oversize_request_is_answered_with_its_id_over_memory(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = _server()
    client_end, server_end = memory_transport_pair()
    async with trio.open_nursery() as nursery:

        async def serve() -> None:
            # The bound is configurable per session.
            async with open_session(
                server_end, server.make_protocol, server, max_message_size=BOUND
            ) as session:
                await session.wait_closed()

        nursery.start_soon(serve)
        async with open_client(client_end, discover=False) as client:
            await _oversize_call_then_a_normal_one(client)
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def _pipes() -> AsyncIterator[tuple[int, int, int, int]]:
    to_server = os.pipe()
    from_server = os.pipe()
    try:
        yield to_server[0], to_server[1], from_server[0], from_server[1]
    finally:
        for fd in (*to_server, *from_server):
            with contextlib.suppress(OSError):
                os.close(fd)


@pytest.mark.spec("BP-28")
@pytest.mark.spec("SI-02")
async def test_an_oversize_request_is_answered_with_its_id_over_stdio() -> None:
    async with (
        _pipes() as (server_in, client_out, client_in, server_out),
        trio.open_nursery() as nursery,
    ):
        nursery.start_soon(
            lambda: serve_stdio(
                _server(),
                stdin_fd=server_in,
                stdout_fd=server_out,
                handle_signals=False,
                max_message_size=BOUND,
            )
        )
        transport = LineChannel(
            trio.lowlevel.FdStream(os.dup(client_out)),
            trio.lowlevel.FdStream(os.dup(client_in)),
        )
        with trio.fail_after(10):
            async with open_client(transport, discover=False) as client:
                await _oversize_call_then_a_normal_one(client)
        nursery.cancel_scope.cancel()


@pytest.mark.spec("BP-28")
async def test_an_oversize_response_fails_its_call_at_once_and_the_session_goes_on(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_client_with_raw_server() as (peer, client):
        start = trio.current_time()

        async def oversize_answer() -> None:
            request = await peer.wait_method("ping")
            text = "x" * DEFAULT_MAX_MESSAGE_SIZE
            await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {"t": text}})

        async with trio.open_nursery() as nursery:
            nursery.start_soon(oversize_answer)
            with pytest.raises(ResponseTooLarge, match="exceeds the limit") as failed:
                await client.session.request("ping")
        assert isinstance(failed.value, trio_mcp.InvalidPeerResult)
        assert "Oversize response for ping" in str(failed.value)
        assert trio.current_time() == start
        assert not client.session.closed

        async def answer() -> None:
            request = await peer.wait_for(
                lambda f: f.get("method") == "ping" and f["id"] != failed_id
            )
            await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {}})

        failed_id = next(f["id"] for f in peer.frames if f.get("method") == "ping")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(answer)
            await client.session.request("ping")


@pytest.mark.spec("BP-28")
async def test_an_oversize_response_over_stdio_fails_its_call_and_framing_resumes() -> None:
    async with _pipes() as (server_in, client_out, client_in, server_out):
        client_transport = LineChannel(
            trio.lowlevel.FdStream(os.dup(client_out)),
            trio.lowlevel.FdStream(os.dup(client_in)),
            max_message_size=BOUND,
        )
        raw = LineChannel(
            trio.lowlevel.FdStream(os.dup(server_out)), trio.lowlevel.FdStream(os.dup(server_in))
        )

        async def raw_server() -> None:
            init = orjson.loads(await raw.receive())
            result = {
                "protocolVersion": init["params"]["protocolVersion"],
                "capabilities": {},
                "serverInfo": {"name": "raw", "version": "0"},
            }
            await raw.send(orjson.dumps({"jsonrpc": "2.0", "id": init["id"], "result": result}))
            while True:
                frame = orjson.loads(await raw.receive())
                if frame.get("method") != "ping":
                    continue
                if not first_ping:
                    first_ping.append(frame["id"])
                    big = {"jsonrpc": "2.0", "id": frame["id"], "result": {"t": "x" * 10 * BOUND}}
                    await raw.send(orjson.dumps(big))
                else:
                    await raw.send(
                        orjson.dumps({"jsonrpc": "2.0", "id": frame["id"], "result": {}})
                    )

        first_ping: list[int] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(raw_server)
            with trio.fail_after(10):
                async with open_client(client_transport, discover=False, era="legacy") as client:
                    with pytest.raises(ResponseTooLarge, match=f"limit of {BOUND} bytes"):
                        await client.ping()
                    await client.ping()  # the next line was framed whole
                    assert not client.session.closed
                    assert client_transport.statistics().oversize_lines == 1
            nursery.cancel_scope.cancel()
        await raw.aclose()


# ------------------------------------------------------------------ HTTP


def _big_call(request_id: object = 7) -> bytes:
    return orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 2, "pad": "x" * 5000}},
        }
    )


@pytest.mark.spec("BP-28")
@pytest.mark.spec("HT-08")
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
async def test_an_oversize_post_gets_413_with_its_id(chunked: bool) -> None:
    async with running(make_server(), max_body_size=BOUND) as (url, _), raw_client(url) as http:
        session_id = await open_raw_session(http)
        body = _big_call("call-7")

        async def pieces() -> AsyncIterator[bytes]:
            for i in range(0, len(body), 1000):
                yield body[i : i + 1000]

        response = await http.post(
            "/mcp",
            content=pieces() if chunked else body,
            headers=post_headers(session_id, **{"mcp-protocol-version": "2025-11-25"}),
        )
        assert response.status_code == 413
        assert response.headers["content-type"] == "application/json"
        answer = response.json()
        assert answer["id"] == "call-7"
        assert answer["error"]["code"] == -32600
        assert f"larger than {BOUND} bytes" in answer["error"]["message"]
        # The session goes on.
        ok = await http.post(
            "/mcp",
            content=orjson.dumps({"jsonrpc": "2.0", "id": 8, "method": "ping"}),
            headers=post_headers(session_id, **{"mcp-protocol-version": "2025-11-25"}),
        )
        assert ok.status_code == 200


@pytest.mark.spec("BP-28")
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
@pytest.mark.parametrize(
    ("after", "expected"),
    [(b"", 1), (b',"z":"' + b"y" * 5000 + b'"', None)],
    ids=["last", "middle"],
)
async def test_an_oversize_post_whose_id_follows_the_params(
    chunked: bool, after: bytes, expected: int | None
) -> None:
    # Written last, the id is read from the body's tail (the rest of the body is
    # drained for it, never kept); between two large members it cannot be read.
    async with running(make_server(), max_body_size=BOUND) as (url, _), raw_client(url) as http:
        body = b'{"jsonrpc":"2.0","method":"initialize","params":{"pad":"' + b"x" * 9000
        body += b'"},"id":1' + after + b"}"

        async def pieces() -> AsyncIterator[bytes]:
            for i in range(0, len(body), 1000):
                yield body[i : i + 1000]

        response = await http.post(
            "/mcp", content=pieces() if chunked else body, headers=post_headers()
        )
        assert response.status_code == 413
        assert response.json()["id"] == expected


@pytest.mark.spec("BP-28")
async def test_an_oversize_legacy_post_gets_413_with_its_id() -> None:
    json_type = {"content-type": "application/json"}
    async with (
        running(make_server(), max_body_size=BOUND) as (url, _),
        raw_client(url) as http,
        legacy_sse_stream(url) as (_, endpoint, _),
    ):
        answer = await http.post(endpoint, content=init_body(), headers=json_type)
        assert answer.status_code == 202
        response = await http.post(endpoint, content=_big_call(11), headers=json_type)
        assert response.status_code == 413
        assert response.headers["content-type"] == "application/json"
        assert response.json()["id"] == 11
        assert response.json()["error"]["code"] == -32600
