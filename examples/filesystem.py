"""A read-only file server confined to the roots it is given, over stdio.

Tools: ``read_file(path)`` and ``list_directory(path)``. A path is resolved
(symlinks included) before it is checked, and it must lie inside one of the
roots *by path components* (``/srv/data2`` is not inside ``/srv/data``).
Refused with a clear tool error: paths outside the roots, ``..`` components,
symlinks that lead out, NUL bytes, and files larger than 1 MiB.

Run it: ``python examples/filesystem.py ROOT [ROOT...]``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import trio

import trio_mcp

MAX_FILE_SIZE = 1 << 20

server = trio_mcp.Server("filesystem", version="1.0", instructions="Read-only access to files.")
ROOTS: list[Path] = []


def confine(path: str) -> Path:
    """*path* resolved, if it lies inside a root; else a ToolError saying why."""
    if "\x00" in path:
        raise trio_mcp.ToolError("paths must not contain NUL bytes")
    if ".." in Path(path).parts:
        raise trio_mcp.ToolError(f"'..' is not allowed in paths: {path!r}")
    candidate = Path(path)
    if not candidate.is_absolute():
        if not ROOTS:
            raise trio_mcp.ToolError("the server has no roots")
        candidate = ROOTS[0] / candidate
    resolved = Path(os.path.realpath(candidate))
    for root in ROOTS:
        # Path components, not string prefixes, and after resolving symlinks.
        if resolved == root or root in resolved.parents:
            return resolved
    raise trio_mcp.ToolError(f"{path!r} is outside the allowed roots")


@server.tool()
async def read_file(path: str) -> str:
    """Read a UTF-8 text file inside the roots.

    Args:
        path: absolute, or relative to the first root.
    """
    target = confine(path)
    if not target.is_file():
        raise trio_mcp.ToolError(f"{path!r} is not a file")
    if target.stat().st_size > MAX_FILE_SIZE:
        raise trio_mcp.ToolError(f"{path!r} is larger than {MAX_FILE_SIZE} bytes")
    return await trio.Path(target).read_text(errors="replace")


@server.tool()
async def list_directory(path: str = ".") -> str:
    """List a directory inside the roots, one entry per line (directories end with /).

    Args:
        path: absolute, or relative to the first root.
    """
    target = confine(path)
    if not target.is_dir():
        raise trio_mcp.ToolError(f"{path!r} is not a directory")
    entries = sorted(target.iterdir())
    return "\n".join(e.name + ("/" if e.is_dir() else "") for e in entries)


if __name__ == "__main__":
    from trio_mcp import parse_http_option

    args, http = parse_http_option(sys.argv[1:])  # --http HOST:PORT: Streamable HTTP at /mcp
    ROOTS.extend(Path(os.path.realpath(arg)) for arg in args or ["."])
    server.run_http(*http) if http else server.run_stdio()
