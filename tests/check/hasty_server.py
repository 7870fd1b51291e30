"""A stdio server with one read-only tool, ``count(steps)``, that answers at
once whatever its arguments, without reporting progress. The checker takes it
for a progress tool by its name and guesses a long run; that run answers
before any progress, so the cancel check is SKIP and must say which option
would set another tool or other arguments."""

from __future__ import annotations

from trio_mcp import Server, run_stdio, types

server = Server("hasty")


@server.tool(annotations=types.ToolAnnotations(read_only_hint=True))
async def count(steps: int) -> str:
    """Count to *steps* (at once)."""
    return f"counted to {steps}"


if __name__ == "__main__":
    run_stdio(server)
