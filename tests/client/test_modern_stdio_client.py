"""The era probe over stdio against real processes: a handshake-era server that
exits on ``server/discover`` gets a fresh process for the handshake, and the
era of a command is remembered (SI-14, VR-12).
"""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest
import trio
from helpers import Recorder, first_text

from trio_mcp import SessionClosed, open_stdio_client
from trio_mcp._client._connect import _ERA_CACHE, forget_eras
from trio_mcp.protocol import FrameDirection
from trio_mcp.transports import ProcessEvent

EXITS_ON_PROBE = str(Path(__file__).with_name("exits_on_probe.py"))
MODERN_ONLY = str(Path(__file__).with_name("modern_only.py"))
#: The spawned server imports this tree's trio_mcp.
ENV = {"PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
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


@pytest.mark.spec("VR-12")
async def test_a_command_remembered_as_handshake_era_that_turned_modern_is_corrected() -> None:
    forget_eras()
    key = (sys.executable, (MODERN_ONLY,), None)
    # Remembered from an earlier run, when the command was a handshake-era server.
    _ERA_CACHE[key] = "legacy"
    recorder = Recorder()
    with trio.fail_after(30):
        async with open_stdio_client(
            sys.executable, [MODERN_ONLY], env=ENV, stderr=None, observer=recorder
        ) as client:
            assert (client.era, client.protocol_version) == ("modern", "2026-07-28")
            assert first_text(await client.call_tool("hello")) == "hi"
    sent = [
        orjson.loads(d) for direction, d, _ in recorder.frames if direction is FrameDirection.OUT
    ]
    # No probe (the memory said handshake-era); initialize was refused with
    # -32022 naming 2026-07-28, so the client went modern and corrected the memory.
    assert [f.get("method") for f in sent[:2]] == ["initialize", "server/discover"]
    assert _ERA_CACHE[key] == "modern"
    forget_eras()


async def test_a_server_that_fails_on_start_is_not_started_again(tmp_path: Path) -> None:
    # It exits before reading the probe: starting it again for the handshake
    # would only fail the same way (and print its traceback twice).
    forget_eras()
    script = tmp_path / "fails_on_start.py"
    script.write_text(
        "import sys\nprint('ImportError: no module named nowhere', file=sys.stderr)\n"
        "raise SystemExit(2)\n"
    )
    spawned: list[int] = []

    def on_event(event: ProcessEvent) -> None:
        if event.kind == "spawned":
            spawned.append(event.pid)

    with trio.fail_after(30), pytest.raises(SessionClosed) as info:
        async with open_stdio_client(sys.executable, [str(script)], stderr=None, on_event=on_event):
            pass  # pragma: no cover - the connection never opens
    assert len(spawned) == 1
    assert str(info.value) == (
        "the server exited with status 2 before answering "
        "(its last stderr line: ImportError: no module named nowhere)"
    )
    forget_eras()
