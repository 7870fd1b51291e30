"""A server written with the official Python SDK (run by the interop and checker tests).

Usage: ``python sdk_server.py [http] [sleep]``: stdio, or with ``http`` the
SDK's Streamable HTTP application on uvicorn, on 127.0.0.1 and a free port,
whose URL is the first line on stdout; ``sleep`` adds a ``sleep(seconds)`` tool
(for the checker's tests, which need a slow call).
"""

from __future__ import annotations

import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("sdk-server")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def count(steps: int, ctx: Context) -> str:
    """Count to *steps*, reporting progress."""
    for done in range(1, steps + 1):
        await ctx.report_progress(done, steps, f"step {done}")
    return f"counted {steps}"


async def sleep(seconds: float) -> str:
    """Wait for *seconds* (until the call is cancelled)."""
    await anyio.sleep(seconds)
    return f"slept {seconds}s"


def serve_http() -> None:
    import socket

    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # connections queue up until uvicorn accepts them
    print(f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    app = server.streamable_http_app()
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    if "sleep" in sys.argv[1:]:
        server.tool()(sleep)
    if "http" in sys.argv[1:]:
        serve_http()
    else:
        server.run("stdio")
