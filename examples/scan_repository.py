"""A long, cancellable tool that reports progress per file, over stdio.

``scan_repository(path, pattern)`` walks the files under *path* (one of the
roots given on the command line), counts the lines matching *pattern* and
reports progress after every file when the client sent a progress token. A
client's ``notifications/cancelled`` stops it between two files (it checks
for cancellation at every ``await``), and it logs to stderr where it stopped.

Run it: ``python examples/scan_repository.py ROOT [ROOT...]``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import trio

import trio_mcp

server = trio_mcp.Server("scan-repository", version="1.0")
ROOTS: list[Path] = []


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink())


@server.tool()
async def scan_repository(
    ctx: trio_mcp.Context, path: str, pattern: str, delay: float = 0.0
) -> str:
    """Count the lines containing *pattern* in every file under *path*.

    Args:
        path: a directory inside one of the server's roots.
        pattern: the text to look for.
        delay: seconds to pause after each file (to watch progress and cancellation).
    """
    root = Path(await trio.to_thread.run_sync(os.path.realpath, path))
    if not any(root == r or r in root.parents for r in ROOTS):
        raise trio_mcp.ToolError(f"{path} is outside the server's roots")
    files = await trio.to_thread.run_sync(_files, root)
    matches = 0
    done = 0
    try:
        for done, file in enumerate(files, start=1):
            text = await trio.Path(file).read_text(errors="replace")
            matches += sum(pattern in line for line in text.splitlines())
            await ctx.report_progress(done, total=len(files), message=str(file.relative_to(root)))
            if delay:
                await trio.sleep(delay)
    except trio.Cancelled:
        # stderr is the server's log (SI-03): say where the cancel stopped us.
        print(
            f"scan_repository: cancelled after {done} of {len(files)} files",
            file=sys.stderr,
            flush=True,
        )
        raise
    return f"{matches} matching lines in {len(files)} files"


if __name__ == "__main__":
    from trio_mcp import parse_http_option

    args, http = parse_http_option(sys.argv[1:])  # --http HOST:PORT: Streamable HTTP at /mcp
    ROOTS.extend(Path(os.path.realpath(arg)) for arg in args or ["."])
    server.run_http(*http) if http else server.run_stdio()
