"""A stdio server written with the official Python SDK, for our client's interop test.

It pages ``tools/list`` (two tools per page; the SDK's high-level server does not
page by itself), reports progress, returns structured output, and calls back
into the client: ``sampling/createMessage``, ``elicitation/create`` and
``roots/list``.
"""

from __future__ import annotations

from typing import Any

from mcp import types
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel


class PagingServer(MCPServer):
    async def _handle_list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        tools = await self.list_tools()
        start = int(params.cursor) if params is not None and params.cursor else 0
        page = tools[start : start + 2]
        more = start + 2 < len(tools)
        return types.ListToolsResult(tools=page, next_cursor=str(start + 2) if more else None)


server = PagingServer("sdk-client-interop")


class Sum(BaseModel):
    total: int


@server.tool()
def add(a: int, b: int) -> Sum:
    """Add two integers (structured output)."""
    return Sum(total=a + b)


@server.tool()
async def count(steps: int, ctx: Context) -> str:
    """Count to *steps*, reporting progress."""
    for done in range(1, steps + 1):
        await ctx.report_progress(done, steps, f"step {done}")
    return f"counted {steps}"


@server.tool()
async def summarize(text: str, ctx: Context) -> str:
    """Ask the client's model for a summary (sampling)."""
    result = await ctx.session.create_message(
        messages=[
            types.SamplingMessage(role="user", content=types.TextContent(type="text", text=text))
        ],
        max_tokens=50,
    )
    assert isinstance(result.content, types.TextContent)
    return f"model {result.model} said: {result.content.text}"


class Person(BaseModel):
    name: str
    age: int = 30


@server.tool()
async def who(ctx: Context) -> str:
    """Ask the user who they are (form elicitation)."""
    answer = await ctx.elicit("Who are you?", Person)
    if answer.action != "accept":
        return f"no answer: {answer.action}"
    return f"hello {answer.data.name}, {answer.data.age}"


@server.tool()
async def roots(ctx: Context) -> str:
    """List the client's roots."""
    listed = await ctx.session.list_roots()
    return ",".join(str(root.uri) for root in listed.roots)


@server.tool()
def echo(text: str) -> str:
    """Echo."""
    return text


@server.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Say hello to {name}."


@server.resource("memo://note")
def note() -> str:
    """A note."""
    return "remember the milk"


if __name__ == "__main__":
    server.run("stdio")
