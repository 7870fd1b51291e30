"""A stdio server whose tools must not be called by ``trio-mcp check`` unless named.

Usage: ``python unsafe_server.py LOG``. ``wipe(path)`` is annotated
``destructiveHint: true``; ``touch_log(text)`` has no annotations. Each call
of either appends one line (the tool's name) to *LOG*, so a test counts them.
``clock()`` is annotated ``readOnlyHint: true`` and may be called.
"""

from __future__ import annotations

import sys

from trio_mcp import Server, run_stdio, types

LOG = sys.argv[1]
server = Server("unsafe")


def _called(name: str) -> None:
    with open(LOG, "a") as log:
        log.write(f"{name}\n")


@server.tool(annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=True))
async def wipe(path: str) -> str:
    """Delete everything under *path* (pretend; the call is logged)."""
    _called("wipe")
    return f"wiped {path}"


@server.tool()
async def touch_log(text: str) -> str:
    """Append *text* to a log (the call is logged)."""
    _called("touch_log")
    return f"logged {text}"


@server.tool(annotations=types.ToolAnnotations(read_only_hint=True))
async def clock() -> str:
    """The time of day (read-only)."""
    return "noon"


if __name__ == "__main__":
    run_stdio(server)
