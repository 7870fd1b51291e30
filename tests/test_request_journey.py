"""The architecture page's walk of one ``tools/call`` is held to the code.

``docs/explanation/architecture.md`` walks a handshake-era ``tools/call`` over
the in-memory pair module by module. Here the same call runs under
``sys.setprofile`` (after a warm-up call, so that first-use imports and caches
do not count), and every module of the package it enters must be named in that
walk: a split or a move that changes the journey fails here until the page
follows.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import trio_mcp
from trio_mcp.testing import open_memory_client

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "explanation" / "architecture.md"
PACKAGE = ROOT / "src" / "trio_mcp"


def walk_modules(era_heading: str) -> set[str]:
    """The ``.py`` paths named in one era's section of the walk."""
    text = PAGE.read_text()
    section = text.split(era_heading, 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
    named: set[str] = set()
    for cell in re.findall(r"`([^`]+\.py)`", section):
        named.add(cell)
    return named


def resolve(named: set[str]) -> set[str]:
    """Short names (``_modern.py`` after ``transports/_http/client/...``) are
    left as they are; the full ones must be files of the package."""
    return {name for name in named if not name.startswith("tests/")}


async def traced_call(era: str) -> list[str]:
    server = trio_mcp.Server("journey", version="1")

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    entered: list[str] = []
    prefix = str(PACKAGE) + "/"

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        filename = frame.f_code.co_filename
        if event == "call" and filename.startswith(prefix):
            module = filename[len(prefix) :]
            if module not in entered:
                entered.append(module)

    async with open_memory_client(server, era=era) as client:
        await client.call_tool("add", {"a": 1, "b": 2})
        sys.setprofile(profile)
        try:
            await client.call_tool("add", {"a": 2, "b": 3})
        finally:
            sys.setprofile(None)
    return entered


def test_every_module_the_walk_names_exists() -> None:
    named = resolve(walk_modules("### Handshake era, over the in-memory pair"))
    assert named
    assert sorted(name for name in named if not (PACKAGE / name).is_file()) == []


async def test_the_handshake_era_walk_names_every_module_a_call_enters() -> None:
    named = walk_modules("### Handshake era, over the in-memory pair")
    entered = await traced_call("legacy")
    assert "_server/_tools.py" in entered, entered
    assert [module for module in entered if module not in named] == []
