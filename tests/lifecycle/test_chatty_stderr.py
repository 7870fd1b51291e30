"""A stdio server that writes tens of MiB to stderr while it answers never stalls a call.

A pipe holds 64 KiB: a client that does not read the server's stderr leaves
the server blocked in a write once it has said that much, and every call then
hangs (elsewhere: when stderr is piped for capture and nobody reads it). Our
client drains stderr whatever becomes of the lines: forwarded to our stderr,
captured by a callable, discarded, or written to a file (by a callable that
writes each line there). Each setting, in both eras.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio
from stdio_helpers import CHILD_ENV, PYTHON, reaped

from trio_mcp import open_stdio_client
from trio_mcp.transports import StdioProcess

MIB = 1 << 20
#: What the server writes to stderr during one call, and before it serves.
FLOOD_MIB = 24
#: Bound on the whole exchange (real processes; a stall would never end).
NOT_HUNG = 60

SERVER = """
import sys
import trio_mcp

LINE = b"e" * 1023 + b"\\n"

def flood(mib):
    out = sys.stderr.buffer
    for _ in range(mib * 1024):
        out.write(LINE)
    out.flush()
    return mib

flood(1)  # before it serves, too
server = trio_mcp.Server("chatty")

@server.tool()
async def chatty(mib: int, text: str) -> str:
    return f"{text} after {flood(mib)} MiB"

server.run_stdio()
"""


def sink(setting: str, tmp_path: Path) -> tuple[Any, Callable[[], int]]:
    """The ``stderr`` argument of *setting*, and how many bytes it let through
    (-1 where nothing keeps them)."""
    if setting == "forward":
        return "forward", lambda: -1
    if setting == "discard":
        return None, lambda: -1
    if setting == "capture":
        captured: list[str] = []
        return captured.append, lambda: sum(len(line) + 1 for line in captured)
    log = tmp_path / "server-stderr.log"
    handle = log.open("w")

    def to_file(line: str) -> None:
        handle.write(line + "\n")

    def file_size() -> int:
        handle.close()
        return log.stat().st_size

    return to_file, file_size


@pytest.mark.spec("P-14", "SI-04")
@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize("setting", ["forward", "capture", "discard", "file"])
async def test_chatty_stderr_never_stalls_a_call(tmp_path: Path, setting: str, era: str) -> None:
    server = tmp_path / "chatty.py"
    server.write_text(textwrap.dedent(SERVER))
    stderr, through = sink(setting, tmp_path)
    with trio.fail_after(NOT_HUNG):
        async with open_stdio_client(
            PYTHON, [str(server)], env=CHILD_ENV, stderr=stderr, era=era
        ) as client:
            assert client.era == era
            first = await client.call_tool("chatty", {"mib": FLOOD_MIB, "text": "one"})
            second = await client.call_tool("chatty", {"mib": 1, "text": "two"})
            transport = client.session.transport
            assert isinstance(transport, StdioProcess)
    assert first.content[0].text == f"one after {FLOOD_MIB} MiB"  # type: ignore[union-attr]
    assert second.content[0].text == "two after 1 MiB"  # type: ignore[union-attr]
    # Every line reached the sink (capture and file): the whole flood went through.
    total = (1 + FLOOD_MIB + 1) * MIB
    assert through() in (-1, total)
    assert reaped(transport.pid)
