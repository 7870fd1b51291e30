"""examples/extension.py, black-box over stdio: raw JSON-RPC frames to a real
subprocess show ``com.example/shout`` in ``capabilities.extensions`` of the
``initialize`` result and of ``server/discover``, and a ``com.example/shout``
request answered in each era (with the custom notification before it and the
middleware's stamp on it); then the example's own host runs."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import trio

from trio_mcp.transports import StdioProcess, open_stdio_process

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = str(ROOT / "examples" / "extension.py")
CHILD_ENV = {"PYTHONPATH": str(ROOT / "src")}
NOT_HUNG = 30
MODERN = "2026-07-28"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
}


async def send(process: StdioProcess, message: dict[str, Any]) -> None:
    await process.send(json.dumps(message).encode())


async def answer_to(process: StdioProcess, request_id: int) -> tuple[dict[str, Any], list[Any]]:
    """The response to *request_id*, and the notifications read before it."""
    notes: list[Any] = []
    while True:
        message = json.loads(await process.receive())
        if message.get("id") == request_id and "method" not in message:
            return message, notes
        notes.append(message)


async def test_handshake_era_raw_frames() -> None:
    with trio.fail_after(NOT_HUNG):
        async with open_stdio_process(sys.executable, [EXAMPLE], env=CHILD_ENV) as process:
            await send(
                process,
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "raw", "version": "0"},
                    },
                },
            )
            init, _ = await answer_to(process, 1)
            await send(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
            await send(
                process,
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "com.example/shout",
                    "params": {"text": "hello"},
                },
            )
            shout, notes = await answer_to(process, 2)
    assert init["result"]["capabilities"]["extensions"] == {"com.example/shout": {"loud": True}}
    assert shout["result"]["text"] == "HELLO"
    assert shout["result"]["_meta"]["com.example/seen-by"] == "examples/extension.py"
    assert notes == [
        {"jsonrpc": "2.0", "method": "com.example/shouted", "params": {"text": "HELLO"}}
    ]


async def test_2026_07_28_raw_frames() -> None:
    with trio.fail_after(NOT_HUNG):
        async with open_stdio_process(sys.executable, [EXAMPLE], env=CHILD_ENV) as process:
            await send(
                process,
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "server/discover",
                    "params": {"_meta": MODERN_META},
                },
            )
            discover, _ = await answer_to(process, 1)
            await send(
                process,
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "com.example/shout",
                    "params": {"text": "hello", "_meta": MODERN_META},
                },
            )
            shout, notes = await answer_to(process, 2)
            await send(
                process,
                {
                    "jsonrpc": "2.0",
                    "id": 3,
                    "method": "com.example/nothing",
                    "params": {"_meta": MODERN_META},
                },
            )
            unknown, _ = await answer_to(process, 3)
    assert discover["result"]["capabilities"]["extensions"] == {"com.example/shout": {"loud": True}}
    assert shout["result"]["text"] == "HELLO"
    assert shout["result"]["resultType"] == "complete"
    assert shout["result"]["_meta"]["com.example/seen-by"] == "examples/extension.py"
    assert [note["method"] for note in notes] == ["com.example/shouted"]
    assert unknown["error"]["code"] == -32601


def test_the_example_host_shouts_in_both_eras() -> None:
    done = subprocess.run(
        [sys.executable, EXAMPLE, "--host"],
        capture_output=True,
        text=True,
        timeout=NOT_HUNG,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
        check=True,
    )
    lines = done.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == [MODERN, "2025-11-25"]
    for line in lines:
        assert "declared {'loud': True}" in line
        assert "answered 'HELLO'" in line
        assert "com.example/shouted: ['HELLO']" in line


async def test_trace_names_the_extensions_in_both_eras() -> None:
    from trio_mcp._cli._trace import run_trace

    for era in ("modern", "legacy"):
        out = io.StringIO()
        with trio.fail_after(NOT_HUNG):
            status = await run_trace([sys.executable, EXAMPLE], out=out, inherit_env=True, era=era)
        text = out.getvalue()
        assert status == 0, text
        assert '== extension com.example/shout: {"loud": true}' in text
