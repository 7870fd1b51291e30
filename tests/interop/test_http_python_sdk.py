"""Interop over Streamable HTTP with the official Python SDK (mcp 2.x), both ways.

The SDK runs in a subprocess (it is asyncio-based); each test is bounded and
ends the process it started by pid.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import sys
import textwrap
from pathlib import Path

import pytest
import trio

from trio_mcp import Server, open_http_client, serve_http

SDK_CLIENT = textwrap.dedent(
    """
    import asyncio, json, sys
    from mcp import Client

    async def main(url):
        async with Client(url) as client:
            tools = await client.list_tools()
            result = await client.call_tool("add", {"a": 2, "b": 3})
            print(json.dumps({"tools": [t.name for t in tools.tools],
                              "structured": result.structured_content}), flush=True)

    asyncio.run(main(sys.argv[1]))
    """
)

SDK_SERVER = textwrap.dedent(
    """
    import socket, sys
    import uvicorn
    from mcp.server.mcpserver import MCPServer

    mcp = MCPServer("sdk")

    @mcp.tool()
    def add(a: int, b: int) -> int:
        return a + b

    app = mcp.streamable_http_app(json_response="json" in sys.argv)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # connections queue up until uvicorn accepts them
    print(f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    """
)


def make_server() -> Server:
    server = Server("trio-http", version="1.0")

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    return server


@pytest.mark.spec("HT-09")
@pytest.mark.parametrize("json_response", [False, True])
async def test_sdk_client_against_our_server(tmp_path: Path, json_response: bool) -> None:
    script = tmp_path / "sdk_client.py"
    script.write_text(SDK_CLIENT)
    async with trio.open_nursery() as nursery:
        url = await nursery.start(
            lambda task_status: serve_http(
                make_server(), task_status=task_status, json_response=json_response
            )
        )
        with trio.fail_after(60):
            done = await trio.run_process(
                [sys.executable, str(script), url + "/mcp"],
                capture_stdout=True,
                capture_stderr=True,
            )
        nursery.cancel_scope.cancel()
    out = json.loads(done.stdout.decode().strip().splitlines()[-1])
    assert out == {"tools": ["add"], "structured": {"result": 5}}


@pytest.mark.spec("HT-34")
@pytest.mark.parametrize("json_response", [False, True])
async def test_our_client_against_sdk_server(tmp_path: Path, json_response: bool) -> None:
    script = tmp_path / "sdk_server.py"
    script.write_text(SDK_SERVER)
    args = [sys.executable, str(script)] + (["json"] if json_response else [])
    async with trio.open_nursery() as nursery:
        process = await nursery.start(
            functools.partial(trio.run_process, args, stdout=-1, stderr=-1, check=False)
        )
        try:
            with trio.fail_after(60):
                line = b""
                while not line.endswith(b"\n"):
                    line += await process.stdout.receive_some(1)
                url = line.decode().strip()
                async with open_http_client(url) as client:
                    assert client.server_info.name == "sdk"
                    tools = await client.list_tools()
                    assert [t.name for t in tools.tools] == ["add"]
                    result = await client.call_tool("add", {"a": 2, "b": 3})
                    assert result.structured_content == {"result": 5}
        finally:
            os.kill(process.pid, signal.SIGTERM)
            with trio.move_on_after(10):
                await process.wait()
            if process.returncode is None:
                os.kill(process.pid, signal.SIGKILL)
                await process.wait()


@pytest.mark.spec("HM-04", "HM-15", "HM-19", "HM-32")
@pytest.mark.parametrize("json_response", [False, True])
async def test_our_client_goes_2026_07_28_with_an_sdk_server(
    tmp_path: Path, json_response: bool
) -> None:
    """mcp 2.x's Streamable HTTP app answers ``server/discover``: ``era="auto"``
    goes 2026-07-28, every request its own POST with its metadata headers,
    never a session id, GET or DELETE."""
    import httpx

    script = tmp_path / "sdk_server.py"
    script.write_text(SDK_SERVER)
    args = [sys.executable, str(script)] + (["json"] if json_response else [])
    requests: list[httpx.Request] = []

    async def seen(request: httpx.Request) -> None:
        requests.append(request)

    async with trio.open_nursery() as nursery:
        process = await nursery.start(
            functools.partial(trio.run_process, args, stdout=-1, stderr=-1, check=False)
        )
        try:
            with trio.fail_after(60):
                line = b""
                while not line.endswith(b"\n"):
                    line += await process.stdout.receive_some(1)
                url = line.decode().strip()
                async with (
                    httpx.AsyncClient(
                        timeout=httpx.Timeout(30.0, read=None), event_hooks={"request": [seen]}
                    ) as http,
                    open_http_client(url, http_client=http, remember_era=False) as client,
                ):
                    assert client.era == "modern"
                    assert client.protocol_version == "2026-07-28"
                    assert list(client.tools) == ["add"]
                    result = await client.call_tool("add", {"a": 2, "b": 3})
                    assert result.structured_content == {"result": 5}
        finally:
            os.kill(process.pid, signal.SIGTERM)
            with trio.move_on_after(10):
                await process.wait()
            if process.returncode is None:
                os.kill(process.pid, signal.SIGKILL)
                await process.wait()
    assert {request.method for request in requests} == {"POST"}
    assert all("mcp-session-id" not in request.headers for request in requests)
    assert requests[0].headers["mcp-method"] == "server/discover"
    call = next(r for r in requests if r.headers["mcp-method"] == "tools/call")
    assert call.headers["mcp-name"] == "add"
    assert call.headers["mcp-protocol-version"] == "2026-07-28"
