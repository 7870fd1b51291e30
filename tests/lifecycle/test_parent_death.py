"""A stdio server whose parent dies (SIGKILL, no chance to clean up) exits.

The host holds the write end of the server's stdin; when the host is killed the
kernel closes it, and the server reads end of input. Elsewhere servers that do
not treat end of input as the end (or that a call in flight keeps alive) are
orphaned. Here the parent is a real process holding that pipe, SIGKILLed while
a call is in flight; the server, our bundled example, exits in both eras.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from typing import Any

import orjson
import pytest
import trio
from lifecycle_helpers import modern_frame
from stdio_helpers import gone, wait_gone

#: Bound on anything here (real processes).
NOT_HUNG = 20
#: The parent: starts the server with a pipe of its own as its stdin (as a
#: host does), says the server's pid on stderr, and relays its input to it.
RELAY = """
import subprocess, sys
child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE)
sys.stderr.write(f"{child.pid}\\n")
sys.stderr.flush()
for line in iter(sys.stdin.buffer.readline, b""):
    child.stdin.write(line)
    child.stdin.flush()
"""
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


def opening(era: str) -> list[dict[str, Any]]:
    """The frames that open a connection in *era* and leave a long call in flight."""
    call = {"name": "slow", "arguments": {"steps": 100_000}}
    if era == "legacy":
        return [
            INITIALIZE,
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call},
            {"jsonrpc": "2.0", "id": 3, "method": "ping"},
        ]
    return [modern_frame("tools/call", call, 2), modern_frame("server/discover", None, 3)]


@pytest.mark.spec("SI-10", "SI-11")
@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_parent_sigkilled_stdio_server_exits(era: str) -> None:
    parent = await trio.lowlevel.open_process(
        [sys.executable, "-c", RELAY, sys.executable, "-m", "trio_mcp.examples.everything"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert parent.stdin is not None
    assert parent.stdout is not None
    assert parent.stderr is not None
    server = 0
    try:
        with trio.fail_after(NOT_HUNG):
            said = b""
            while b"\n" not in said:
                said += await parent.stderr.receive_some(64)
            server = int(said.split(b"\n")[0])
            frames = b"".join(orjson.dumps(f) + b"\n" for f in opening(era))
            await parent.stdin.send_all(frames)
            seen = b""
            # The answer to the last request: the call before it is in flight.
            while b'"id":3,' not in seen and b'"id":3}' not in seen:
                chunk = await parent.stdout.receive_some(1 << 16)
                assert chunk, seen
                seen += chunk
            assert b'"id":2,"result"' not in seen
            parent.send_signal(signal.SIGKILL)
            await parent.wait()
            await wait_gone(server)
        assert gone(server)
    finally:
        if server and not gone(server):
            with contextlib.suppress(ProcessLookupError):
                os.kill(server, signal.SIGKILL)
        if parent.returncode is None:
            parent.kill()
            await parent.wait()
        for pipe in (parent.stdin, parent.stdout, parent.stderr):
            await pipe.aclose()
