"""Interop over Streamable HTTP: the official TypeScript SDK's client against our server.

``@modelcontextprotocol/sdk`` is installed from npm into a cache directory on
first use (see ``test_stdio_interop.ts_sdk_dir``; the test fails if that is
impossible). The client runs under node as a subprocess, bounded; the server
is ``serve_http`` on 127.0.0.1, port 0.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import trio
from test_stdio_interop import ts_sdk_dir

import trio_mcp
from trio_mcp import Server, http_app, serve_http

HERE = Path(__file__).resolve().parent


def make_server() -> Server:
    server = Server("trio-http", version="1.0")

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    async def count(ctx: trio_mcp.Context, steps: int = 3) -> str:
        """Count, reporting progress after each step."""
        for done in range(1, steps + 1):
            await ctx.report_progress(done, total=steps, message=f"step {done}/{steps}")
        return f"counted {steps}"

    return server


@pytest.mark.spec("HT-09")
@pytest.mark.spec("HT-34")
@pytest.mark.parametrize("json_response", [False, True])
async def test_typescript_sdk_client_against_our_server(json_response: bool) -> None:
    node = shutil.which("node")
    assert node, "node is needed for the TypeScript SDK interop test"
    cache = await trio.to_thread.run_sync(ts_sdk_dir)
    # node resolves the SDK from the script's directory: run it from the cache.
    shutil.copy(HERE / "ts_http_client.mjs", cache / "ts_http_client.mjs")
    app = http_app(make_server(), json_response=json_response)
    sessions_seen: list[int] = []
    async with trio.open_nursery() as nursery:
        url = await nursery.start(lambda task_status: serve_http(app, task_status=task_status))
        with trio.fail_after(60):
            done = await trio.run_process(
                [node, str(cache / "ts_http_client.mjs"), url + "/mcp"],
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
        sessions_seen.append(app.session_count)
        nursery.cancel_scope.cancel()
    assert done.returncode == 0, done.stderr.decode()
    seen = json.loads(done.stdout.decode().strip().splitlines()[-1])
    assert seen["server"] == "trio-http"
    assert seen["protocol"] == "2025-11-25"
    assert seen["hadSession"] is True
    assert seen["tools"] == ["add", "count"]
    assert seen["added"] == {"result": 5}
    assert seen["counted"] == "counted 3"
    # Progress reaches the SDK's onprogress on the request's SSE stream; a
    # JSON response carries only the answer (no related messages).
    expected = [[1, 3, "step 1/3"], [2, 3, "step 2/3"], [3, 3, "step 3/3"]]
    assert seen["progress"] == ([] if json_response else expected)
    assert seen["invalidIsError"] is True
    # Its DELETE (terminateSession) ended the session on our side.
    assert sessions_seen == [0]
