"""Interop over stdio with the official SDKs, both ways.

* the official Python SDK's client (``mcp``) against our example server;
* our client against a server written with the official Python SDK;
* ``trio-mcp trace`` against servers written with the Python and the
  TypeScript SDK (``@modelcontextprotocol/sdk``, installed from npm into a
  cache directory on first use; if that install fails the test fails).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import trio
from npm_cache import npm_install

from trio_mcp import open_stdio_client
from trio_mcp._cli._trace import run_trace
from trio_mcp.protocol import CancelOrigin, RequestState
from trio_mcp.transports import ExitStep, StdioProcess

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PAPER_TRAIL = str(ROOT / "examples" / "paper_trail.py")
#: Where the TypeScript SDK is installed (override with TRIO_MCP_NODE_CACHE).
NODE_CACHE = Path(
    os.environ.get("TRIO_MCP_NODE_CACHE", Path.home() / ".cache" / "trio_mcp" / "ts-sdk")
)


def ts_sdk_dir() -> Path:
    """The cache dir holding ``node_modules/@modelcontextprotocol/sdk``; installs it
    with npm (bounded) when missing, and fails loudly when that is impossible."""
    packages: dict[str, str | None] = {"@modelcontextprotocol/sdk": None, "zod": None}
    return npm_install(NODE_CACHE, packages, [HERE / "ts_server.mjs"])


@pytest.mark.spec("SI-01")
def test_official_python_client_against_our_server() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run(
        [sys.executable, str(HERE / "sdk_client.py"), PAPER_TRAIL],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert seen["server"] == "paper-trail"
    assert seen["protocol"] == "2025-11-25"
    assert seen["tools"] == ["order_status", "prepare_report", "return_order", "sleep"]
    assert seen["order"].startswith("PT-1042: shipped")
    assert seen["progress"] == [[1, 3, "step 1/3"], [2, 3, "step 2/3"], [3, 3, "step 3/3"]]
    assert seen["cancelled"] is True
    assert seen["ping"] is True
    # Its cancellation reached our handler, which stopped.
    assert "sleep: handler cancelled after" in proc.stderr


@pytest.mark.spec("SI-10")
async def test_our_client_against_an_official_python_server() -> None:
    progress: list[float] = []
    with trio.fail_after(60):
        async with open_stdio_client(
            sys.executable, [str(HERE / "sdk_server.py")], inherit_env=True
        ) as client:
            assert client.server_info.name == "sdk-server"
            tools = await client.list_tools()
            assert sorted(t.name for t in tools.tools) == ["add", "count"]
            result = await client.call_tool("add", {"a": 2, "b": 3})
            counted = await client.call_tool(
                "count", {"steps": 3}, on_progress=lambda p: progress.append(p.progress)
            )
            await client.ping()
            era = client.era
            transport = client.session.transport
        records = client.session.requests()
    assert result.content[0].text == "5"  # type: ignore[union-attr]
    assert counted.content[0].text == "counted 3"  # type: ignore[union-attr]
    assert progress == [1, 2, 3]
    # mcp 2.x serves both eras on stdio and answers the probe: 2026-07-28.
    # There the client's cached lists ride a listen stream, which ends (is
    # cancelled by us) when the client closes; every other request completed.
    assert era == "modern"
    listens = [r for r in records if r.method == "subscriptions/listen"]
    assert [(r.state, r.cancel_origin) for r in listens] == [
        (RequestState.CANCELLED, CancelOrigin.CALLER)
    ]
    assert all(r.state is RequestState.COMPLETED for r in records if r not in listens)
    assert isinstance(transport, StdioProcess)
    assert transport.exit_step is ExitStep.STDIN_CLOSED


async def test_trace_against_an_official_python_server() -> None:
    out = io.StringIO()
    with trio.fail_after(60):
        status = await run_trace(
            [sys.executable, str(HERE / "sdk_server.py")],
            out=out,
            as_json=True,
            inherit_env=True,
        )
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert status == 0
    methods = [line["method"] for line in lines if line["type"] == "request"]
    # The probe is answered (mcp 2.x serves 2026-07-28 on stdio): no
    # handshake, and the closing "ping" is a server/discover there (no ping).
    assert methods[:2] == ["server/discover", "tools/list"]
    assert "initialize" not in methods
    assert methods[-1] == "server/discover"
    assert lines[-1] == {"type": "exit", "step": "STDIN_CLOSED", "returncode": 0}


async def test_trace_against_a_typescript_sdk_server() -> None:
    node = shutil.which("node")
    assert node, "node is needed for the TypeScript SDK interop test"
    cache = await trio.to_thread.run_sync(ts_sdk_dir)
    out = io.StringIO()
    with trio.fail_after(60):
        status = await run_trace(
            [node, str(cache / "ts_server.mjs")], out=out, as_json=True, inherit_env=True
        )
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert status == 0, out.getvalue()
    frames = [line["message"] for line in lines if line["type"] == "frame"]
    # The v1 SDK refuses the server/discover probe (-32601) and the trace falls
    # back to initialize on the same process.
    probe, refusal, initialize = frames[:3]
    assert probe["method"] == "server/discover"
    assert refusal == {"jsonrpc": "2.0", "id": probe["id"], "error": refusal["error"]}
    assert refusal["error"]["code"] == -32601
    assert initialize["method"] == "initialize"
    init = next(f for f in frames if f.get("id") == initialize["id"] and "result" in f)
    assert init["result"]["serverInfo"]["name"] == "ts-server"
    tools = next(f for f in frames if "result" in f and "tools" in f["result"])
    assert [t["name"] for t in tools["result"]["tools"]] == ["add"]
    methods = [line["method"] for line in lines if line["type"] == "request"]
    assert "resources/list" in methods
    assert methods[-1] == "ping"
    assert lines[-1]["type"] == "exit"
    assert lines[-1]["step"] in ("STDIN_CLOSED", "SIGTERM")
