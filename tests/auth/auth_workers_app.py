"""The server the authorized worker-process tests run (each worker imports it)."""

from __future__ import annotations

import os

from trio_mcp import Context, Server


def build() -> Server:
    server = Server("auth-workers")

    @server.tool()
    async def whoami(ctx: Context) -> str:
        """Who the token speaks for, and the worker process that verified it."""
        assert ctx.auth is not None
        return f"{ctx.auth.subject} {os.getpid()}"

    @server.tool(scopes=["files:write"])
    async def write() -> str:
        return "written"

    return server
