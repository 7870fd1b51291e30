"""The era probe over stdio against real processes: a handshake-era server that
exits on ``server/discover`` gets a fresh process for the handshake, and the
era of a command is remembered (SI-14, VR-12).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import trio

from trio_mcp import open_stdio_client
from trio_mcp._client._connect import forget_eras

EXITS_ON_PROBE = str(Path(__file__).with_name("exits_on_probe.py"))
PAPER_TRAIL = ["-m", "trio_mcp.examples.paper_trail"]


@pytest.mark.spec("SI-14", "VR-12")
async def test_a_server_that_exits_on_the_probe_is_started_again_and_remembered() -> None:
    forget_eras()
    lines: list[str] = []
    with trio.fail_after(30):
        async with open_stdio_client(
            sys.executable, [EXITS_ON_PROBE], stderr=lines.append
        ) as client:
            assert client.era == "legacy"
            assert list(client.tools) == ["t"]
            await client.ping()
        # Process 1 read the probe and exited; process 2 did the handshake.
        assert lines[0] == "got server/discover"
        assert lines[1:3] == ["got initialize", "got notifications/initialized"]
        lines.clear()
        # The command is remembered as handshake-era: no probe this time.
        async with open_stdio_client(
            sys.executable, [EXITS_ON_PROBE], stderr=lines.append
        ) as client:
            assert client.era == "legacy"
        assert lines[0] == "got initialize"
        assert "got server/discover" not in lines
    forget_eras()


async def test_a_dual_era_server_is_spoken_to_in_the_modern_era() -> None:
    forget_eras()
    with trio.fail_after(30):
        async with open_stdio_client(sys.executable, PAPER_TRAIL, stderr=None) as client:
            assert (client.era, client.protocol_version) == ("modern", "2026-07-28")
            assert client.tools
        async with open_stdio_client(
            sys.executable, PAPER_TRAIL, stderr=None, era="legacy"
        ) as client:
            assert (client.era, client.protocol_version) == ("legacy", "2025-11-25")
    forget_eras()
